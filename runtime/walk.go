package runtime

import (
	"context"
	"fmt"

	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/value"
)

// walkObserver is told what the flow walker (flow.go, fanout.go) is about
// to do, and decides what replies or a policy would decide: how many
// iterations a loop walks, whether its until ends it, which items a
// foreach walks, which branches of an if are taken, whether a node's
// failure stops the walk, whether a model call is made. The walker itself
// knows no kind of run: a run's observer (liveWalk) follows the spec, a dry
// run's (dryState) takes the worst case and keeps its accounting, a path
// check's (pathWalk) walks one path of a policy.
type walkObserver interface {
	// loop is told a loop is about to run up to max iterations; it returns
	// how many the walker walks, and the span told of each.
	loop(s *spec.FlowStep, max int) (int, walkSpan)
	// until is asked, after iteration i of max, whether the loop ends
	// there; holds evaluates the loop's until.
	until(s *spec.FlowStep, i, max int, holds func() (any, error)) (bool, error)
	// breaks is asked, after a step of iteration i of a loop with a
	// break, whether the loop ends there; holds evaluates the break.
	breaks(s *spec.FlowStep, i int, holds func() (any, error)) (bool, error)
	// foreach is given the items a foreach's list evaluated to (or the
	// error evaluating it) and returns the items the walker walks.
	foreach(s *spec.FlowStep, items []any, err error) ([]any, error)
	// items is told a foreach is about to walk n items, one by one; the
	// span is told of each.
	items(s *spec.FlowStep, n int) walkSpan
	// oneByOne says whether a concurrent foreach's iterations are walked
	// one after the other.
	oneByOne() bool
	// branches are the branches of an if the walker walks, in order: true
	// for do, false for else; cond evaluates its condition.
	branches(s *spec.FlowStep, cond func() (any, error)) ([]bool, error)
	// node is told a node is about to execute in host h; the watch it
	// returns sees the execution end.
	node(n *spec.NodePlan, h *host) nodeWatch
	// call is told a model call is about to be made: an error stops it.
	call() error
}

// walkSpan follows the iterations of a loop or foreach: iterated is told
// each iteration's end (i counts from 1) with the error that ended the
// walk in it, if one did.
type walkSpan interface {
	iterated(i int, err error)
}

// nodeWatch sees one execution of a node end: it may change how it ended
// (a dry run goes on past a node that failed on stand-ins).
type nodeWatch interface {
	ended(ctx context.Context, res value.NodeResult, err error) (value.NodeResult, error)
}

// observer is the run's walk observer: its own (dry run, path check) or
// the live one.
func (r *Run) observer() walkObserver {
	if r.walk != nil {
		return r.walk
	}
	return liveWalk{r}
}

// liveWalk is a run's observer: the spec decides.
type liveWalk struct{ r *Run }

type noSpan struct{}

func (noSpan) iterated(int, error) {}

type noWatch struct{}

func (noWatch) ended(_ context.Context, res value.NodeResult, err error) (value.NodeResult, error) {
	return res, err
}

func (liveWalk) loop(_ *spec.FlowStep, max int) (int, walkSpan) { return max, noSpan{} }

func (w liveWalk) until(s *spec.FlowStep, _, _ int, holds func() (any, error)) (bool, error) {
	v, err := holds()
	if err != nil {
		return false, fmt.Errorf("%s: loop until (%s): %w", posString(w.r.Plan, s.Pos), s.Until.Source, spec.ConditionError(err))
	}
	b, _ := v.(bool)
	return b, nil
}

func (w liveWalk) breaks(s *spec.FlowStep, _ int, holds func() (any, error)) (bool, error) {
	v, err := holds()
	if err != nil {
		return false, fmt.Errorf("%s: loop break (%s): %w", posString(w.r.Plan, s.Pos), s.Break.Source, spec.ConditionError(err))
	}
	b, _ := v.(bool)
	return b, nil
}

func (w liveWalk) foreach(s *spec.FlowStep, items []any, err error) ([]any, error) {
	if err != nil {
		return nil, fmt.Errorf("%s: foreach in (%s): %w", posString(w.r.Plan, s.Pos), s.In.Source, err)
	}
	return items, nil
}

func (liveWalk) items(*spec.FlowStep, int) walkSpan { return noSpan{} }

func (liveWalk) oneByOne() bool { return false }

func (w liveWalk) branches(s *spec.FlowStep, cond func() (any, error)) ([]bool, error) {
	v, err := cond()
	if err != nil {
		return nil, fmt.Errorf("%s: if (%s): %w", posString(w.r.Plan, s.Pos), s.Cond.Source, spec.ConditionError(err))
	}
	b, _ := v.(bool)
	return []bool{b}, nil
}

func (liveWalk) node(*spec.NodePlan, *host) nodeWatch { return noWatch{} }

func (liveWalk) call() error { return nil }
