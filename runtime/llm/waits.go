package llm

import (
	"context"
	"time"
)

// minReportedWait is the shortest wait for a limit worth telling: a rate
// limiter with tokens to spare still takes a few microseconds.
const minReportedWait = time.Millisecond

type waitsKey struct{}

// waitFunc is told of each wait for one of the endpoint's limits.
type waitFunc func(limit string, d time.Duration)

// WithWaits returns a context whose calls tell fn each time they wait for
// one of the endpoint's limits (max_concurrency, requests_per_minute,
// tokens_per_minute) and for how long; a tracer shows the waits.
func WithWaits(ctx context.Context, fn func(limit string, d time.Duration)) context.Context {
	return context.WithValue(ctx, waitsKey{}, waitFunc(fn))
}

func waitsOf(ctx context.Context) waitFunc {
	fn, _ := ctx.Value(waitsKey{}).(waitFunc)
	return fn
}

// report tells fn of a wait for limit that began at start, if it was long
// enough to matter.
func (fn waitFunc) report(limit string, start time.Time) {
	if fn == nil {
		return
	}
	if d := time.Since(start); d >= minReportedWait {
		fn(limit, d)
	}
}
