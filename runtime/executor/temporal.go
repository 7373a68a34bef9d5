package executor

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/durable"
	"github.com/debate-runner/runner/runtime/sweep"
)

// temporal submits runs to Temporal and records them here as they go
// (durable.Executor): the run directory, its journal and its resume are a
// local run's.
type temporal struct{}

func (temporal) Capabilities() Capabilities {
	return Capabilities{Records: true, Sweeps: true, Resumes: true}
}

func (temporal) Validate(l *Launch) error {
	if l.Run.ReplayFrom != "" {
		return exitcode.Errorf(exitcode.Usage, "--temporal: a replay sends nothing; drop --temporal")
	}
	return nil
}

// dial connects to Temporal as l says, and the executor that submits
// through the connection.
func dial(ctx context.Context, t Temporal) (client.Client, durable.Executor, error) {
	cl, err := durable.Dial(ctx, t.Connect)
	if err != nil {
		return nil, durable.Executor{}, err
	}
	x := durable.Executor{Client: cl, Address: t.Address, Namespace: t.Namespace, TaskQueue: t.TaskQueue, Heartbeat: t.Heartbeat, Version: t.Version}
	return cl, x, nil
}

func (temporal) Start(ctx context.Context, l *Launch) (Handle, error) {
	opts := l.Run
	// The run's folder gets the workflow's record before its calls.
	opts.EarlyCalls = false
	bundle, err := durable.Submittable(l.Plan, l.Registry, &opts)
	if err != nil {
		return nil, err
	}
	cl, x, err := dial(ctx, l.Temporal)
	if err != nil {
		return nil, err
	}
	addr := l.Temporal.Address
	if l.Sweep.Sweeping() {
		so, err := l.Sweep.Options(opts)
		if err != nil {
			cl.Close()
			return nil, err
		}
		id, start, err := x.StartSweep(ctx, l.Plan, bundle, so)
		if err != nil {
			cl.Close()
			return nil, err
		}
		x.WarnNoBuild(ctx, l.Out.Tell)
		if !l.Out.Quiet {
			l.Out.Tell.Say("temporal", map[string]string{"address": addr, "workflow_id": id}, fmt.Sprintf("submitted to Temporal at %s as workflow %s", addr, id))
		}
		sl := *l
		sl.Run = opts
		h, err := startSweep(&sl, start)
		if err != nil {
			cl.Close()
			return nil, err
		}
		h.close = func() { cl.Close() }
		return h, nil
	}
	r, rec, err := x.StartRun(ctx, l.Plan, bundle, opts)
	if err != nil {
		cl.Close()
		return nil, err
	}
	x.WarnNoBuild(ctx, l.Out.Tell)
	l.Out.Tell.Say("temporal", rec, fmt.Sprintf("submitted to Temporal at %s as workflow %s", addr, rec.WorkflowID))
	return closing(started(l, r, verify(x, rec.WorkflowID)), cl), nil
}

// verify checks a run recorded here against its workflow's outcome.
func verify(x durable.Executor, id string) func(context.Context, *runtime.Run, error) error {
	return func(ctx context.Context, r *runtime.Run, err error) error { return x.Verify(ctx, id, r, err) }
}

// Owns a run directory that records a workflow (durable.ReadRecord); a
// sweep directory is resumed as a sweep, whose runs say how each is made.
func (temporal) Owns(dir string) (bool, error) {
	if sweep.IsSweepDir(dir) {
		return false, nil
	}
	_, ok, err := durable.ReadRecord(dir)
	return ok, err
}

// Resume follows a run submitted to Temporal again: answers are passed
// on, failed calls tried again, and the run directory completed.
func (temporal) Resume(ctx context.Context, dir string, l *Launch) (Handle, error) {
	if l.Run.Resample {
		return nil, exitcode.Errorf(exitcode.Usage, "--resample: the run is made on Temporal, whose workers try its failed calls again on resume; drop --resample")
	}
	rec, _, err := durable.ReadRecord(dir)
	if err != nil {
		return nil, err
	}
	if l.Run.ContextDir != "" {
		return nil, exitcode.Errorf(exitcode.Usage, "--context %s: the run is made on Temporal, whose workers read the context folder as it was when the run was submitted; drop --context", l.Run.ContextDir)
	}
	rec.WarnOtherBuild(l.Temporal.Version, l.Out.Tell)
	t := Temporal{
		Connect:   durable.Connect{Address: rec.Address, Namespace: rec.Namespace, Log: l.Temporal.Log, APIKey: l.Temporal.APIKey},
		TaskQueue: rec.TaskQueue, Version: l.Temporal.Version,
	}
	cl, x, err := dial(ctx, t)
	if err != nil {
		return nil, err
	}
	r, err := x.Resume(ctx, dir, rec, l.Registry, l.Run)
	if err != nil {
		cl.Close()
		return nil, err
	}
	return closing(&runHandle{r: r, out: l.Out, verify: verify(x, rec.WorkflowID)}, cl), nil
}

// closing closes the connection to Temporal once the run ends.
func closing(h *runHandle, cl client.Client) Handle { return &closingHandle{runHandle: h, cl: cl} }

type closingHandle struct {
	*runHandle
	cl client.Client
}

func (h *closingHandle) Wait(ctx context.Context) error {
	defer h.cl.Close()
	return h.runHandle.Wait(ctx)
}
