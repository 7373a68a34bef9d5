package durable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/progress"
	"github.com/debate-runner/runner/runtime/study"
	"github.com/debate-runner/runner/spec"
)

// This file is what runner worker, runner run --temporal and runner
// resume do with Temporal around the executor: serve as a worker, bundle a
// run for submission, and tell the user what the workers' build means.

// Worker is a worker's setup (runner worker).
type Worker struct {
	Address, Namespace, TaskQueue string
	// Version is this runner's, the build the worker polls as.
	Version string
	// Activities make the calls (their Gates set unless LocalLimits).
	Activities *Activities
	// LocalLimits holds endpoints' limits for this worker alone.
	LocalLimits bool
	Registry    *spec.Registry
}

// Work makes the runs of w's task queue through cl until ctx ends: it
// registers the workflows and activities, starts polling, makes its build
// the current one of the task queue's deployment, and tells so.
func Work(ctx context.Context, cl client.Client, w Worker, t progress.Teller) error {
	wk := worker.New(cl, w.TaskQueue, WorkerOptions(w.TaskQueue, w.Version))
	if !w.LocalLimits {
		w.Activities.Gates = &Gates{Client: cl, TaskQueue: w.TaskQueue}
	}
	Register(wk, &Workflows{Registry: w.Registry}, w.Activities)
	if err := wk.Start(); err != nil {
		return exitcode.With(exitcode.Failure, fmt.Errorf("starting the worker on task queue %s at %s: %w", w.TaskQueue, w.Address, err))
	}
	defer wk.Stop()
	if err := Promote(ctx, cl, w.TaskQueue, w.Version); err != nil {
		return exitcode.With(exitcode.Failure, err)
	}
	t.Say("worker", map[string]string{"address": w.Address, "namespace": w.Namespace, "task_queue": w.TaskQueue, "build_id": w.Version},
		fmt.Sprintf("worker: polling task queue %s of namespace %s at %s as build %s", w.TaskQueue, w.Namespace, w.Address, w.Version))
	<-ctx.Done()
	return nil
}

// Submittable bundles a run of plan (with opts, whose ContextSnapshot it
// sets) for Temporal, or says why it cannot go there.
func Submittable(plan *spec.Plan, reg *spec.Registry, opts *runtime.Options) (*Bundle, error) {
	if len(plan.MCPServers) > 0 {
		// A workflow must not start processes or reach servers itself; MCP
		// calls as activities are not built yet.
		return nil, exitcode.With(exitcode.Usage, errors.New("--temporal: runs on Temporal do not serve the tools of mcp_servers yet; run this spec without --temporal"))
	}
	bundle, err := NewBundle(plan, reg, opts.ContextDir)
	if err != nil {
		return nil, exitcode.With(exitcode.Failure, err)
	}
	// The file tools run here too (the engine runs them between a call
	// and the next); they must answer as on the workers.
	opts.ContextSnapshot = bundle.Context
	return bundle, nil
}

// WarnNoBuild warns when no worker of x's build has polled the task queue
// within a few seconds: the run waits for one, since a run goes to
// workers of the runner version that submits it.
func (x Executor) WarnNoBuild(ctx context.Context, t progress.Teller) {
	for wait := 0; wait < 20; wait++ {
		if ok, err := HasBuild(ctx, x.Client, x.TaskQueue, x.Version); err != nil || ok {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
	t.Warn(fmt.Sprintf("no worker of runner %s has polled task queue %s yet: the run waits for one (a run goes to workers of the runner version that submits it)", x.Version, x.TaskQueue))
}

// WarnOtherBuild warns, on resume, when the run was submitted by another
// runner version than version: its workers make it, and this runner's
// record of it may differ.
func (rec Record) WarnOtherBuild(version string, t progress.Teller) {
	if rec.BuildID != "" && rec.BuildID != version {
		t.Warn(fmt.Sprintf("the run is made by workers of runner %s, the version that submitted it; this is runner %s, whose record of it differs if the two walk its flow differently", rec.BuildID, version))
	}
}

// Study makes the sweeps of a study (so) on Temporal through x: the study
// directory records where (temporal.json), so that a continued study goes
// on there, and x warns when no worker of its build polls yet.
func (x Executor) Study(ctx context.Context, so *study.Options, t progress.Teller) {
	so.Sweeps = Sweeps{X: x, Registry: so.Registry}
	so.OnOpen = func(dir string) error {
		return WriteRecord(dir, Record{Address: x.Address, Namespace: x.Namespace, TaskQueue: x.TaskQueue, BuildID: x.Version})
	}
	x.WarnNoBuild(ctx, t)
}
