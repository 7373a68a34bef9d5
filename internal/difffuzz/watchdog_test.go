package difffuzz

import (
	"context"
	"errors"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// TestWatchdogMeasuresProgress: the watchdog's verdicts over random
// traces of a phase (CPU used and memory held at each poll, at random
// wall times): a phase is cancelled exactly when it used more than its CPU
// budget or stayed idle (no CPU) longer than its idle limit; a
// cancelled phase that goes on past its grace, a phase without a way to
// cancel it, and memory past the limit end the worker. A starved phase,
// slow in wall time but using CPU, is never stopped on wall time.
func TestWatchdogMeasuresProgress(t *testing.T) {
	lim := Limits{CPU: 10 * time.Second, Idle: 20 * time.Second, Memory: 1 << 30}
	rng := rand.New(rand.NewSource(1))
	for trial := 0; trial < 2000; trial++ {
		w := &watchdog{lim: lim}
		var exited string
		w.exit = func(msg string) { exited = msg }
		var cause error
		cancellable := rng.Intn(4) > 0
		var cancel context.CancelCauseFunc
		if cancellable {
			cancel = func(err error) {
				if cause == nil {
					cause = err
				}
			}
		}
		now, cpu := time.Unix(1000, 0), time.Duration(rng.Int63n(int64(time.Hour)))
		w.start("run under typical", cancel, func() int { return 3 })
		w.mu.Lock()
		w.cpu0, w.lastCPU, w.lastAt = cpu, cpu, now
		w.mu.Unlock()
		cpu0, lastProgress, progressCPU := cpu, now, cpu
		var cancelledAt time.Time
		for step := 0; step < 200 && exited == ""; step++ {
			// a poll every 0.2 s of wall time, or much later on a busy machine
			now = now.Add(time.Duration(200+rng.Intn(3)*rng.Intn(5000)) * time.Millisecond)
			var d time.Duration
			switch rng.Intn(3) {
			case 0: // idle
			case 1: // starved: a little CPU
				d = idleCPU + time.Duration(rng.Intn(30))*time.Millisecond
			case 2: // busy
				d = time.Duration(rng.Intn(400)) * time.Millisecond
			}
			cpu += d
			mem := uint64(rng.Intn(1 << 20))
			if rng.Intn(500) == 0 {
				mem = lim.Memory + 1
			}
			wasCancelled := cause != nil
			w.poll(now, cpu, mem)
			if cpu-progressCPU >= idleCPU { // progress: idleCPU since the last
				lastProgress, progressCPU = now, cpu
			}
			over := cpu-cpu0 > lim.CPU || now.Sub(lastProgress) > lim.Idle
			switch {
			case mem > lim.Memory:
				if !strings.HasPrefix(exited, "memory: run under typical went past the memory limit") {
					t.Fatalf("trial %d: memory past the limit, but the worker goes on (%q)", trial, exited)
				}
			case wasCancelled:
				// in its grace: it may end the worker only once the grace is spent
				if exited != "" && !strings.HasSuffix(exited, "nor when cancelled") {
					t.Fatalf("trial %d: %q", trial, exited)
				}
				if exited != "" && now.Sub(cancelledAt) < 0 {
					t.Fatalf("trial %d: ended before the grace", trial)
				}
			case !cancellable && over:
				if !strings.HasPrefix(exited, "hang: run under typical did not end") {
					t.Fatalf("trial %d: no cancel and over its limits, but the worker goes on (%q)", trial, exited)
				}
			case over:
				var h hangError
				if !errors.As(cause, &h) || !strings.Contains(h.msg, "(3 model calls made)") {
					t.Fatalf("trial %d: over its limits (CPU %s, idle %s) and not cancelled: %v", trial, cpu-cpu0, now.Sub(lastProgress), cause)
				}
				cancelledAt = now
			default:
				if cause != nil || exited != "" {
					t.Fatalf("trial %d: stopped within its limits (CPU %s, idle %s): %v %q", trial, cpu-cpu0, now.Sub(lastProgress), cause, exited)
				}
			}
		}
	}
	// between phases nothing is measured
	w := &watchdog{lim: lim, exit: func(msg string) { t.Fatalf("ended between phases: %s", msg) }}
	w.poll(time.Now(), time.Hour, lim.Memory*2)
}

// TestWatchdogVerdict: a worker's last line read back as the check's
// verdict, a hang of that profile's run.
func TestWatchdogVerdict(t *testing.T) {
	out := "some log\n" + watchdogMark + "hang: run under maximal did not end: it used 1m0s of CPU (200 model calls made)\n"
	v, ok := watchdogVerdict(out)
	if !ok || v.Classify() != ClassHang || v.Runs[0].Profile != Maximal || !strings.Contains(v.Runs[0].Error, "1m0s of CPU") {
		t.Fatalf("%v %+v", ok, v)
	}
	v, ok = watchdogVerdict(watchdogMark + "memory: validate went past the memory limit: 3000 MB in use, the limit is 2048 MB\n")
	if !ok || v.Classify() != ClassHang || v.Runs[0].Profile != "" {
		t.Fatalf("%v %+v", ok, v)
	}
	if _, ok := watchdogVerdict("panic: boom\n"); ok {
		t.Fatal("a panic read as the watchdog's")
	}
}
