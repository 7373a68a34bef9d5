package examples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/spec"
)

// The benchmark and test in this file measure how close a run of the design
// debate comes to its critical path: every call takes a fixed latency at
// the server, so a run without overhead would take the number of dependent
// waves of calls times that latency.
//
// The debate runs as the original tool's kata does: 3 agents, 3 rounds, no
// clarifying questions, no judge rating between rounds and no summaries.
// Its waves are round 1's propose, critique and refine, then critique and
// refine in rounds 2 and 3 (proposals are carried over), then the
// synthesis: 8.
const designWaves = 8

// designSolution is a synthesis that fits the solution schema.
const designSolution = `{"solution_markdown": "# URL shortener\nA key-value store behind a stateless API.",
 "tradeoffs": ["eventual consistency of click counts"], "recommendations": ["cache hot links"],
 "unmet_requirements": [], "open_questions": [], "confidence": 88}`

// wallTimes is one run of the debate, timed.
type wallTimes struct {
	total time.Duration // from reading the spec to Execute's return
	// startup is from reading the spec to the first call's arrival,
	// winddown from the last call's reply to Execute's return.
	startup, winddown time.Duration
	// load is spec.Load's part of startup, start runtime.Start's; run
	// as a command, load is from exec to the journal's first event, start
	// from there to the first call, and init is the process's part of load
	// until main.
	load, start, init time.Duration
	// between is the time from a wave's last reply to the next wave's
	// first call, summed over the waves; spread is the time a wave's calls
	// took beyond the latency (its first arrival to its last reply), summed.
	between, spread time.Duration
	waves, calls    int
}

// ratio is wall time over the critical path.
func (w wallTimes) ratio(latency time.Duration) float64 {
	return float64(w.total) / float64(time.Duration(designWaves)*latency)
}

// callSpans are the calls a design server answered: when each arrived and
// when its reply was sent.
type callSpans struct {
	mu    sync.Mutex
	spans []callSpan
}

type callSpan struct{ in, out time.Time }

// designServer starts a server answering every call of the design debate
// after latency, and records the calls' spans.
func designServer(t testing.TB, latency time.Duration) (*llmtest.Server, *callSpans) {
	t.Helper()
	calls := &callSpans{}
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		in := time.Now()
		time.Sleep(latency)
		content := "A design of a few hundred bytes, as a model would write it. " + strings.Repeat("It holds. ", 20)
		if r.ResponseFormat != "" {
			content = designSolution
		}
		calls.mu.Lock()
		calls.spans = append(calls.spans, callSpan{in, time.Now()})
		calls.mu.Unlock()
		return llmtest.Reply{Content: content}
	})
	return srv, calls
}

// designArgs are the debate's inputs and vars, as the kata runs it.
var (
	designProblem = "problem=Design a URL shortener for 10k requests per second."
	designSets    = []string{"clarify=false", "early_stop=false", "summaries=false", "max_rounds=3"}
)

const designSeed = 3

// time fills in w's calls, waves, between, spread, startup (from t0) and
// winddown (until end).
func (c *callSpans) time(t testing.TB, w *wallTimes, latency time.Duration, t0, end time.Time) {
	t.Helper()
	c.mu.Lock()
	spans := slices.Clone(c.spans)
	c.mu.Unlock()
	if len(spans) == 0 {
		t.Fatal("the run made no call")
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].in.Before(spans[j].in) })
	w.calls = len(spans)
	// A call that arrives after a reply of its wave was sent was made from
	// it, so it starts the next wave (on a loaded machine the calls of one
	// wave may arrive tens of milliseconds apart).
	var first, last, firstOut time.Time
	for i, s := range spans {
		if i == 0 || s.in.After(firstOut) {
			if i > 0 {
				w.between += s.in.Sub(last)
				w.spread += last.Sub(first) - latency
			}
			w.waves++
			first, firstOut = s.in, s.out
		}
		if s.out.After(last) {
			last = s.out
		}
		if s.out.Before(firstOut) {
			firstOut = s.out
		}
	}
	w.spread += last.Sub(first) - latency
	w.startup = spans[0].in.Sub(t0)
	w.winddown = end.Sub(last)
}

// designWall runs the design debate in process against a server answering
// every call after latency, and times it.
func designWall(t testing.TB, latency time.Duration) wallTimes {
	t.Helper()
	srv, calls := designServer(t, latency)
	seed := int64(designSeed)
	opts := runtime.Options{
		Launch: launch.Launch{Given: launch.Given{
			Inputs: []string{designProblem},
			Sets:   designSets,
			Seed:   &seed,
		}},
		Settings: runtime.Settings{RunsDir: t.TempDir(), Getenv: serverEnv(srv), EarlyCalls: true}, // as runner run
	}
	t0 := time.Now()
	plan, diags := spec.Load("design-debate/spec.yaml", nodes.Registry())
	if diags.HasErrors() {
		t.Fatalf("design-debate/spec.yaml: %s", diags.Format())
	}
	tLoad := time.Now()
	r, err := runtime.Start(plan, opts)
	if err != nil {
		t.Fatal(err)
	}
	tStart := time.Now()
	res, err := r.Execute(context.Background())
	end := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "completed" {
		t.Fatalf("the run ended %s", res.Status)
	}
	w := wallTimes{total: end.Sub(t0), load: tLoad.Sub(t0), start: tStart.Sub(tLoad)}
	calls.time(t, &w, latency, t0, end)
	return w
}

// designWallBinary runs the design debate with the runner command (bin),
// as a user would, against a server answering every call after latency,
// and times the whole process, from exec to exit. Of start-up, load is
// from exec to the run's first journal event (run_started: the spec read
// and compiled, the run's folder begun) and init the part of a process's
// start until main (package initialization, as GODEBUG=inittrace reports
// it from the runtime's start, in a `runner version` run beside it).
func designWallBinary(t testing.TB, bin string, latency time.Duration) wallTimes {
	t.Helper()
	return designWallBinaryIn(t, bin, latency, t.TempDir())
}

// designWallBinaryIn is designWallBinary with cacheDir as the run's cache
// directory.
func designWallBinaryIn(t testing.TB, bin string, latency time.Duration, cacheDir string) wallTimes {
	t.Helper()
	srv, calls := designServer(t, latency)
	runs := t.TempDir()
	args := []string{"run", "design-debate/spec.yaml", "--input", designProblem, "--seed", strconv.Itoa(designSeed),
		"--runs-dir", runs, "--cache-dir", cacheDir, "-q"}
	for _, s := range designSets {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY="+testKey)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	end := time.Now()
	if err != nil {
		t.Fatalf("runner %s: %v\n%s", strings.Join(args, " "), err, lastLines(stderr.String(), 20))
	}
	w := wallTimes{total: end.Sub(t0)}
	// Tracing the inits costs the traced process milliseconds, so they are
	// timed in another, untimed one; the last package initialized is main,
	// and it ends where main begins.
	trace := exec.Command(bin, "version")
	trace.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var traced bytes.Buffer
	trace.Stderr = &traced
	if err := trace.Run(); err != nil {
		t.Fatalf("runner version: %v\n%s", err, lastLines(traced.String(), 20))
	}
	for line := range strings.Lines(traced.String()) {
		var pkg string
		var at, clock float64
		if n, _ := fmt.Sscanf(line, "init %s @%f ms, %f ms clock", &pkg, &at, &clock); n == 3 {
			w.init = time.Duration((at + clock) * float64(time.Millisecond))
		}
	}
	dirs, err := filepath.Glob(filepath.Join(runs, "*", "journal.jsonl"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("want one run's journal under %s, found %v (%v)", runs, dirs, err)
	}
	f, err := os.Open(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ev struct {
		Type string    `json:"type"`
		Time time.Time `json:"time"`
	}
	if err := json.NewDecoder(f).Decode(&ev); err != nil || ev.Type != "run_started" {
		t.Fatalf("%s: first event %q (%v), want run_started", dirs[0], ev.Type, err)
	}
	w.load = ev.Time.Sub(t0)
	calls.time(t, &w, latency, t0, end)
	w.start = w.startup - w.load
	return w
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// wallLatency is the latency per call: RUNNER_WALL_LATENCY_MS, or 300 ms.
func wallLatency(t testing.TB) time.Duration {
	if s := os.Getenv("RUNNER_WALL_LATENCY_MS"); s != "" {
		ms, err := strconv.Atoi(s)
		if err != nil || ms <= 0 {
			t.Fatalf("RUNNER_WALL_LATENCY_MS=%q: want a positive number of milliseconds", s)
		}
		return time.Duration(ms) * time.Millisecond
	}
	return 300 * time.Millisecond
}

// BenchmarkDesignDebateWall reports the design debate's wall time over its
// critical path (x-critical-path, 1 is no overhead) at 300 ms per call
// (RUNNER_WALL_LATENCY_MS sets another), run in process, and where the
// rest went: start-up until the first call (startup-ms), between one
// wave's last reply and the next wave's first call (between-ms, per wave),
// a wave's calls beyond the latency (spread-ms, per wave) and from the last
// reply to the end of the run, its records written (winddown-ms). Of
// start-up, load-ms is reading and compiling the spec and start-ms
// runtime.Start (the run's folder and journal).
func BenchmarkDesignDebateWall(b *testing.B) {
	latency := wallLatency(b)
	benchWall(b, latency, func() wallTimes { return designWall(b, latency) })
}

// BenchmarkDesignDebateWallBinary is BenchmarkDesignDebateWall with the
// runner command, as a user runs it (response cache on, empty), timed from
// exec to exit: start-up includes the process's start, init-ms its part
// until main, load-ms from exec to the run's first journal event and
// start-ms from there to the first call; wind-down ends when the process
// has exited. In cold, the spec is new to the cache directory, whose
// verdicts of path checks are empty; in warm, it holds the verdict an
// earlier run of the same spec left (a spec run again unchanged), and the
// responses stay empty.
func BenchmarkDesignDebateWallBinary(b *testing.B) {
	latency := wallLatency(b)
	path := bin.Path(b, "../cmd/runner")
	b.Run("cold", func(b *testing.B) {
		benchWall(b, latency, func() wallTimes { return designWallBinary(b, path, latency) })
	})
	b.Run("warm", func(b *testing.B) {
		warm := b.TempDir()
		designWallBinaryIn(b, path, latency, warm)
		benchWall(b, latency, func() wallTimes {
			dir := b.TempDir()
			if err := os.CopyFS(filepath.Join(dir, "paths"), os.DirFS(filepath.Join(warm, "paths"))); err != nil {
				b.Fatalf("no verdict of the path check left by the first run: %v", err)
			}
			return designWallBinaryIn(b, path, latency, dir)
		})
	})
}

// benchWall reports the mean of run's times over the benchmark's loop.
func benchWall(b *testing.B, latency time.Duration, run func() wallTimes) {
	var sum wallTimes
	n := 0
	for b.Loop() {
		w := run()
		sum.total += w.total
		sum.startup += w.startup
		sum.init += w.init
		sum.load += w.load
		sum.start += w.start
		sum.between += w.between
		sum.spread += w.spread
		sum.winddown += w.winddown
		sum.waves += w.waves
		n++
	}
	ms := func(d time.Duration, per int) float64 { return float64(d) / float64(time.Millisecond) / float64(per) }
	b.ReportMetric(float64(sum.total)/float64(n)/float64(time.Duration(designWaves)*latency), "x-critical-path")
	b.ReportMetric(ms(sum.startup, n), "startup-ms")
	if sum.init > 0 {
		b.ReportMetric(ms(sum.init, n), "init-ms")
	}
	b.ReportMetric(ms(sum.load, n), "load-ms")
	b.ReportMetric(ms(sum.start, n), "start-ms")
	b.ReportMetric(ms(sum.between, sum.waves-n), "between-ms")
	b.ReportMetric(ms(sum.spread, sum.waves), "spread-ms")
	b.ReportMetric(ms(sum.winddown, n), "winddown-ms")
}

// TestDesignDebateWall checks that the debate makes its calls in the 8
// waves of its critical path, and logs how close the run comes to it;
// wall-clock ratios depend on the machine, so they are reported rather
// than asserted.
func TestDesignDebateWall(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	latency := 100 * time.Millisecond
	w := designWall(t, latency)
	t.Logf("design debate with %s calls: %s, %.3fx its critical path of %s; start-up %s (load %s, start %s), %s between waves, %s spread in waves, wind-down %s",
		latency, w.total.Round(time.Millisecond), w.ratio(latency), time.Duration(designWaves)*latency, w.startup.Round(time.Millisecond),
		w.load.Round(time.Millisecond), w.start.Round(time.Millisecond),
		(w.between / time.Duration(max(1, w.waves-1))).Round(100*time.Microsecond), (w.spread / time.Duration(max(1, w.waves))).Round(100*time.Microsecond), w.winddown.Round(time.Millisecond))
	if w.waves != designWaves || w.calls != 31 {
		t.Errorf("%d calls in %d waves, want 31 in %d", w.calls, w.waves, designWaves)
	}
}

// TestDesignDebateWallBinary is TestDesignDebateWall with the runner
// command: the same 8 waves, from exec to exit.
func TestDesignDebateWallBinary(t *testing.T) {
	latency := 100 * time.Millisecond
	w := designWallBinary(t, runnerBinary(t), latency)
	t.Logf("runner run with %s calls: %s, %.3fx its critical path of %s; start-up %s (init %s, load %s, start %s), %s between waves, %s spread in waves, wind-down %s",
		latency, w.total.Round(time.Millisecond), w.ratio(latency), time.Duration(designWaves)*latency, w.startup.Round(time.Millisecond),
		w.init.Round(100*time.Microsecond), w.load.Round(time.Millisecond), w.start.Round(time.Millisecond),
		(w.between / time.Duration(max(1, w.waves-1))).Round(100*time.Microsecond), (w.spread / time.Duration(max(1, w.waves))).Round(100*time.Microsecond), w.winddown.Round(time.Millisecond))
	if w.waves != designWaves || w.calls != 31 {
		t.Errorf("%d calls in %d waves, want 31 in %d", w.calls, w.waves, designWaves)
	}
	if w.init <= 0 || w.load > w.startup {
		t.Errorf("phases out of order: init %s, load %s, start-up %s", w.init, w.load, w.startup)
	}
}
