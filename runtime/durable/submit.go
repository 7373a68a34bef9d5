package durable

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/spec"
)

// Register registers the workflows and the call activity with a worker (or
// a test environment). Runs and sweeps are pinned to the build they start
// on; gates, shared by every build, move to the current one (deploy.go).
func Register(r worker.Registry, wf *Workflows, acts *Activities) {
	pinned, upgrade := workflow.VersioningBehaviorPinned, workflow.VersioningBehaviorAutoUpgrade
	r.RegisterWorkflowWithOptions(wf.Run, workflow.RegisterOptions{Name: RunWorkflowName, VersioningBehavior: pinned})
	r.RegisterWorkflowWithOptions(wf.Sweep, workflow.RegisterOptions{Name: SweepWorkflowName, VersioningBehavior: pinned})
	r.RegisterWorkflowWithOptions(wf.Gate, workflow.RegisterOptions{Name: GateWorkflowName, VersioningBehavior: upgrade})
	r.RegisterActivityWithOptions(acts.Call, activity.RegisterOptions{Name: CallActivityName})
	r.RegisterActivityWithOptions(acts.CallLocal, activity.RegisterOptions{Name: CallLocalActivityName})
}

// NewRunInput is what a run of plan with opts is submitted as: inputs and
// vars are resolved here, where @PATH inputs can be read, and the seed is
// chosen as a local run chooses it, so that the workers walk the flow the
// local run would. bundle is the plan's (NewBundle); a sweep's runs share
// their sweep's and leave it nil.
func NewRunInput(plan *spec.Plan, bundle *Bundle, opts runtime.Options, runID, version string) (RunInput, error) {
	v, err := launch.Prepare(plan, opts.Given)
	if err != nil {
		return RunInput{}, err
	}
	values, err := Values{Inputs: v.Inputs, Vars: v.Vars, Expected: opts.Expected, Models: opts.Models}.Encode()
	if err != nil {
		return RunInput{}, err
	}
	seed := v.Seed
	return RunInput{
		RunID: runID, Version: version, Bundle: bundle, Values: values, Seed: seed,
		Sample: opts.Sample, Answers: opts.Answers, NoCache: opts.Cache == nil, CacheScope: opts.CacheScope,
		Flags: opts.Flags,
	}, nil
}
