package runtime

import (
	"os"
	goruntime "runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// gcHeadroom is how far past the live heap the collector lets a paced
// process's heap grow before it collects (see PaceGC).
const gcHeadroom = 4 << 20

// gcTightHeadroom is the headroom of a paced process while a run writes
// its records (see tightGC).
const gcTightHeadroom = 1 << 20

// pacing is the pacer PaceGC started, while it paces.
var pacing atomic.Pointer[gcPacer]

// PaceGC has the collector let the heap grow a fixed few megabytes past
// what is live (gcHeadroom), rather than by the live heap again, for the
// rest of a command that makes a run (until stop is called): a long run's
// peak memory then grows with what it keeps, not with twice that. After
// each collection the percent (debug.SetGCPercent) is set to the headroom
// over the live heap, at most the default's 100 (a small heap collects as
// by default) and at least 25 (a heap past 16 MB: at most four times the
// default's collections, each of them of the same heap). A GOGC or
// GOMEMLIMIT in the environment is the user's choice and is left alone.
func PaceGC() (stop func()) {
	return paceGC(gcHeadroom, os.Getenv)
}

// gcPercent is the percent PaceGC sets for a live heap of live bytes.
func gcPercent(live, headroom uint64) int {
	if live == 0 {
		return 100
	}
	return int(max(25, min(100, headroom*100/live)))
}

type gcPacer struct {
	usual  uint64 // the headroom it was started with
	sample []metrics.Sample

	headroom uint64 // the headroom now: usual, or tighter (tightGC); under mu
	tight    int    // tightGC calls not yet restored; under mu

	mu      sync.Mutex
	stopped bool
	percent int // the percent last set
}

// gcSentinel is an object left unreachable for a collection to find: its
// finalizer runs after that collection, and paces the next. It holds a
// pointer, so the tiny allocator never shares its block with another.
type gcSentinel struct {
	p *gcPacer
}

func paceGC(headroom uint64, getenv func(string) string) (stop func()) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	p := &gcPacer{usual: headroom, headroom: headroom, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	p.percent = gcPercent(p.live(), headroom)
	prev := debug.SetGCPercent(p.percent)
	p.arm()
	pacing.Store(p)
	return func() {
		pacing.CompareAndSwap(p, nil)
		p.mu.Lock()
		defer p.mu.Unlock()
		if !p.stopped {
			p.stopped = true
			debug.SetGCPercent(prev)
		}
	}
}

// tightGC has the pacer, if one paces (PaceGC), let the heap grow only
// gcTightHeadroom past what is live, until the returned func is called
// (and every other tightGC's of the time: the runs of a sweep end in one
// process). For the work a run does after its last call (its result and
// reports built and written): its garbage is most of what it allocates,
// and at a few megabytes of live heap the usual headroom over it set a
// run's peak memory, not what the run keeps. The percent still stays at
// least 25 (see gcPercent), so a large heap collects as often as before.
// (The path check's walks, tight too, no longer set the peak once the end
// was: they only collected 16 times more in a run of 1,000 turns.)
func tightGC() (restore func()) {
	p := pacing.Load()
	if p == nil {
		return func() {}
	}
	p.tighten(1)
	var once sync.Once
	return func() { once.Do(func() { p.tighten(-1) }) }
}

// tighten counts a tightGC begun (+1) or ended (-1) and sets the headroom
// and the percent for it at once, so that a collection already due under
// the tighter headroom starts now.
func (p *gcPacer) tighten(by int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tight += by
	h := p.usual
	if p.tight > 0 {
		h = gcTightHeadroom
	}
	if p.stopped || p.headroom == h {
		return
	}
	p.headroom = h
	if pc := gcPercent(p.live(), h); pc != p.percent {
		p.percent = pc
		debug.SetGCPercent(pc)
	}
}

// live is the heap the last collection found live.
func (p *gcPacer) live() uint64 {
	metrics.Read(p.sample)
	if p.sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return p.sample[0].Value.Uint64()
}

func (p *gcPacer) arm() {
	goruntime.SetFinalizer(&gcSentinel{p: p}, func(s *gcSentinel) { s.p.collected() })
}

// collected sets the percent for the live heap a collection left, and
// waits for the next.
func (p *gcPacer) collected() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	if pc := gcPercent(p.live(), p.headroom); pc != p.percent {
		p.percent = pc
		debug.SetGCPercent(pc)
	}
	p.arm()
}
