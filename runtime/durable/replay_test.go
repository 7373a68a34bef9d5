package durable

import (
	"os"
	"strings"
	"testing"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/debate-runner/runner/nodes"
)

// recordedHistories are completed run workflows' histories recorded on a
// Temporal development server: one whose calls are activities, one whose
// calls are local activities (runLocalCalls; cmd/runner
// TestTemporalReplayHistory with RUNNER_UPDATE_HISTORY=1 records the
// newest again).
var recordedHistories = []string{"testdata/run-history.json", "testdata/run-history-local.json"}

// recordedGateHistories are gates' histories, recorded as recordedHistory
// is (cmd/runner TestTemporalReplayGateHistory): one of a gate of the token
// buckets, one of a gate that admits ahead (gateAdmitAhead). Each new
// version of the gate is recorded into a new file; the old ones stay.
var recordedGateHistories = []string{"testdata/gate-history.json", "testdata/gate-history-ahead.json"}

func replay(t *testing.T, file string, run any) error {
	t.Helper()
	return replayFile(t, file, RunWorkflowName, run)
}

func replayFile(t *testing.T, file, name string, wf any) error {
	t.Helper()
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the recorded history is missing: %v", err)
	}
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: DataConverter()})
	if err != nil {
		t.Fatal(err)
	}
	r.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: name})
	return r.ReplayWorkflowHistoryFromJSONFile(nil, file)
}

// TestReplayRecordedRunHistory replays a recorded run against the current
// workflow code: a change to the engine or the workflow that makes other
// commands (another call order, another activity, a timer) fails here
// first. Runs are pinned to the build that submitted them (deploy.go), so
// a meant change breaks no run in flight: record the history again (see
// recordedHistory) and say so in the commit. What stays forbidden is
// workflow code that decides differently on replay within one build.
func TestReplayRecordedRunHistory(t *testing.T) {
	wf := &Workflows{Registry: nodes.Registry()}
	for _, file := range recordedHistories {
		if err := replay(t, file, wf.Run); err != nil {
			t.Fatalf("the recorded run %s no longer replays on this workflow code: %v", file, err)
		}
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
	for _, file := range recordedHistories {
		err := replay(t, file, other)
		// TMPRL1100 is the SDK's code for nondeterminism.
		if err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
			t.Fatalf("a workflow that sleeps instead of calling replayed %s as %v; want a nondeterminism error", file, err)
		}
	}
}

// TestReplayRecordedGateHistory replays a recorded gate against the
// current gate code. Gates are not pinned: each new build's workers take
// over the gates in flight (deploy.go), so a change to the commands a
// gate makes must keep this passing (with workflow.GetVersion), not
// record the history again.
func TestReplayRecordedGateHistory(t *testing.T) {
	wf := &Workflows{Registry: nodes.Registry()}
	for _, file := range recordedGateHistories {
		if err := replayFile(t, file, GateWorkflowName, wf.Gate); err != nil {
			t.Fatalf("the recorded gate %s no longer replays on this workflow code: %v", file, err)
		}
		// And the replay can fail: a gate that first sleeps is another gate.
		other := func(ctx workflow.Context, st GateState) error {
			if err := workflow.Sleep(ctx, 1); err != nil {
				return err
			}
			return wf.Gate(ctx, st)
		}
		if err := replayFile(t, file, GateWorkflowName, other); err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
			t.Fatalf("a gate that sleeps first replayed %s as %v; want a nondeterminism error", file, err)
		}
	}
}
