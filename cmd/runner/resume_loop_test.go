package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
)

// The tests in this file are issue 19's "resume never loops": a run that
// failed on what its journal holds is not resumed as it is (which would
// fail the same way without asking a model), and --resample asks the
// failed calls afresh.

// loopSpec: agent a answers in text, then agent b must answer in JSON, with
// one repair. Every prompt starts with a KEY= marker; a repair prompt has
// none.
const loopSpec = `version: 1
name: loop
inputs:
  question: {required: true}
models:
  default: {model: gpt-4o-mini, temperature: 0}
agents:
  a: {name: Alice}
  b: {name: Bob}
templates:
  define:
    first: "KEY=first\n{{.Inputs.question}}"
    judge: "KEY=judge\nAnswer in JSON."
nodes:
  first: {kind: ask, agents: [a], template: first, record: first}
  judge:
    kind: ask
    agents: [b]
    template: judge
    record: judge
    output:
      format: json
      schema: {type: object, properties: {answer: {type: string}}, required: [answer]}
      repair: 1
flow: [first, judge]
outputs:
  answer: latest("judge")[0].output.answer
`

// loopServer answers the first node in text and the judge with bad JSON
// until good is set; it records the KEY of every request ("" for repairs).
type loopServer struct {
	*llmtest.Server
	mu   sync.Mutex
	good bool
	keys []string
}

func newLoopServer(t *testing.T) *loopServer {
	s := &loopServer{}
	s.Server = llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		key := e2eCallKey(r)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.keys = append(s.keys, key)
		switch {
		case key == "first":
			return llmtest.Reply{Content: "forty-two"}
		case s.good:
			return llmtest.Reply{Content: `{"answer": "42"}`}
		}
		return llmtest.Reply{Content: "the answer is 42, no JSON today"}
	})
	return s
}

// asked returns the keys of the requests since the n-th.
func (s *loopServer) asked(n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys[n:]...)
}

func (s *loopServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}

func writeSpec(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// failOnBadReply runs loopSpec against srv until it fails on b's reply
// (exit 1) and returns the run directory.
func failOnBadReply(t *testing.T, srv *loopServer, spec string) string {
	t.Helper()
	code, _, stderr := invoke(t, e2eEnv(srv.Server), "run", spec, "-i", "question=q", "--runs-dir", t.TempDir(), "-q")
	if code != exitcode.Failure {
		t.Fatalf("run: exit %d, want %d\n%s", code, exitcode.Failure, stderr)
	}
	if got := srv.asked(0); strings.Join(got, ",") != "first,judge," {
		t.Fatalf("the run asked %q, want first, judge and its repair", got)
	}
	// The failing run does not advise resuming it as it is.
	if strings.Contains(stderr, "resume with:") {
		t.Errorf("a run that failed on a journaled reply advises a plain resume:\n%s", stderr)
	}
	for _, want := range []string{`reply is not valid json after 1 repair(s)`, "would fail the same way", "--resample", "--spec FIXED.yaml"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the failed run's stderr lacks %q:\n%s", want, stderr)
		}
	}
	return runDirFrom(t, stderr)
}

// TestResumeNeverLoops is issue 19's "Done when": resuming unchanged a run
// that failed on an unparseable reply exits 2 without calling a model and
// without suggesting itself; --resample finishes it, asking only the
// failed calls.
func TestResumeNeverLoops(t *testing.T) {
	srv := newLoopServer(t)
	spec := writeSpec(t, loopSpec)
	dir := failOnBadReply(t, srv, spec)
	journal := filepath.Join(dir, "journal.jsonl")
	before, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	runJSON, _ := os.ReadFile(filepath.Join(dir, "run.json"))

	// Resumed as it is: exit 2, no request, nothing changed on disk, the
	// ways out named, and no advice to run the same command again.
	n := srv.count()
	code, _, stderr := invoke(t, e2eEnv(srv.Server), "resume", dir, "-q")
	if code != exitcode.Usage {
		t.Fatalf("resume as it is: exit %d, want %d\n%s", code, exitcode.Usage, stderr)
	}
	if got := srv.asked(n); len(got) != 0 {
		t.Errorf("resume as it is asked the model %q", got)
	}
	for _, want := range []string{
		"nothing was resumed", `reply is not valid json after 1 repair(s)`, `node "judge"`,
		"judge/-/b, judge/-/b#repair1", "runner resume " + dir + " --resample", "runner resume " + dir + " --spec FIXED.yaml",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("resume as it is: stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "resume with:") || strings.Contains(stderr, "runner resume "+dir+"\n") {
		t.Errorf("resume as it is suggests itself:\n%s", stderr)
	}
	if after, _ := os.ReadFile(journal); string(after) != string(before) {
		t.Error("the refused resume wrote to the journal")
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "run.json")); string(after) != string(runJSON) {
		t.Error("the refused resume rewrote run.json")
	}

	// --resample against a server that now answers well: only the failed
	// node's call is asked (its first new sample parses, so its repair is
	// not needed); agent a's journaled reply is served from the journal.
	srv.mu.Lock()
	srv.good = true
	srv.mu.Unlock()
	n = srv.count()
	code, stdout, stderr := invoke(t, e2eEnv(srv.Server), "resume", dir, "--resample")
	if code != exitcode.OK {
		t.Fatalf("resume --resample: exit %d\n%s", code, stderr)
	}
	if got := srv.asked(n); strings.Join(got, ",") != "judge" {
		t.Errorf("resume --resample asked %q, want only the judge's call", got)
	}
	if strings.TrimSpace(stdout) != "42" {
		t.Errorf("resume --resample printed %q", stdout)
	}
	res := readResult(t, dir)
	if res["status"] != "completed" {
		t.Errorf("status %v", res["status"])
	}
	if !strings.Contains(toJSON(res["warnings"]), "judge/-/b: its reply is resample 1") {
		t.Errorf("result.json does not mark the resampled call: %v", res["warnings"])
	}
	if !strings.Contains(stderr, "calls: 2 (1 sent of which 1 asked afresh (--resample), 1 from the journal)") {
		t.Errorf("resume --resample does not say where its calls came from:\n%s", stderr)
	}
	// The journal says which call was asked afresh, with its number.
	var resampled, resumed int
	for _, ev := range e2eEvents(t, dir) {
		if ev.Type == "model_request" && ev.Key == "judge/-/b" && strings.Contains(string(ev.Data), `"resample":1`) {
			resampled++
		}
		if ev.Type == "run_resumed" && strings.Contains(string(ev.Data), `"resampled":["judge/-/b","judge/-/b#repair1"]`) {
			resumed++
		}
	}
	if resampled != 1 || resumed != 1 {
		t.Errorf("journal: %d model_request with resample 1, %d run_resumed naming the resampled calls; want 1, 1", resampled, resumed)
	}

	// A replay of the run serves the new sample, not the old one.
	n = srv.count()
	code, stdout, stderr = invoke(t, e2eEnv(srv.Server), "run", spec, "-i", "question=q", "--replay", dir, "--runs-dir", t.TempDir(), "-q")
	if code != exitcode.OK || strings.TrimSpace(stdout) != "42" || srv.count() != n {
		t.Errorf("replay of the resampled run: exit %d, output %q, %d requests\n%s", code, stdout, srv.count()-n, stderr)
	}
}

// TestResampleAgainAndFixedSpec: a resample that fails again is advised to
// resample again (a new draw each time, numbered), never to resume as it
// is; a fixed spec given with --spec still resumes (its prompts differ),
// while the same spec given with --spec is the same dead end.
func TestResampleAgainAndFixedSpec(t *testing.T) {
	srv := newLoopServer(t)
	spec := writeSpec(t, loopSpec)
	dir := failOnBadReply(t, srv, spec)

	n := srv.count()
	code, _, stderr := invoke(t, e2eEnv(srv.Server), "resume", dir, "--resample", "-q")
	if code != exitcode.Failure {
		t.Fatalf("resample against a server still answering badly: exit %d\n%s", code, stderr)
	}
	if got := srv.asked(n); strings.Join(got, ",") != "judge," {
		t.Errorf("the resample asked %q, want the judge's call and its repair", got)
	}
	if strings.Contains(stderr, "resume with:") || !strings.Contains(stderr, "already asked afresh 1 time(s)") {
		t.Errorf("a failed resample's advice:\n%s", stderr)
	}

	// The same spec given with --spec changes nothing: still exit 2.
	n = srv.count()
	if code, _, stderr := invoke(t, e2eEnv(srv.Server), "resume", dir, "--spec", spec, "-q"); code != exitcode.Usage || srv.count() != n {
		t.Errorf("resume --spec with the run's own spec: exit %d, %d requests\n%s", code, srv.count()-n, stderr)
	}

	// A fixed spec (a fallback for the judge) goes on: the judge's calls are
	// served from the journal (the same prompts), the fallback fills the
	// output, and nothing is asked. An answer that is the fallback did not
	// reach the run's purpose: the run finishes inconclusive (exit 8).
	fixed := writeSpec(t, strings.Replace(loopSpec, "      repair: 1\n", "      repair: 1\n      fallback: {answer: unknown}\n", 1))
	n = srv.count()
	code, stdout, stderr := invoke(t, e2eEnv(srv.Server), "resume", dir, "--spec", fixed, "-q")
	if code != exitcode.Inconclusive || strings.TrimSpace(stdout) != "unknown" {
		t.Fatalf("resume --spec FIXED: exit %d, output %q\n%s", code, stdout, stderr)
	}
	if got := srv.asked(n); len(got) != 0 {
		t.Errorf("resume --spec FIXED asked %q; the judge's replies are in the journal", got)
	}
}

// TestResumeAfterEndpointFailureStillResumes: a run that failed because an
// endpoint gave up (exit 3) was never answered, so a resume as it is makes
// progress and is allowed, as before; the failure advises exactly that.
func TestResumeAfterEndpointFailureStillResumes(t *testing.T) {
	var mu sync.Mutex
	down := true
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if e2eCallKey(r) == "judge" && down {
			return llmtest.Reply{Status: 503, ErrorMessage: "upstream overloaded"}
		}
		if e2eCallKey(r) == "judge" {
			return llmtest.Reply{Content: `{"answer": "42"}`}
		}
		return llmtest.Reply{Content: "forty-two"}
	})
	spec := writeSpec(t, loopSpec+"defaults: {max_retries: 0}\n")
	code, _, stderr := invoke(t, e2eEnv(srv), "run", spec, "-i", "question=q", "--runs-dir", t.TempDir(), "-q")
	if code != exitcode.Endpoint {
		t.Fatalf("run: exit %d, want %d\n%s", code, exitcode.Endpoint, stderr)
	}
	dir := runDirFrom(t, stderr)
	if !strings.Contains(stderr, "(resume with: runner resume "+dir+")") {
		t.Errorf("an endpoint failure does not advise a resume:\n%s", stderr)
	}
	// --resample has nothing to ask afresh here... but the judge failed in
	// a node, so it is allowed; a plain resume is what the advice says.
	mu.Lock()
	down = false
	mu.Unlock()
	before := srv.Count()
	code, stdout, stderr := invoke(t, e2eEnv(srv), "resume", dir, "-q")
	if code != exitcode.OK || strings.TrimSpace(stdout) != "42" {
		t.Fatalf("resume after an endpoint failure: exit %d, output %q\n%s", code, stdout, stderr)
	}
	if n := srv.Count() - before; n != 1 {
		t.Errorf("resume asked %d calls, want 1 (the judge's)", n)
	}
}

// TestResumeOutputExpressionDeadEnd: an output expression that fails on the
// journaled messages fails the same way on every resume: exit 2, and the
// only way out named is a fixed spec (there is no reply to ask afresh);
// --resample says so.
func TestResumeOutputExpressionDeadEnd(t *testing.T) {
	srv := newLoopServer(t)
	srv.good = true
	// It fails on the judge's answer "42" (too short), not on every reply:
	// validate accepts it.
	bad := strings.Replace(loopSpec, `answer: latest("judge")[0].output.answer`, `answer: latest("judge")[0].output.answer[5]`, 1)
	spec := writeSpec(t, bad)
	code, _, stderr := invoke(t, e2eEnv(srv.Server), "run", spec, "-i", "question=q", "--runs-dir", t.TempDir(), "-q")
	if code != exitcode.Failure {
		t.Fatalf("run: exit %d, want %d\n%s", code, exitcode.Failure, stderr)
	}
	dir := runDirFrom(t, stderr)
	if strings.Contains(stderr, "resume with:") || !strings.Contains(stderr, "--spec FIXED.yaml") {
		t.Errorf("a failed output expression's advice:\n%s", stderr)
	}
	n := srv.count()
	code, _, stderr = invoke(t, e2eEnv(srv.Server), "resume", dir, "-q")
	if code != exitcode.Usage || srv.count() != n {
		t.Fatalf("resume as it is: exit %d, %d requests\n%s", code, srv.count()-n, stderr)
	}
	if !strings.Contains(stderr, `output "answer"`) || strings.Contains(stderr, "--resample") {
		t.Errorf("resume as it is after a failed output: %s", stderr)
	}
	code, _, stderr = invoke(t, e2eEnv(srv.Server), "resume", dir, "--resample", "-q")
	if code != exitcode.Usage || srv.count() != n || !strings.Contains(stderr, "--resample: nothing to ask afresh") {
		t.Errorf("resume --resample after a failed output: exit %d\n%s", code, stderr)
	}
	fixed := writeSpec(t, loopSpec)
	code, stdout, stderr := invoke(t, e2eEnv(srv.Server), "resume", dir, "--spec", fixed, "-q")
	if code != exitcode.OK || strings.TrimSpace(stdout) != "42" || srv.count() != n {
		t.Errorf("resume --spec FIXED: exit %d, output %q, %d requests\n%s", code, stdout, srv.count()-n, stderr)
	}
}

// TestResumeSweepWithDeadEnds: resuming a sweep whose runs failed on
// journaled replies calls no model and keeps those runs as they failed
// (their usage too), saying how to go on; --resample on one of its runs
// finishes that run, and the sweep then counts it completed.
func TestResumeSweepWithDeadEnds(t *testing.T) {
	srv := newLoopServer(t)
	spec := writeSpec(t, loopSpec)
	runs := t.TempDir()
	code, _, stderr := invoke(t, e2eEnv(srv.Server), "run", spec, "-i", "question=q", "--repeat", "2", "--runs-dir", runs, "-q")
	if code != exitcode.Failure {
		t.Fatalf("sweep: exit %d\n%s", code, stderr)
	}
	sweeps, _ := filepath.Glob(filepath.Join(runs, "sweep-*"))
	if len(sweeps) != 1 {
		t.Fatalf("%d sweep directories", len(sweeps))
	}
	n := srv.count()
	code, stdout, stderr := invoke(t, e2eEnv(srv.Server), "resume", sweeps[0], "-q")
	if code != exitcode.Failure || srv.count() != n {
		t.Fatalf("resume of the sweep: exit %d, %d requests\n%s\n%s", code, srv.count()-n, stdout, stderr)
	}
	if strings.Count(stdout, "| failed: node \"judge\"") != 2 || !strings.Contains(stderr, "resume it with --resample or --spec FIXED.yaml") {
		t.Errorf("resume of the sweep does not keep the failures with the way on:\n%s\n%s", stdout, stderr)
	}
	if strings.Contains(stdout, "| 0 | 0 | 0 |") {
		t.Errorf("resume of the sweep lost the failed runs' usage:\n%s", stdout)
	}
	code, _, stderr = invoke(t, e2eEnv(srv.Server), "resume", sweeps[0], "--resample")
	if code != exitcode.Usage || !strings.Contains(stderr, "--resample asks one run's failed calls afresh") {
		t.Errorf("resume --resample of a sweep: exit %d\n%s", code, stderr)
	}

	srv.mu.Lock()
	srv.good = true
	srv.mu.Unlock()
	dirs, _ := filepath.Glob(filepath.Join(sweeps[0], "*-loop-*"))
	if len(dirs) != 2 {
		t.Fatalf("%d run directories in the sweep", len(dirs))
	}
	if code, _, stderr := invoke(t, e2eEnv(srv.Server), "resume", dirs[0], "--resample", "-q"); code != exitcode.OK {
		t.Fatalf("resume --resample of a sweep's run: exit %d\n%s", code, stderr)
	}
	n = srv.count()
	code, stdout, stderr = invoke(t, e2eEnv(srv.Server), "resume", sweeps[0], "-q")
	if code != exitcode.Failure || srv.count() != n || strings.Count(stdout, "| completed |") != 1 || strings.Count(stdout, "| failed: ") != 1 {
		t.Errorf("resume of the sweep after one run was resampled: exit %d, %d requests\n%s\n%s", code, srv.count()-n, stdout, stderr)
	}
}

// TestResumeFallbackDeadEnd: a reply that gave way to its node's fallback
// output, on which an output expression then fails, fails the same way on
// every resume as it is: exit 2, naming the fallen-back calls, which
// --resample asks afresh.
func TestResumeFallbackDeadEnd(t *testing.T) {
	srv := newLoopServer(t)
	withFallback := strings.Replace(loopSpec, "      repair: 1\n", "      repair: 1\n      fallback: {}\n", 1)
	withFallback = strings.Replace(withFallback, `answer: latest("judge")[0].output.answer`, `answer: latest("judge")[0].output.answer + "!"`, 1)
	spec := writeSpec(t, withFallback)
	code, _, stderr := invoke(t, e2eEnv(srv.Server), "run", spec, "-i", "question=q", "--runs-dir", t.TempDir(), "-q")
	if code != exitcode.Failure {
		t.Fatalf("run: exit %d, want %d\n%s", code, exitcode.Failure, stderr)
	}
	dir := runDirFrom(t, stderr)
	if strings.Contains(stderr, "resume with:") || !strings.Contains(stderr, "gave way to a fallback output") {
		t.Errorf("the failed run's advice:\n%s", stderr)
	}
	n := srv.count()
	code, _, stderr = invoke(t, e2eEnv(srv.Server), "resume", dir, "-q")
	if code != exitcode.Usage || srv.count() != n || !strings.Contains(stderr, "judge/-/b, judge/-/b#repair1") || !strings.Contains(stderr, "--resample") {
		t.Fatalf("resume as it is: exit %d, %d requests\n%s", code, srv.count()-n, stderr)
	}
	srv.mu.Lock()
	srv.good = true
	srv.mu.Unlock()
	code, stdout, stderr := invoke(t, e2eEnv(srv.Server), "resume", dir, "--resample", "-q")
	if code != exitcode.OK || strings.TrimSpace(stdout) != "42!" {
		t.Fatalf("resume --resample: exit %d, output %q\n%s", code, stdout, stderr)
	}
	if got := srv.asked(n); strings.Join(got, ",") != "judge" {
		t.Errorf("resume --resample asked %q, want the judge's call", got)
	}
}

// TestResampleOnlyTheFailingAgent: when two agents of a node answer and
// one's reply is unusable, --resample asks only that agent's calls again;
// the other agent's journaled reply, already paid for, is served from the
// journal.
func TestResampleOnlyTheFailingAgent(t *testing.T) {
	var mu sync.Mutex
	good := false
	var asked []string
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		key := e2eCallKey(r)
		asked = append(asked, key)
		switch {
		case key == "first":
			return llmtest.Reply{Content: "forty-two"}
		case strings.Contains(key, "/a"):
			return llmtest.Reply{Content: `{"answer": "from a"}`}
		case good:
			return llmtest.Reply{Content: `{"answer": "from b"}`}
		}
		// b's bad replies come late, so that a's call is answered first.
		return llmtest.Reply{Content: "no JSON", Delay: 50 * time.Millisecond}
	})
	both := strings.Replace(loopSpec, "    agents: [b]\n", "    agents: [a, b]\n", 1)
	both = strings.Replace(both, `judge: "KEY=judge\nAnswer in JSON."`, `judge: "KEY=judge/{{.Agent.ID}}\nAnswer in JSON."`, 1)
	both = strings.Replace(both, `answer: latest("judge")[0].output.answer`, `answer: join(map(latest("judge"), {.output.answer}), ", ")`, 1)
	spec := writeSpec(t, both)
	code, _, stderr := invoke(t, e2eEnv(srv), "run", spec, "-i", "question=q", "--runs-dir", t.TempDir(), "-q")
	if code != exitcode.Failure {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	dir := runDirFrom(t, stderr)
	if !strings.Contains(stderr, "judge/-/b, judge/-/b#repair1;") || strings.Contains(stderr, "judge/-/a") {
		t.Errorf("the advice does not name b's calls alone:\n%s", stderr)
	}
	mu.Lock()
	good, asked = true, nil
	mu.Unlock()
	code, stdout, stderr := invoke(t, e2eEnv(srv), "resume", dir, "--resample", "-q")
	if code != exitcode.OK || strings.TrimSpace(stdout) != "from a, from b" {
		t.Fatalf("resume --resample: exit %d, output %q\n%s", code, stdout, stderr)
	}
	if strings.Join(asked, ",") != "judge/b" {
		t.Errorf("resume --resample asked %q, want b's call alone", asked)
	}
}

// TestResumeNeverLoopsBinary is the "Done when" again with the real binary:
// the exit codes are the process's.
func TestResumeNeverLoopsBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	bin := runnerBinary(t)
	srv := newLoopServer(t)
	spec := writeSpec(t, loopSpec)
	runs := t.TempDir()
	exec1 := func(args ...string) (int, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY="+e2eKey, "RUNNER_CACHE_DIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	code, out := exec1("run", spec, "-i", "question=q", "--runs-dir", runs, "-q")
	if code != exitcode.Failure {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	dir := runDirFrom(t, out)
	n := srv.count()
	if code, out := exec1("resume", dir, "-q"); code != exitcode.Usage || srv.count() != n || strings.Contains(out, "resume with:") {
		t.Fatalf("resume as it is: exit %d, %d requests\n%s", code, srv.count()-n, out)
	}
	srv.mu.Lock()
	srv.good = true
	srv.mu.Unlock()
	if code, out := exec1("resume", dir, "--resample", "-q"); code != exitcode.OK || srv.count() != n+1 || !strings.HasPrefix(out, "42\n") {
		t.Fatalf("resume --resample: exit %d, %d requests\n%s", code, srv.count()-n, out)
	}
}

// toJSON is v as indented JSON (for messages).
func toJSON(v any) string {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}
