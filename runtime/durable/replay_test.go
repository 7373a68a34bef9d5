package durable

import (
	"os"
	"strings"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/debate-runner/runner/nodes"
)

// recordedHistory is a completed run workflow's history recorded on a
// Temporal development server (cmd/runner TestTemporalReplayHistory with
// RUNNER_UPDATE_HISTORY=1 records it again).
const recordedHistory = "testdata/run-history.json"

func replay(t *testing.T, run any) error {
	t.Helper()
	if _, err := os.Stat(recordedHistory); err != nil {
		t.Fatalf("the recorded history is missing: %v", err)
	}
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: DataConverter()})
	if err != nil {
		t.Fatal(err)
	}
	r.RegisterWorkflowWithOptions(run, workflow.RegisterOptions{Name: RunWorkflowName})
	return r.ReplayWorkflowHistoryFromJSONFile(nil, recordedHistory)
}

// TestReplayRecordedRunHistory replays a recorded run against the current
// workflow code: a change to the engine or the workflow that makes other
// commands (another call order, another activity, a timer) would break
// every run in flight when workers are upgraded, and fails here first. If
// the change is meant, record the history again (see recordedHistory) and
// say in the commit that running workflows must drain before the upgrade.
func TestReplayRecordedRunHistory(t *testing.T) {
	wf := &Workflows{Registry: nodes.Registry()}
	if err := replay(t, wf.Run); err != nil {
		t.Fatalf("the recorded run no longer replays on this workflow code: %v", err)
	}
}

// TestReplayNoticesOtherCommands: the replay fails when the workflow code
// makes commands the history did not record, so the test above can fail.
func TestReplayNoticesOtherCommands(t *testing.T) {
	other := func(ctx workflow.Context, in RunInput) (RunOutcome, error) {
		if err := workflow.Sleep(ctx, 1); err != nil {
			return RunOutcome{}, err
		}
		return RunOutcome{}, nil
	}
	err := replay(t, other)
	// TMPRL1100 is the SDK's code for nondeterminism.
	if err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
		t.Fatalf("a workflow that sleeps instead of calling replayed as %v; want a nondeterminism error", err)
	}
}
