package runtime

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	goruntime "runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/debate-runner/runner/runtime/launch"
)

// The benchmark and test in this file measure the memory a run keeps per
// recorded message: the heap in use after a collection, once the run has
// recorded n messages, less the heap in use before it started, over n. The
// workloads are longRuns' (longrun_bench_test.go): a debate of 8 agents
// reading the history through the template helpers, and a conversation
// whose whispers and private thoughts give each agent its own view.

// heapProbe takes the heap in use at the first call made once the run has
// recorded at least each of its checkpoints, and the process CPU time and
// the calls made until then.
type heapProbe struct {
	next     http.RoundTripper
	at       []int      // checkpoints, ascending
	recorded func() int // messages recorded so far; set once the run exists
	profile  string     // if set, a heap profile is written here at the last checkpoint

	mu    sync.Mutex
	calls int
	taken []heapPoint
}

type heapPoint struct {
	messages int
	heap     uint64 // HeapInuse after two collections
	live     uint64 // HeapAlloc then: the bytes of the objects alive
	calls    int
	cpu      time.Duration
}

// heapNow collects twice (the first leaves pooled buffers for the next)
// and returns HeapInuse, the spans holding objects, whole, so with the free
// room between a span's live objects, and HeapAlloc, the live objects.
func heapNow() (inUse, live uint64) {
	goruntime.GC()
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	return ms.HeapInuse, ms.HeapAlloc
}

func (p *heapProbe) RoundTrip(req *http.Request) (*http.Response, error) {
	p.mu.Lock()
	if len(p.taken) < len(p.at) {
		if n := p.recorded(); n >= p.at[len(p.taken)] {
			user, sys := cpuTime()
			pt := heapPoint{messages: n, calls: p.calls, cpu: user + sys}
			pt.heap, pt.live = heapNow()
			p.taken = append(p.taken, pt)
			if p.profile != "" && len(p.taken) == len(p.at) {
				if f, err := os.Create(p.profile); err == nil {
					_ = pprof.WriteHeapProfile(f)
					_ = f.Close()
				}
			}
		}
	}
	p.calls++
	p.mu.Unlock()
	return p.next.RoundTrip(req)
}

// memoryRun is what measureMemory measured of one run.
type memoryRun struct {
	before     uint64 // heap in use before the run started executing
	liveBefore uint64 // bytes of live objects then
	points     []heapPoint
}

// perMessage is the heap the run kept per message at checkpoint i.
func (m memoryRun) perMessage(i int) float64 {
	p := m.points[i]
	return (float64(p.heap) - float64(m.before)) / float64(p.messages)
}

// livePerMessage is the bytes of objects the run kept alive per message at
// checkpoint i: perMessage without the free room of the spans in use.
func (m memoryRun) livePerMessage(i int) float64 {
	p := m.points[i]
	return (float64(p.live) - float64(m.liveBefore)) / float64(p.messages)
}

// cpuPerCall is the process CPU time per call up to checkpoint i.
func (m memoryRun) cpuPerCall(i int) float64 {
	return float64(m.points[i].cpu.Nanoseconds()) / float64(m.points[i].calls)
}

// measureMemory runs a workload past the last of checkpoints and measures
// the heap at each; the journal skips fsync (it keeps nothing in memory
// either way). A short run of the workload goes first, so that what a
// process makes once (the JSON encoders' caches, the kinds' schemas) is not
// counted against the run measured.
func measureMemory(t testing.TB, lr longRun, checkpoints []int, profile string) memoryRun {
	t.Helper()
	if checkpoints[0] > 100 {
		measureMemory(t, lr, []int{100}, "")
	}
	last := checkpoints[len(checkpoints)-1]
	text, sets := lr.spec(last + last/50 + 20)
	plan := loadPlan(t, writeSpec(t, t.TempDir(), text))
	p := &heapProbe{next: lr.transport(), at: checkpoints, profile: profile}
	opts := Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: lr.inputs, Sets: sets}},
		Settings: Settings{RunsDir: t.TempDir(), Getenv: envFor("http://127.0.0.1:1/v1")},
		Seams:    Seams{HTTPClient: &http.Client{Transport: p}},
	}
	r := startNoSync(t, plan, opts)
	h := &host{run: r}
	p.recorded = func() int { return len(h.Messages()) }
	before, liveBefore := heapNow()
	user, sys := cpuTime()
	if _, err := r.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(p.taken) != len(checkpoints) {
		t.Fatalf("%s: the run ended before %d messages", lr.name, last)
	}
	for i := range p.taken {
		p.taken[i].cpu -= user + sys
	}
	return memoryRun{before: before, liveBefore: liveBefore, points: p.taken}
}

// BenchmarkMemoryPerMessage reports, per workload, the bytes of heap a run
// keeps per recorded message at 1,000 and at 20,000 messages (B/msg@1k,
// B/msg@20k: heap in use after collection, less the heap before the run,
// over the messages), the bytes each message past the first thousand added
// (B/msg-marginal), the bytes of live objects per message (live-B/msg@1k,
// live-B/msg@20k: the same without the free room in the spans in use), and
// the process CPU time per call over the run's first 20,000 messages
// (cpu-ns/call). RUNNER_HEAPPROFILE=FILE writes a heap profile at 20,000
// messages of the last workload run.
func BenchmarkMemoryPerMessage(b *testing.B) {
	for _, lr := range longRuns {
		b.Run(lr.name, func(b *testing.B) {
			var m memoryRun
			for b.Loop() {
				m = measureMemory(b, lr, []int{1000, 20000}, os.Getenv("RUNNER_HEAPPROFILE"))
			}
			b.ReportMetric(m.perMessage(0), "B/msg@1k")
			b.ReportMetric(m.perMessage(1), "B/msg@20k")
			p0, p1 := m.points[0], m.points[1]
			b.ReportMetric((float64(p1.heap)-float64(p0.heap))/float64(p1.messages-p0.messages), "B/msg-marginal")
			b.ReportMetric(m.livePerMessage(0), "live-B/msg@1k")
			b.ReportMetric(m.livePerMessage(1), "live-B/msg@20k")
			b.ReportMetric(m.cpuPerCall(1), "cpu-ns/call")
		})
	}
}

// maxBytesPerMessage is the most heap a run may keep per recorded message.
// A message's own content here is about 400 bytes; the rest is the record,
// each agent's view of it, the indexes over them, and what the run keeps
// for its result and report.
const maxBytesPerMessage = 2560

// TestMemoryPerMessage: after 1,000 messages, and after 2,000, a run keeps
// at most 2.5 KB of heap per message, both for a debate and for a
// conversation in which each agent sees its own part of the history. At
// 1,000 what a run keeps whatever its length (its recent requests, buffers)
// weighs twice what it does at 2,000.
//
// The heap is the process's, so the test measures in a process of its own
// (this test binary run again for this test alone): run beside the rest of
// the package, what earlier tests left running (servers, caches writing
// behind) moved the figure by more than a kilobyte per message.
func TestMemoryPerMessage(t *testing.T) {
	if os.Getenv("RUNNER_MEMORY_ALONE") == "" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestMemoryPerMessage$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "RUNNER_MEMORY_ALONE=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("measured alone: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "B kept per message") {
			t.Fatalf("measured alone, but nothing was measured:\n%s", out)
		}
		t.Logf("measured alone:\n%s", out)
		return
	}
	for _, lr := range longRuns {
		t.Run(lr.name, func(t *testing.T) {
			m := measureMemory(t, lr, []int{1000, 2000}, "")
			for i, p := range m.points {
				got := m.perMessage(i)
				t.Logf("%s: %.0f B kept per message at %d messages, %.0f B of it live objects (heap %d B before the run, %d B after)", lr.name, got, p.messages, m.livePerMessage(i), m.before, p.heap)
				if got > maxBytesPerMessage {
					t.Errorf("%s: the run keeps %.0f B per message at %d messages, more than %d", lr.name, got, p.messages, maxBytesPerMessage)
				}
			}
		})
	}
}
