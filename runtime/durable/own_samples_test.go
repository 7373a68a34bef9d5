package durable

import (
	"context"
	"strings"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/sweep"
)

// TestCacheScopeReachesTheWorkers: a run of a sweep that keeps its samples
// its own (a cache scope) is served nothing from a worker's cache that a
// run without the scope put there, nor serves it; runs of one scope share.
func TestCacheScopeReachesTheWorkers(t *testing.T) {
	srv := llmtest.New(t, runtest.AnswerSeven)
	cache := runtest.NewMemCache()
	plan := runtest.RoundsPlan(t, "0.7")
	seed := int64(42)
	run := func(scope string) {
		t.Helper()
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		Register(env, &Workflows{Registry: nodes.Registry()}, &Activities{Getenv: runtest.Env(srv.URL, "k"), Cache: cache})
		b, err := NewBundle(plan, nodes.Registry(), "")
		if err != nil {
			t.Fatal(err)
		}
		opts := runtime.Options{Launch: launch.Launch{Given: launch.Given{Inputs: []string{"question=What is 3+4?"}, Sets: []string{"max_rounds=3"}, Seed: &seed}, Cache: cache}}
		opts.CacheScope = scope
		in, err := NewRunInput(plan, b, opts, "run-1", "")
		if err != nil {
			t.Fatal(err)
		}
		env.ExecuteWorkflow(RunWorkflowName, in)
		if err := env.GetWorkflowError(); err != nil || !env.IsWorkflowCompleted() {
			t.Fatalf("run workflow: %v", err)
		}
	}
	for i, tc := range []struct {
		scope string
		sent  int
	}{{"", 9}, {"sweep-a", 9}, {"sweep-a", 0}, {"sweep-b", 9}, {"", 0}} {
		before := srv.Count()
		run(tc.scope)
		if got := srv.Count() - before; got != tc.sent {
			t.Errorf("run %d (scope %q) sent %d calls, want %d", i+1, tc.scope, got, tc.sent)
		}
	}
}

// TestOwnSamplesRefusedOnTemporal: a sweep on Temporal cannot keep its
// samples its own yet; it is refused (exit 2) before anything is
// submitted, not run with its samples shared after all.
func TestOwnSamplesRefusedOnTemporal(t *testing.T) {
	_, _, err := Executor{}.StartSweep(context.Background(), runtest.RoundsPlan(t, "0.7"), nil, sweep.Options{OwnSamples: true, Repeat: 2})
	if exitcode.Of(err) != exitcode.Usage || err == nil || !strings.Contains(err.Error(), "--own-samples is not offered with --temporal") {
		t.Errorf("StartSweep with OwnSamples: %v (exit %d)", err, exitcode.Of(err))
	}
}
