package examples_test

import (
	"context"
	"os"
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
	// load is spec.Load's part of startup, start runtime.Start's.
	load, start time.Duration
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

// designWall runs the design debate against a server answering every call
// after latency, and times it.
func designWall(t testing.TB, latency time.Duration) wallTimes {
	t.Helper()
	type span struct{ in, out time.Time }
	var mu sync.Mutex
	var spans []span
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		in := time.Now()
		time.Sleep(latency)
		content := "A design of a few hundred bytes, as a model would write it. " + strings.Repeat("It holds. ", 20)
		if r.ResponseFormat != "" {
			content = designSolution
		}
		mu.Lock()
		spans = append(spans, span{in, time.Now()})
		mu.Unlock()
		return llmtest.Reply{Content: content}
	})
	seed := int64(3)
	opts := runtime.Options{
		Launch: launch.Launch{Given: launch.Given{
			Inputs: []string{"problem=Design a URL shortener for 10k requests per second."},
			Sets:   []string{"clarify=false", "early_stop=false", "summaries=false", "max_rounds=3"},
			Seed:   &seed,
		}},
		Settings: runtime.Settings{RunsDir: t.TempDir(), Getenv: serverEnv(srv)},
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
	sort.Slice(spans, func(i, j int) bool { return spans[i].in.Before(spans[j].in) })
	w := wallTimes{total: end.Sub(t0), calls: len(spans), load: tLoad.Sub(t0), start: tStart.Sub(tLoad)}
	// A call that arrives more than half a latency after its wave's first
	// starts the next wave.
	var first, last time.Time
	for i, s := range spans {
		if i == 0 || s.in.Sub(first) > latency/2 {
			if i > 0 {
				w.between += s.in.Sub(last)
				w.spread += last.Sub(first) - latency
			}
			w.waves++
			first = s.in
		}
		if s.out.After(last) {
			last = s.out
		}
	}
	w.spread += last.Sub(first) - latency
	w.startup = spans[0].in.Sub(t0)
	w.winddown = end.Sub(last)
	return w
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
// (RUNNER_WALL_LATENCY_MS sets another), and where the rest went: start-up
// until the first call (startup-ms), between one wave's last reply and the
// next wave's first call (between-ms, per wave), a wave's calls beyond the
// latency (spread-ms, per wave) and from the last reply to the end of the
// run, its records written (winddown-ms). Of start-up, load-ms is reading
// and compiling the spec and start-ms runtime.Start (the run's folder and
// journal).
func BenchmarkDesignDebateWall(b *testing.B) {
	latency := wallLatency(b)
	var sum wallTimes
	n := 0
	for b.Loop() {
		w := designWall(b, latency)
		sum.total += w.total
		sum.startup += w.startup
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
