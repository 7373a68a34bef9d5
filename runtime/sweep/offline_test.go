package sweep

import (
	"context"
	"testing"

	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
)

// TestOfflineSweepNeedsNoKey: a sweep whose models are all put in place
// by the offline model (runner run --offline --repeat N, or the view's
// form) runs with no key and no server: the endpoints checked before it
// starts are those its runs call, not the spec's own. Without the
// offline models the same sweep is refused for the missing key.
func TestOfflineSweepNeedsNoKey(t *testing.T) {
	plan := sweepPlan(t, "0.7")
	offline, err := args.Offline(plan)
	if err != nil {
		t.Fatal(err)
	}
	noKey := func(string) string { return "" }
	o := runtime.Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}, Sets: []string{"max_rounds=1"}}},
		Settings: runtime.Settings{Getenv: noKey, RunsDir: t.TempDir()},
	}
	if _, err := Sweep(context.Background(), plan, Options{Run: o, Repeat: 2, Parallel: 1}); err == nil {
		t.Fatal("a sweep of the spec's own endpoint ran without its key")
	}
	o.Models = offline
	sum, err := Sweep(context.Background(), plan, Options{Run: o, Repeat: 2, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Completed != 2 {
		t.Errorf("%d of 2 offline runs completed: %+v", sum.Completed, sum.Runs)
	}
	for _, r := range sum.Runs {
		if r.Status != result.StatusCompleted {
			t.Errorf("run %d: %s %s", r.Index, r.Status, r.Error)
		}
	}
}
