package durable

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/nodes/tools"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/sweep"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/value"
)

// This file is the Temporal executor of the submitting machine: it submits
// a run (or a sweep) to Temporal and makes the run here as a local run is
// made, its calls answered from the workflow's history, so that the run
// directory, its journal and its resume are a local run's.

// Executor submits runs to a Temporal frontend.
type Executor struct {
	Client client.Client
	// Address, Namespace and TaskQueue say where the runs go (recorded in
	// each run's directory, for resume).
	Address, Namespace, TaskQueue string
	// Heartbeat is how long a call may go without news from its worker.
	Heartbeat time.Duration
	// Version is the runner version the workers must run: runs are pinned
	// to that build of the task queue's deployment (see StartOptions).
	Version string
}

// RunWorkflowID is the workflow of a run submitted from a run directory.
func RunWorkflowID(runID string) string { return "runner-run-" + runID }

// remote makes opts a run whose calls a Follower answers once it is set:
// the run connects to no endpoint, and questions answered at the terminal
// are passed on to the workflow.
func (x Executor) remote(opts *runtime.Options, id *string, f **Follower) {
	opts.Remote = calls.StageFunc(func(ctx context.Context, c *calls.Call) (kit.Reply, calls.Source, error) {
		return (*f).Complete(ctx, c)
	})
	if ask := opts.Ask; ask != nil {
		opts.Ask = func(ctx context.Context, q value.Question) (string, error) {
			v, err := ask(ctx, q)
			if err != nil {
				return v, err
			}
			if err := x.Client.SignalWorkflow(ctx, *id, "", SignalAnswers, map[string]string{q.ID: v}); err != nil {
				return "", fmt.Errorf("passing the answer to question %s to workflow %s: %w", q.ID, *id, err)
			}
			return v, nil
		}
	}
}

// StartRun submits a run of plan with opts (opts.ContextSnapshot set from
// the bundle) and starts it here: the run directory records the workflow
// it follows. It returns the run, to be executed, and the workflow's id.
func (x Executor) StartRun(ctx context.Context, plan *spec.Plan, bundle *Bundle, opts runtime.Options) (*runtime.Run, Record, error) {
	var (
		id string
		f  *Follower
	)
	x.remote(&opts, &id, &f)
	r, err := runtime.Start(plan, opts)
	if err != nil {
		return nil, Record{}, err
	}
	id = RunWorkflowID(r.ID)
	in, err := NewRunInput(plan, bundle, opts, r.ID, x.Version)
	if err != nil {
		return nil, Record{}, err
	}
	in.Calls.Heartbeat = x.Heartbeat
	so := StartOptions(id, x.TaskQueue, x.Version)
	so.WorkflowTaskTimeout = TaskTimeout(x.Heartbeat)
	if _, err := x.Client.ExecuteWorkflow(ctx, so, RunWorkflowName, in); err != nil {
		return nil, Record{}, exitcode.With(exitcode.Failure, fmt.Errorf("submitting the run to Temporal at %s: %w", x.Address, err))
	}
	rec := Record{Address: x.Address, Namespace: x.Namespace, TaskQueue: x.TaskQueue, WorkflowID: id, BuildID: x.Version}
	if bundle.Context != nil {
		// Written before the record that names it, so that a record never
		// names a snapshot that is not there.
		if err := WriteContext(r.Dir, bundle.Context); err != nil {
			return nil, rec, exitcode.With(exitcode.Failure, err)
		}
		rec.ContextFile = ContextFile
	}
	if err := WriteRecord(r.Dir, rec); err != nil {
		return nil, rec, exitcode.With(exitcode.Failure, err)
	}
	f = Follow(ctx, x.Client, id, 0)
	return r, rec, nil
}

// StartSweep submits a sweep (or dataset, or repeats) as one sweep
// workflow with a child run workflow per run, and returns the workflow's
// id and the function that starts each run here (sweep.Options.Start), each
// recorded from its child's history: the sweep directory, its runs and its
// summary are a local sweep's.
func (x Executor) StartSweep(ctx context.Context, plan *spec.Plan, bundle *Bundle, so sweep.Options) (string, func(int, *spec.Plan, runtime.Options) (*runtime.Run, error), error) {
	if so.OwnSamples {
		// The scope of a sweep's own samples is its directory's id, which
		// exists only once the runs are submitted: refused rather than
		// run with samples shared after all.
		return "", nil, exitcode.Errorf(exitcode.Usage, "--own-samples is not offered with --temporal yet: run the sweep locally, or without --own-samples (its samples are then shared through the workers' caches)")
	}
	all, err := sweep.RunOptions(plan, so)
	if err != nil {
		return "", nil, err
	}
	id := fmt.Sprintf("runner-sweep-%s-%s", plan.Name, time.Now().UTC().Format("20060102T150405.000Z"))
	in := SweepInput{Bundle: bundle, Parallel: so.Parallel}
	for i, o := range all {
		ri, err := NewRunInput(plan, nil, o, ChildID(id, i+1), x.Version)
		if err != nil {
			return "", nil, err
		}
		ri.Calls.Heartbeat = x.Heartbeat
		in.Runs = append(in.Runs, ri)
	}
	if _, err := x.Client.ExecuteWorkflow(ctx, StartOptions(id, x.TaskQueue, x.Version), SweepWorkflowName, in); err != nil {
		return "", nil, exitcode.With(exitcode.Failure, fmt.Errorf("submitting the sweep to Temporal at %s: %w", x.Address, err))
	}
	// The sweep directory keeps one snapshot of the context folder for
	// all its runs, written with the first (runs are made inside it).
	var (
		ctxOnce sync.Once
		ctxErr  error
	)
	write := func(sweepDir string) error {
		ctxOnce.Do(func() { ctxErr = WriteContext(sweepDir, bundle.Context) })
		return ctxErr
	}
	start := func(index int, plan *spec.Plan, opts runtime.Options) (*runtime.Run, error) {
		return x.startChild(ctx, id, index, plan, opts, bundle.Context, write)
	}
	return id, start, nil
}

// startChild starts here the run of sweep workflow id at index, recorded
// from its child workflow's history. snap is the sweep's context snapshot
// (nil: none), which write, when set, writes into the sweep directory.
func (x Executor) startChild(ctx context.Context, id string, index int, plan *spec.Plan, opts runtime.Options, snap *tools.Snapshot, write func(sweepDir string) error) (*runtime.Run, error) {
	child := ChildID(id, index)
	var f *Follower
	x.remote(&opts, &child, &f)
	r, err := runtime.Start(plan, opts)
	if err != nil {
		return nil, err
	}
	rec := x.record(child, id)
	if snap != nil {
		if write != nil {
			if err := write(filepath.Dir(r.Dir)); err != nil {
				return nil, err
			}
		}
		rec.ContextFile = SweepContextFile
	}
	if err := WriteRecord(r.Dir, rec); err != nil {
		return nil, err
	}
	f = Follow(ctx, x.Client, child, 0)
	return r, nil
}

// record is the Record of workflow id (of sweep workflow sweep, if any)
// submitted by x.
func (x Executor) record(id, sweep string) Record {
	return Record{Address: x.Address, Namespace: x.Namespace, TaskQueue: x.TaskQueue, WorkflowID: id, Sweep: sweep, BuildID: x.Version}
}

// Resume follows a run submitted to Temporal again (the run directory dir
// records it in rec): answers are passed on, failed calls tried again, and
// the run directory completed as the returned run is executed.
func (x Executor) Resume(ctx context.Context, dir string, rec Record, reg *spec.Registry, opts runtime.Options) (*runtime.Run, error) {
	// The file tools run here too: they answer from the snapshot the
	// workers have, not from the folder, which may have changed since.
	snap, err := ReadContext(dir, rec)
	if err != nil {
		return nil, err
	}
	opts.ContextSnapshot = snap
	// The status is read before the answers are sent: a call that fails
	// once they let the run go on is this resume's to report, not to retry.
	// A workflow that has ended answers no query: it has no failed call.
	st, _ := x.status(ctx, rec.WorkflowID)
	if len(opts.Answers) > 0 {
		if err := x.Client.SignalWorkflow(ctx, rec.WorkflowID, "", SignalAnswers, opts.Answers); err != nil {
			return nil, exitcode.With(exitcode.Failure, fmt.Errorf("passing answers to workflow %s: %w", rec.WorkflowID, err))
		}
	}
	retries := st.Retries
	if len(st.Failed) > 0 {
		if err := x.Client.SignalWorkflow(ctx, rec.WorkflowID, "", SignalRetry, nil); err != nil {
			return nil, exitcode.With(exitcode.Failure, fmt.Errorf("asking workflow %s to try its failed calls again: %w", rec.WorkflowID, err))
		}
		retries++
	}
	id := rec.WorkflowID
	var f *Follower
	x.remote(&opts, &id, &f)
	r, err := runtime.Resume(dir, reg, opts)
	if err != nil {
		return nil, err
	}
	f = Follow(ctx, x.Client, id, retries)
	return r, nil
}

func (x Executor) status(ctx context.Context, id string) (RunStatus, error) {
	var st RunStatus
	v, err := x.Client.QueryWorkflow(ctx, id, "", QueryStatus)
	if err != nil {
		return st, err
	}
	if err := v.Get(&st); err != nil {
		return st, err
	}
	return st, nil
}

// Verify checks that the run recorded here (executed with err) is the run
// the workers made: the same outputs and messages. An inconclusive run
// (exit 8) ran to its end too, and is checked alike.
func (x Executor) Verify(ctx context.Context, id string, r *runtime.Run, err error) error {
	inconclusive := err != nil && exitcode.Of(err) == exitcode.Inconclusive
	if err != nil && !inconclusive || r.Result() == nil {
		return err
	}
	var out RunOutcome
	if gerr := x.Client.GetWorkflow(ctx, id, "").Get(ctx, &out); gerr != nil {
		return exitcode.With(exitcode.Failure, fmt.Errorf("reading the outcome of workflow %s: %w", id, gerr))
	}
	local := Outcome(r.Result(), nil)
	if out.OutputsDigest != local.OutputsDigest || out.MessagesDigest != local.MessagesDigest {
		return exitcode.With(exitcode.Failure, fmt.Errorf("the run recorded in %s differs from the run workflow %s made (outputs %s there); workers and this client must run the same runner version", r.Dir, id, out.Outputs))
	}
	return err // nil, or the exit code of an inconclusive run
}
