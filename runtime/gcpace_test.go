package runtime

import (
	"math/rand/v2"
	goruntime "runtime"
	"runtime/debug"
	"testing"
	"time"
)

// currentGCPercent reads the collector's percent without changing it.
func currentGCPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// TestGCPercentKeepsTheHeadroom: for random live heaps and headrooms, the
// percent is within [25, 100], the default's for a heap within the
// headroom, and otherwise lets the heap grow by the headroom (to within a
// percent's rounding) unless that is under a quarter of the heap.
func TestGCPercentKeepsTheHeadroom(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 0))
	for range 10000 {
		live := r.Uint64N(1 << 34)
		headroom := 1 + r.Uint64N(1<<26)
		p := gcPercent(live, headroom)
		grow := float64(live) * float64(p) / 100
		switch {
		case p < 25 || p > 100:
			t.Fatalf("seed %d: live %d, headroom %d: percent %d, outside [25, 100]", seed, live, headroom, p)
		case live <= headroom && p != 100:
			t.Fatalf("seed %d: live %d within headroom %d: percent %d, want the default 100", seed, live, headroom, p)
		case live > headroom && p > 25 && (grow > float64(headroom) || grow < float64(headroom)-float64(live)/100):
			t.Fatalf("seed %d: live %d, headroom %d: percent %d lets the heap grow %.0f bytes", seed, live, headroom, p, grow)
		case p == 25 && live > 0 && float64(headroom) > float64(live)/4+float64(live)/100:
			t.Fatalf("seed %d: live %d, headroom %d: percent 25 though the headroom is more than a quarter", seed, live, headroom)
		}
	}
}

// TestPaceGCFollowsTheLiveHeap: paced with a headroom of 1 MB, a live heap
// of 32 MB collects at 25 percent after the next collections, and stop
// puts the percent back; a GOGC in the environment is left alone.
func TestPaceGCFollowsTheLiveHeap(t *testing.T) {
	before := currentGCPercent()
	if stop := paceGC(1<<20, func(k string) string { return map[string]string{"GOGC": "50"}[k] }); currentGCPercent() != before {
		stop()
		t.Fatalf("GOGC set: the percent changed from %d to %d", before, currentGCPercent())
	}
	stop := paceGC(1<<20, func(string) string { return "" })
	live := make([][]byte, 32)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	deadline := time.Now().Add(5 * time.Second)
	for currentGCPercent() != 25 && time.Now().Before(deadline) {
		goruntime.GC()
		time.Sleep(time.Millisecond) // the finalizer runs after the collection
	}
	got := currentGCPercent()
	goruntime.KeepAlive(live)
	stop()
	if got != 25 {
		t.Errorf("a live heap of 32 MB over a headroom of 1 MB: percent %d, want 25", got)
	}
	if after := currentGCPercent(); after != before {
		t.Errorf("stopped: percent %d, want %d as before", after, before)
	}
}

// TestTightGCNarrowsTheHeadroomUntilRestored: paced with a headroom of
// 64 MB over a live heap of 8 MB and more (over 25 percent), tightGC
// collects at the tight headroom's percent (the least, 25) until every
// tightGC of the time is restored (a restore called twice counts once),
// and then the pacer's own is back; without a pacer, or once it stopped, tightGC leaves the
// percent alone.
func TestTightGCNarrowsTheHeadroomUntilRestored(t *testing.T) {
	before := currentGCPercent()
	tightGC()()
	if got := currentGCPercent(); got != before {
		t.Fatalf("no pacer: tightGC changed the percent from %d to %d", before, got)
	}
	// A usual headroom of 64 MB: whatever else the test process holds
	// (the package's other tests), under 256 MB it collects above 25.
	stop := paceGC(64<<20, func(string) string { return "" })
	defer stop()
	live := make([][]byte, 8)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	settle := func(want int) int {
		deadline := time.Now().Add(5 * time.Second)
		for currentGCPercent() != want && time.Now().Before(deadline) {
			goruntime.GC()
			time.Sleep(time.Millisecond) // the finalizer runs after the collection
		}
		return currentGCPercent()
	}
	// The live heap is 8 MB and what the test process holds besides.
	goruntime.GC()
	usual := settle(gcPercent(pacing.Load().live(), 64<<20))
	if usual <= 25 {
		t.Fatalf("paced at 64 MB over 8 MB live and more: percent %d, want over 25", usual)
	}
	restore := tightGC()
	if got := settle(25); got != 25 {
		t.Errorf("tight: percent %d, want 25 (1 MB over 8 MB is under the least)", got)
	}
	// Another run's end, tight at once: the first restored (twice), the
	// heap is still tight until the other is.
	other := tightGC()
	restore()
	restore()
	goruntime.GC()
	time.Sleep(time.Millisecond)
	if got := currentGCPercent(); got != 25 {
		t.Errorf("one of two restored: percent %d, want 25 still", got)
	}
	other()
	if got := settle(usual); got != usual {
		t.Errorf("restored: percent %d, want %d", got, usual)
	}
	goruntime.KeepAlive(live)
	stop()
	if got := currentGCPercent(); got != before {
		t.Errorf("stopped: percent %d, want %d as before", got, before)
	}
	tightGC()()
	if got := currentGCPercent(); got != before {
		t.Errorf("stopped pacer: tightGC changed the percent from %d to %d", before, got)
	}
}
