package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/spec"
)

// Embedded makes a run part of a program that owns its I/O, its clock and
// its concurrency: a durable workflow (runtime/durable), whose code is
// replayed from its history and so may not start goroutines, block on
// channels, read the clock or files, or write a journal. The run is the
// engine itself (the flow walk, the kinds, the call path up to Stage), but
// every model call is answered by Stage, nothing is written to disk, events
// go to Options.Observer alone, and concurrency, waits and time go through
// the fields below. Execute returns the result a run with a directory would
// write.
type Embedded struct {
	// ID is the run's id in its result.
	ID string
	// Stage answers every model call.
	Stage calls.Stage
	// Parallel runs the branches of kit.Host.Parallel; nil starts
	// goroutines (kit.Parallel).
	Parallel func(ctx context.Context, n int, f func(ctx context.Context, i int) error) error
	// Await blocks until ready reports true, letting other branches run
	// meanwhile (a branch waiting for a summary another branch makes); nil
	// waits on a channel.
	Await func(ctx context.Context, ready func() bool) error
	// Now is the run's clock; nil is time.Now.
	Now func() time.Time
}

// NewEmbedded prepares an embedded run of plan (see Embedded): inputs and
// vars are resolved as for any run (give values, not flags that read
// files), and nothing is written or sent but through e.
func NewEmbedded(plan *spec.Plan, opts Options, e Embedded) (*Run, error) {
	if e.Stage == nil {
		return nil, errors.New("an embedded run needs a stage that answers its calls")
	}
	r, err := newDetached(plan, opts, e.Stage)
	if err != nil {
		return nil, err
	}
	r.ID = e.ID
	r.emb = &e
	return r, nil
}

// now is the run's clock.
func (r *Run) now() time.Time {
	if r.emb != nil && r.emb.Now != nil {
		return r.emb.Now()
	}
	return time.Now()
}

// await waits until done is closed or ctx ends; an embedded run waits
// through its host.
func (r *Run) await(ctx context.Context, done <-chan struct{}) error {
	if r.emb != nil && r.emb.Await != nil {
		return r.emb.Await(ctx, func() bool {
			select {
			case <-done:
				return true
			default:
				return false
			}
		})
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
