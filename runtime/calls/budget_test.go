package calls

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
)

// TestLimitedLetsAdmittedCallsFinish: a call admitted within the budget
// goes on when a sibling's budget stop cancels its context (the reply
// would be lost and paid for again on resume), but stops at any other
// cancellation and at the run's own (Ctrl-C).
func TestLimitedLetsAdmittedCallsFinish(t *testing.T) {
	calls := 10
	budget := &Budget{BudgetPlan: spec.BudgetPlan{BudgetLimits: syntax.BudgetLimits{MaxCalls: &calls}}}
	started := make(chan struct{})
	release := make(chan struct{})
	waiting := StageFunc(func(ctx context.Context, c *Call) (kit.Reply, Source, error) {
		started <- struct{}{}
		select {
		case <-release:
			return kit.Reply{Content: "done"}, Network, nil
		case <-ctx.Done():
			return kit.Reply{}, Network, ctx.Err()
		}
	})
	stage := Limited(budget, waiting)
	run := func(ctx context.Context) chan error {
		done := make(chan error, 1)
		go func() {
			_, _, err := stage.Complete(ctx, &Call{Key: "k", Node: "n"})
			done <- err
		}()
		<-started
		return done
	}
	wait := func(done chan error) (error, bool) {
		select {
		case err := <-done:
			return err, true
		case <-time.After(200 * time.Millisecond):
			return nil, false
		}
	}

	t.Run("budget stop beside it", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(WithRoot(context.Background()))
		done := run(ctx)
		cancel(&BudgetError{Key: "other", Scope: "run", Limit: "max_calls"})
		if err, ended := wait(done); ended {
			t.Fatalf("the admitted call stopped at a sibling's budget stop: %v", err)
		}
		release <- struct{}{}
		if err := <-done; err != nil {
			t.Fatalf("the admitted call failed: %v", err)
		}
	})
	t.Run("then Ctrl-C", func(t *testing.T) {
		root, interrupt := context.WithCancel(context.Background())
		ctx, cancel := context.WithCancelCause(WithRoot(root))
		done := run(ctx)
		cancel(&BudgetError{Key: "other", Scope: "run", Limit: "max_calls"})
		interrupt()
		err := <-done
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Ctrl-C after a budget stop: %v, want context.Canceled", err)
		}
	})
	t.Run("another failure beside it", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		done := run(ctx)
		cancel(errors.New("a node failed"))
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("a sibling's failure: %v, want context.Canceled", err)
		}
	})
	if s := budget.Spent(); s.Calls != 1 {
		t.Errorf("spent %d calls; want the 1 that finished", s.Calls)
	}
}
