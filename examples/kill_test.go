package examples_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/dryrun"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/spec"
	"gopkg.in/yaml.v3"
)

// The kill tests drive the real binary against a scripted server that
// answers every request of an example with the stand-in the dry run gave
// it (so any example runs, deterministically), kill it with SIGKILL at
// random instants — from its first milliseconds on — and resume it until it
// finishes. Each chain's result must equal an uninterrupted run's, and no
// call whose reply was journaled may be asked again.

// killChains is how many kill-and-resume chains each case runs:
// RUNNER_KILL_CHAINS, default 1 (the package must finish within go test's
// 10 minutes on a loaded CI machine); raise it to hunt rare races.
func killChains(t *testing.T) int {
	if v := os.Getenv("RUNNER_KILL_CHAINS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("RUNNER_KILL_CHAINS=%q: give a count of at least 1", v)
		}
		return n
	}
	return 1
}

// killStats add up the chains of the package's kill tests, for the log.
var killStats struct {
	sync.Mutex
	chains, identical, kills, early, repeated, extra int
}

// standIns answer requests by their text with the dry run's stand-ins.
type standIns struct {
	mu    sync.Mutex
	reply map[string]string // request text -> reply
	asks  []request
}

type request struct {
	text string
	at   time.Time
}

// add dry-runs plan with inputs and sets and learns its requests.
func (s *standIns) add(t *testing.T, plan *spec.Plan, inputs, sets []string) {
	t.Helper()
	var answered []calls.Answered
	_, err := dryrun.Run(plan, dryrun.Options{
		Given:            launch.Given{Inputs: inputs, Sets: sets},
		ActualSizes:      true,
		StandInsByPrompt: true,
		Answered:         func(a []calls.Answered) { answered = a },
	})
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reply == nil {
		s.reply = map[string]string{}
	}
	for _, a := range answered {
		text := requestText(a.Messages)
		if prev, ok := s.reply[text]; ok && prev != a.Reply {
			t.Fatalf("two calls ask the same (%s) and get different stand-ins; the server cannot tell them apart", a.Key)
		}
		s.reply[text] = a.Reply
	}
}

func (s *standIns) handle(r llmtest.Request) llmtest.Reply {
	var ms []struct{ Role, Content string }
	for _, m := range r.Messages {
		ms = append(ms, struct{ Role, Content string }{m.Role, m.Content})
	}
	text := requestTextOf(ms)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asks = append(s.asks, request{text: text, at: time.Now()})
	rep, ok := s.reply[text]
	if !ok {
		return llmtest.Reply{Status: 400, ErrorMessage: "the dry run made no such request"}
	}
	// A little latency spreads a run over time, so that kills land in the
	// middle of calls as well as between them.
	return llmtest.Reply{Content: rep, Delay: 3 * time.Millisecond}
}

func (s *standIns) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.asks)
}

// binary runs the runner binary with args, killing it after killAfter
// (never when negative). It returns the exit code and whether it was
// killed.
func binary(t *testing.T, bin string, env []string, killAfter time.Duration, args ...string) (int, bool, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var killed bool
	var timer *time.Timer
	var mu sync.Mutex
	if killAfter >= 0 {
		timer = time.AfterFunc(killAfter, func() {
			mu.Lock()
			defer mu.Unlock()
			if cmd.Process.Signal(syscall.SIGKILL) == nil {
				killed = true
			}
		})
	}
	err := cmd.Wait()
	if timer != nil {
		timer.Stop()
	}
	mu.Lock()
	defer mu.Unlock()
	var xe *exec.ExitError
	code := 0
	if errors.As(err, &xe) {
		code = xe.ExitCode()
		if ws, ok := xe.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			killed = true
		}
	} else if err != nil {
		t.Fatal(err)
	}
	// The process may have finished just as the kill came.
	return code, killed && code != 0, out.String()
}

// ranToEnd reports whether an exit code is that of a run (or sweep) that
// ran to its end: the stand-in replies give some examples no verdict or no
// answer, and an inconclusive run has finished as surely as a completed one.
func ranToEnd(code int) bool { return code == 0 || code == exitcode.Inconclusive }

// killEnv is the binary's environment: the scripted server, no cache.
func killEnv(srv *llmtest.Server, home string) []string {
	return []string{"OPENAI_BASE_URL=" + srv.URL, "OPENAI_API_KEY=sk-kill-test", "HOME=" + home, "PATH=" + os.Getenv("PATH"), "RUNNER_CACHE_DIR=" + filepath.Join(home, "cache")}
}

// visibleDirs are the directories in dir not hidden (run or sweep dirs).
func visibleDirs(t *testing.T, dir string) (visible, hidden []string) {
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if strings.HasPrefix(e.Name(), ".") {
			hidden = append(hidden, filepath.Join(dir, e.Name()))
		} else {
			visible = append(visible, filepath.Join(dir, e.Name()))
		}
	}
	return visible, hidden
}

// chain starts a run (args after "run") and kills it at random instants,
// resuming it until it finishes; it returns the run (or sweep) directory,
// the kills of the run and the kills of starts that left no directory
// yet. A start killed before its directory appeared leaves at most a
// hidden folder, which resume must refuse with a clear reason; the run is
// then started again. The first start may be killed in its first
// milliseconds; later starts are killed at an instant searched for
// between the latest that left no directory and the earliest the run had
// already finished by, so that short runs get killed mid-way too.
func chain(t *testing.T, bin string, env []string, runs string, rng *rand.Rand, span time.Duration, runArgs []string) (dir string, kills, early int) {
	t.Helper()
	const maxKills = 3
	lo, hi := time.Duration(0), span
	between := func() time.Duration {
		if hi <= lo {
			// The process timing moved: widen the window again.
			lo, hi = lo/2, lo+lo/2+time.Millisecond
		}
		return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
	}
	var trace []string
	var lastKilled, prevKilled bool // whether the attempt before this one was killed
	for attempt := 0; attempt < 200; attempt++ {
		var code int
		var killed bool
		var out string
		var after time.Duration
		if dir == "" {
			after = between()
			if attempt == 0 && rng.IntN(4) == 0 {
				after = time.Duration(rng.IntN(30)) * time.Millisecond // the first instants
			}
			code, killed, out = binary(t, bin, env, after, append(append([]string{"run"}, runArgs...), "--runs-dir", runs)...)
			visible, hidden := visibleDirs(t, runs)
			if len(visible) == 0 {
				if !killed {
					t.Fatalf("the run left no directory (exit %d):\n%s", code, out)
				}
				early++
				lo = max(lo, after)
				for _, h := range hidden {
					c, _, o := binary(t, bin, env, -1, "resume", h)
					if c != 2 || !strings.Contains(o, "killed while its directory was being set up") {
						t.Errorf("resume of a half-made directory %s: exit %d:\n%s", h, c, o)
					}
					os.RemoveAll(h)
				}
				trace = append(trace, fmt.Sprintf("start killed at %v: no directory", after))
				continue
			}
			if len(visible) != 1 {
				t.Fatalf("%d directories in %s", len(visible), runs)
			}
			dir = visible[0]
		} else {
			after = time.Duration(rng.Int64N(int64(span) + 1))
			if kills >= maxKills {
				after = -1
			}
			code, killed, out = binary(t, bin, env, after, "resume", dir, "-q")
		}
		if killed {
			kills++
		}
		lastKilled, prevKilled = prevKilled, killed
		trace = append(trace, fmt.Sprintf("exit %d, killed %v at %v", code, killed, after))
		switch {
		case killed:
			continue
		case ranToEnd(code) && kills == 0:
			// Finished before the kill: start again, killing sooner.
			hi = min(hi, after)
			os.RemoveAll(dir)
			dir = ""
			continue
		case ranToEnd(code):
			return dir, kills, early
		case strings.Contains(out, "already completed") && lastKilled:
			// The kill came after the run had finished and written its
			// records, as it was exiting: nothing was left to do.
			return dir, kills, early
		case strings.Contains(out, "already completed"):
			t.Fatalf("resume says the run already completed but it did not finish before:\n%s", out)
		default:
			t.Fatalf("exit %d:\n%s", code, out)
		}
	}
	t.Fatalf("the chain did not finish:\n%s", strings.Join(trace, "\n"))
	return "", kills, early
}

// comparable is a result.json without what differs between equal runs
// (ids, times, latencies, warnings about the resume itself).
func comparable(t *testing.T, dir string) map[string]any {
	t.Helper()
	var res map[string]any
	data, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatalf("%s has no result.json: %v", dir, err)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"run_id", "duration_ms", "warnings"} {
		delete(res, k)
	}
	dropLatency(res)
	return res
}

func dropLatency(v any) {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "latency_ms")
		for _, y := range x {
			dropLatency(y)
		}
	case []any:
		for _, y := range x {
			dropLatency(y)
		}
	}
}

// repeatedCalls counts the calls a run's journal shows were sent again
// after their reply was journaled: a model_request for a key that already
// has a model_response from the endpoint.
func repeatedCalls(t *testing.T, dir string) int {
	t.Helper()
	evs, err := journal.Read(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	answered := map[string]bool{}
	n := 0
	for _, ev := range evs {
		switch ev.Type {
		case "model_request":
			if answered[ev.Key] {
				t.Errorf("%s: call %s was asked again after its reply was journaled", filepath.Base(dir), ev.Key)
				n++
			}
		case "model_response":
			var src struct {
				Source string `json:"source"`
			}
			_ = json.Unmarshal(ev.Data, &src)
			if src.Source == "" {
				answered[ev.Key] = true
			}
		}
	}
	return n
}

// answersFor runs the spec without answers to learn its questions and
// answers each as the dry run does, again until no question is left (a
// clarify node asks follow-ups once it has answers), and returns the
// answers file.
func answersFor(t *testing.T, bin string, env []string, args []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "answers.yaml")
	answers := map[string]string{}
	for round := 0; round < 6; round++ {
		runs := t.TempDir()
		runArgs := append(append([]string{"run"}, args...), "--runs-dir", runs, "-q")
		if len(answers) > 0 {
			runArgs = append(runArgs, "--answers", path)
		}
		code, _, out := binary(t, bin, env, -1, runArgs...)
		switch code {
		case 0, exitcode.Inconclusive:
			if len(answers) == 0 {
				return ""
			}
			return path
		case 5:
		default:
			t.Fatalf("exit %d:\n%s", code, out)
		}
		visible, _ := visibleDirs(t, runs)
		data, err := os.ReadFile(filepath.Join(visible[0], "questions.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var qs map[string]any
		if err := yaml.Unmarshal(data, &qs); err != nil {
			t.Fatal(err)
		}
		for id := range qs {
			answers[id] = "<answer to " + id + ">"
		}
		data, _ = yaml.Marshal(answers)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("the run still asks questions after 6 rounds of answers")
	return ""
}

// TestKillAndResumeEveryExample kills every example at random instants and
// resumes it: the result equals an uninterrupted run's and no journaled
// call is asked again.
func TestKillAndResumeEveryExample(t *testing.T) {
	bin := runnerBinary(t)
	n := killChains(t)
	for _, name := range examples(t) {
		t.Run(name, func(t *testing.T) {
			plan := load(t, name)
			r, _ := readReadme(t, name)
			var inputs, args []string
			for k, v := range r.inputs {
				inputs = append(inputs, k+"="+v)
			}
			sort.Strings(inputs)
			args = append(args, filepath.Join(name, "spec.yaml"), "--no-cache", "-q")
			for _, in := range inputs {
				args = append(args, "-i", in)
			}
			s := &standIns{}
			s.add(t, plan, inputs, nil)
			srv := llmtest.New(t, s.handle)
			home := t.TempDir()
			env := killEnv(srv, home)
			if answers := answersFor(t, bin, env, args); answers != "" {
				args = append(args, "--answers", answers)
			}
			killChainCases(t, bin, env, s, args, n, func(dir string) []string { return []string{dir} })
		})
	}
	killStats.Lock()
	t.Logf("kill chains so far: %d chains, %d identical to an uninterrupted run, %d kills (and %d of starts before their directory), %d journaled calls asked again, %d requests more than uninterrupted runs (runs that finished before their kill, replies lost to a kill)",
		killStats.chains, killStats.identical, killStats.kills, killStats.early, killStats.repeated, killStats.extra)
	killStats.Unlock()
}

// killChainCases runs the reference and n chains of one case; runsOf lists
// the run directories of a finished run or sweep, in a stable order.
func killChainCases(t *testing.T, bin string, env []string, s *standIns, args []string, n int, runsOf func(dir string) []string) {
	t.Helper()
	refRuns := t.TempDir()
	before := s.count()
	start := time.Now()
	code, _, out := binary(t, bin, env, -1, append(append([]string{"run"}, args...), "--runs-dir", refRuns)...)
	if !ranToEnd(code) {
		t.Fatalf("uninterrupted run: exit %d:\n%s", code, out)
	}
	span := time.Since(start)
	refAsks := s.count() - before
	visible, _ := visibleDirs(t, refRuns)
	ref := runsOf(visible[0])
	for c := 0; c < n; c++ {
		rng := rand.New(rand.NewPCG(uint64(c)+1, uint64(time.Now().UnixNano())))
		runs := t.TempDir()
		before := s.count()
		dir, kills, early := chain(t, bin, env, runs, rng, span, args)
		asks := s.count() - before
		got := runsOf(dir)
		identical := len(got) == len(ref)
		repeated := 0
		for i := range got {
			repeated += repeatedCalls(t, got[i])
			if i < len(ref) && !reflect.DeepEqual(comparable(t, got[i]), comparable(t, ref[i])) {
				identical = false
				diffResults(t, comparable(t, ref[i]), comparable(t, got[i]))
			}
		}
		if !identical {
			t.Errorf("chain %d (%d kills): the result differs from the uninterrupted run's", c, kills)
		}
		killStats.Lock()
		killStats.chains++
		killStats.kills += kills
		killStats.early += early
		killStats.repeated += repeated
		killStats.extra += asks - refAsks
		if identical {
			killStats.identical++
		}
		killStats.Unlock()
		t.Logf("chain %d: %d kills (and %d of starts before their directory), %d requests (uninterrupted: %d), %d journaled calls asked again", c, kills, early, asks, refAsks, repeated)
	}
}

// diffResults reports the first fields that differ.
func diffResults(t *testing.T, want, got map[string]any) {
	t.Helper()
	for k, w := range want {
		if !reflect.DeepEqual(w, got[k]) {
			wj, _ := json.Marshal(w)
			gj, _ := json.Marshal(got[k])
			t.Errorf("field %s differs:\nuninterrupted: %s\nresumed:       %s", k, clip(string(wj)), clip(string(gj)))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("field %s only in the resumed result", k)
		}
	}
}

// sweepRuns lists a sweep's run directories by their index in the sweep,
// once `runner compare` has shown the sweep.
func sweepRuns(t *testing.T, bin string, env []string) func(dir string) []string {
	return func(dir string) []string {
		if code, _, out := binary(t, bin, env, -1, "compare", dir); code != 0 {
			t.Errorf("runner compare %s: exit %d:\n%s", dir, code, out)
		}
		var sum struct {
			Runs []struct {
				Index  int    `json:"index"`
				Dir    string `json:"dir"`
				Status string `json:"status"`
			} `json:"runs"`
		}
		data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
		if err != nil {
			t.Fatalf("the sweep has no summary.json: %v", err)
		}
		if err := json.Unmarshal(data, &sum); err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(sum.Runs))
		for i, r := range sum.Runs {
			if r.Status != "completed" {
				t.Errorf("run %d of the sweep is %s", r.Index, r.Status)
			}
			out[i] = r.Dir
		}
		return out
	}
}

// TestKillAndResumeSweeps kills a --dataset run and a --matrix sweep at
// random instants and resumes the sweep directory until it finishes: every
// run's result (with its expected value and score) equals an uninterrupted
// sweep's, the summary is written, and no journaled call is asked again.
func TestKillAndResumeSweeps(t *testing.T) {
	bin := runnerBinary(t)
	n := killChains(t)
	plan := load(t, "reasoning-debate")
	specPath := filepath.Join("reasoning-debate", "spec.yaml")
	t.Run("dataset", func(t *testing.T) {
		s := &standIns{}
		data, err := os.ReadFile(filepath.Join("reasoning-debate", "dataset.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")[:4]
		for _, l := range lines {
			var item struct {
				Question string `json:"question"`
			}
			if err := json.Unmarshal([]byte(l), &item); err != nil {
				t.Fatal(err)
			}
			s.add(t, plan, []string{"question=" + item.Question}, nil)
		}
		dataset := filepath.Join(t.TempDir(), "dataset.jsonl")
		if err := os.WriteFile(dataset, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		srv := llmtest.New(t, s.handle)
		env := killEnv(srv, t.TempDir())
		args := []string{specPath, "--dataset", dataset, "--no-cache", "-q", "--parallel", "2"}
		runsOf := sweepRuns(t, bin, env)
		killChainCases(t, bin, env, s, args, n, func(dir string) []string {
			runs := runsOf(dir)
			for _, run := range runs {
				if res := comparable(t, run); res["expected"] == nil || res["score"] == nil {
					t.Errorf("%s lost its dataset item's expected value or score", filepath.Base(run))
				}
			}
			return runs
		})
	})
	t.Run("matrix", func(t *testing.T) {
		s := &standIns{}
		questions := []string{"What is 12+7*3?", "What is 9*9-8?"}
		for _, q := range questions {
			for _, rounds := range []string{"1", "2"} {
				s.add(t, plan, []string{"question=" + q}, []string{"rounds=" + rounds})
			}
		}
		srv := llmtest.New(t, s.handle)
		env := killEnv(srv, t.TempDir())
		args := []string{specPath, "--matrix", "question=" + strings.Join(questions, ","), "--matrix", "rounds=1,2", "--no-cache", "-q", "--parallel", "2"}
		killChainCases(t, bin, env, s, args, n, sweepRuns(t, bin, env))
	})
	killStats.Lock()
	t.Logf("kill chains so far: %d chains, %d identical to an uninterrupted run, %d kills (and %d of starts before their directory), %d journaled calls asked again, %d requests more than uninterrupted runs (runs that finished before their kill, replies lost to a kill)",
		killStats.chains, killStats.identical, killStats.kills, killStats.early, killStats.repeated, killStats.extra)
	killStats.Unlock()
}

// TestKilledSweepCompares: a sweep killed part way has a summary.json from
// its first instant (its runs pending), so `runner compare` shows it
// before any resume; `runner resume` then finishes every run and writes
// the summary.
func TestKilledSweepCompares(t *testing.T) {
	bin := runnerBinary(t)
	plan := load(t, "reasoning-debate")
	s := &standIns{}
	questions := []string{"What is 12+7*3?", "What is 9*9-8?", "What is 6*7?"}
	for _, q := range questions {
		s.add(t, plan, []string{"question=" + q}, nil)
	}
	srv := llmtest.New(t, s.handle)
	env := killEnv(srv, t.TempDir())
	runs := t.TempDir()
	args := []string{"run", filepath.Join("reasoning-debate", "spec.yaml"), "--matrix", "question=" + strings.Join(questions, ","), "--no-cache", "-q", "--runs-dir", runs}
	// Kill once the first requests were answered, well before the end.
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); s.count() < 3 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	visible, _ := visibleDirs(t, runs)
	if len(visible) != 1 {
		t.Fatalf("%d sweep directories after the kill", len(visible))
	}
	dir := visible[0]
	code, _, out := binary(t, bin, env, -1, "compare", dir)
	if code != 0 {
		t.Fatalf("runner compare on the killed sweep: exit %d:\n%s", code, out)
	}
	if code, _, out := binary(t, bin, env, -1, "resume", dir, "-q"); code != 0 {
		t.Fatalf("resume of the killed sweep: exit %d:\n%s", code, out)
	}
	if got := sweepRuns(t, bin, env)(dir); len(got) != len(questions) {
		t.Errorf("the resumed sweep has %d runs; want %d", len(got), len(questions))
	}
}

// TestKillAndResumeFanOut: the tree-of-thought protocol, whose steps expand
// their frontier with a concurrent foreach, is killed with SIGKILL at random
// instants (so often with iterations in flight) and resumed until it
// finishes: its result is an uninterrupted run's, and no journaled call is
// asked again.
func TestKillAndResumeFanOut(t *testing.T) {
	bin := runnerBinary(t)
	name := "protocols/tree-of-thought"
	plan := load(t, name)
	inputs := []string{"problem=Use 4, 9, 10 and 13 with + - * / to make 24."}
	args := []string{filepath.Join(name, "spec.yaml"), "--no-cache", "-q", "-i", inputs[0]}
	s := &standIns{}
	s.add(t, plan, inputs, nil)
	srv := llmtest.New(t, s.handle)
	env := killEnv(srv, t.TempDir())
	killChainCases(t, bin, env, s, args, killChains(t), func(dir string) []string { return []string{dir} })
}
