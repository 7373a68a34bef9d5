package difffuzz

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"time"
)

// A worker's watchdog decides when a check does not end, by the progress
// the check makes rather than by wall time, which a busy machine stretches
// (a run of research-review took 14 s at a load of 28 and was once taken
// for a hang). What it measures is the worker's CPU time: a worker checks
// one mutant at a time, so that is the check's. A phase (validating the
// mutant, or one run) does not end when
//   - it used more than its CPU budget (a loop that computes for ever), or
//   - it used no CPU for a long stretch of wall time (it waits on
//     something that never comes: a run's replies are made in-process and
//     its sleeps return at once, so a run never waits on the world), or
//   - the worker's memory went past its limit (a loop that builds a value
//     for ever: unchecked, it once took 24 GB and the machine with it).
//
// A run is then cancelled, with the reason as its context's cause; a run
// that does not end within a further grace (CPU or idle) after that, and
// validate (which takes no context), end the worker: it writes a
// watchdogMark line on its stderr saying why, which the pool reads.

// watchdogMark starts the line a worker writes before ending on a hang or
// on memory.
const watchdogMark = "difffuzz-watchdog: "

// Limits are a worker's watchdog's limits.
type Limits struct {
	// CPU is a phase's CPU budget; Idle the wall time without CPU use
	// after which it is blocked; Memory the worker's heap limit.
	CPU, Idle time.Duration
	Memory    uint64
}

// idleCPU is less CPU than a phase that progresses uses in a poll: a
// blocked one uses next to none (the Go runtime's own wakeups).
const idleCPU = 20 * time.Millisecond

// hangError is a phase's cancellation cause: it did not end.
type hangError struct{ msg string }

func (h hangError) Error() string { return h.msg }

type watchdog struct {
	lim  Limits
	mu   sync.Mutex
	name string // the phase under way ("" between phases)
	// cpu0 is the CPU used when the phase started; lastCPU, lastAt when it
	// last progressed
	cpu0, lastCPU time.Duration
	lastAt        time.Time
	cancel        context.CancelCauseFunc
	cancelled     string // why the phase was cancelled, once it was
	calls         func() int
	exit          func(msg string)
}

func newWatchdog(lim Limits) *watchdog {
	w := &watchdog{lim: lim}
	w.exit = func(msg string) {
		fmt.Fprintln(os.Stderr, watchdogMark+msg)
		os.Exit(3)
	}
	if lim.Memory > 0 {
		// the collector works harder near the limit, so garbage alone
		// does not reach it
		debug.SetMemoryLimit(int64(lim.Memory * 3 / 4))
	}
	return w
}

// start begins a phase; cancel (nil for validate) stops it; calls, when
// not nil, counts its model calls for the messages.
func (w *watchdog) start(name string, cancel context.CancelCauseFunc, calls func() int) {
	if w == nil {
		return
	}
	cpu := processCPU()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.name, w.cpu0, w.lastCPU, w.lastAt, w.cancel, w.cancelled, w.calls = name, cpu, cpu, time.Now(), cancel, "", calls
}

// end ends the phase under way.
func (w *watchdog) end() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.name, w.cancel, w.calls = "", nil, nil
}

// run polls until ctx ends.
func (w *watchdog) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.poll(time.Now(), processCPU(), heapBytes())
		}
	}
}

// poll checks the phase under way at now, with the worker's CPU time and
// memory then.
func (w *watchdog) poll(now time.Time, cpu time.Duration, mem uint64) {
	w.mu.Lock()
	name := w.name
	if name == "" {
		w.mu.Unlock()
		return
	}
	if cpu-w.lastCPU >= idleCPU {
		w.lastCPU, w.lastAt = cpu, now
	}
	used, idle := cpu-w.cpu0, now.Sub(w.lastAt)
	calls := ""
	if w.calls != nil {
		calls = fmt.Sprintf(" (%d model calls made)", w.calls())
	}
	why := ""
	switch {
	case w.lim.Memory > 0 && mem > w.lim.Memory:
		why = fmt.Sprintf("%s went past the memory limit: %d MB in use, the limit is %d MB%s", name, mem>>20, w.lim.Memory>>20, calls)
		w.mu.Unlock()
		w.exit("memory: " + why)
		return
	case w.lim.CPU > 0 && used > w.lim.CPU:
		why = fmt.Sprintf("%s did not end: it used %s of CPU%s", name, used.Round(time.Second), calls)
	case w.lim.Idle > 0 && idle > w.lim.Idle:
		why = fmt.Sprintf("%s did not end: it used no CPU for %s, blocked%s", name, idle.Round(time.Second), calls)
	}
	if why == "" {
		w.mu.Unlock()
		return
	}
	if w.cancel == nil || w.cancelled != "" {
		if w.cancelled != "" {
			why = w.cancelled + ", nor when cancelled"
		}
		w.mu.Unlock()
		w.exit("hang: " + why)
		return
	}
	// cancel, and give the phase a grace of a fifth of its budget (CPU or
	// idle) to end
	w.cancel(hangError{why})
	w.cancelled = why
	w.cpu0, w.lastCPU, w.lastAt = cpu-w.lim.CPU*4/5, cpu, now.Add(-w.lim.Idle*4/5)
	w.mu.Unlock()
}

var heapSamples = []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}

// heapBytes is the memory the Go runtime holds (what it mapped, less what
// it gave back).
func heapBytes() uint64 {
	s := make([]metrics.Sample, len(heapSamples))
	copy(s, heapSamples)
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}

// watchdogVerdict is the verdict of a check whose worker ended on its
// watchdog, from the worker's output (false when it holds no mark).
func watchdogVerdict(output string) (Verdict, bool) {
	i := strings.LastIndex(output, watchdogMark)
	if i < 0 {
		return Verdict{}, false
	}
	msg := strings.TrimSpace(output[i+len(watchdogMark):])
	if j := strings.IndexByte(msg, '\n'); j >= 0 {
		msg = msg[:j]
	}
	o := Outcome{Status: "hang", Error: msg}
	// "memory: run under PROFILE ..." or "hang: run under PROFILE ..."
	_, rest, _ := strings.Cut(msg, ": ")
	if p, ok := strings.CutPrefix(rest, "run under "); ok {
		o.Profile = Profile(strings.Fields(p)[0])
	}
	return Verdict{Runs: []Outcome{o}}, true
}
