package durable

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/debate-runner/runner/runtime/result"
)

// SweepInput is what a sweep workflow is started with: the runs of a
// sweep or dataset, which share the spec.
type SweepInput struct {
	Bundle *Bundle    `json:"bundle"`
	Runs   []RunInput `json:"runs"`
	// Parallel bounds the runs going at once (the sweep's --parallel).
	Parallel int `json:"parallel"`
}

// SweepOutcome counts how a sweep's runs ended.
type SweepOutcome struct {
	Completed int `json:"completed"`
	// Inconclusive runs ran to their end without reaching their purpose.
	Inconclusive int `json:"inconclusive,omitempty"`
	Failed       int `json:"failed"`
}

// ChildID is the workflow id of a sweep's run (index from 1).
func ChildID(sweepID string, index int) string {
	return fmt.Sprintf("%s/%d", sweepID, index)
}

// Sweep is the sweep workflow: one child run workflow per run, at most
// Parallel at once, in order. The client that submitted it follows each
// child and writes the sweep's runs and summary as a local sweep does.
func (w *Workflows) Sweep(ctx workflow.Context, in SweepInput) (SweepOutcome, error) {
	parallel := max(in.Parallel, 1)
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	var out SweepOutcome
	running, next := 0, 0
	sel := workflow.NewSelector(ctx)
	for next < len(in.Runs) || running > 0 {
		for running < parallel && next < len(in.Runs) {
			run := in.Runs[next]
			run.Bundle = in.Bundle
			next++
			// The run's calls are local activities (runLocalCalls): its
			// workflow task timeout is how soon they go to another
			// worker when its own is lost.
			cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: ChildID(id, next), WorkflowTaskTimeout: TaskTimeout(run.Calls.Heartbeat)})
			f := workflow.ExecuteChildWorkflow(cctx, RunWorkflowName, run)
			running++
			sel.AddFuture(f, func(f workflow.Future) {
				running--
				var o RunOutcome
				switch err := f.Get(ctx, &o); {
				case err == nil && o.Status == result.StatusCompleted:
					out.Completed++
				case err == nil && o.Status == result.StatusInconclusive:
					out.Inconclusive++
				default:
					out.Failed++
				}
			})
		}
		sel.Select(ctx)
	}
	return out, nil
}
