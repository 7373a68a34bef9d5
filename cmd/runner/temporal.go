package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/durable"
	"github.com/debate-runner/runner/runtime/sweep"
	"github.com/debate-runner/runner/spec"
)

// temporalFlags say where runs are made when they go to Temporal.
type temporalFlags struct {
	Temporal      string `name:"temporal" placeholder:"HOST:PORT" help:"Temporal frontend to submit to (or run workers for) instead of running locally; default $RUNNER_TEMPORAL."`
	Namespace     string `name:"temporal-namespace" default:"default" placeholder:"NAME" help:"Temporal namespace."`
	TaskQueue     string `name:"task-queue" default:"runner" placeholder:"NAME" help:"Temporal task queue the workers poll."`
	TLS           bool   `name:"temporal-tls" help:"Connect to Temporal with TLS (implied by the options below)."`
	TLSCert       string `name:"temporal-tls-cert" placeholder:"FILE" help:"Client certificate for mTLS (PEM)."`
	TLSKey        string `name:"temporal-tls-key" placeholder:"FILE" help:"Client key for mTLS (PEM)."`
	TLSCA         string `name:"temporal-tls-ca" placeholder:"FILE" help:"CA that signs the server's certificate (PEM)."`
	APIKeyEnv     string `name:"temporal-api-key-env" default:"TEMPORAL_API_KEY" placeholder:"NAME" help:"Environment variable holding a Temporal Cloud API key, if set."`
	TLSServerName string `name:"temporal-tls-server-name" placeholder:"NAME" help:"Server name to check the certificate against."`
}

// address is the Temporal frontend, "" for a local run.
func (t *temporalFlags) address(e *env) string {
	if t.Temporal != "" {
		return t.Temporal
	}
	return e.getenv("RUNNER_TEMPORAL")
}

func (t *temporalFlags) connect(e *env, addr string) durable.Connect {
	c := durable.Connect{
		Address: addr, Namespace: t.Namespace, TLS: t.TLS, TLSCert: t.TLSCert, TLSKey: t.TLSKey, TLSCA: t.TLSCA,
		TLSServerName: t.TLSServerName, Log: e.stderr,
	}
	if t.APIKeyEnv != "" {
		c.APIKey = e.getenv(t.APIKeyEnv)
	}
	return c
}

func (t *temporalFlags) dial(ctx context.Context, e *env, addr string) (client.Client, error) {
	c, err := durable.Dial(ctx, t.connect(e, addr))
	if err != nil {
		return nil, exitcode.With(exitcode.Failure, err)
	}
	return c, nil
}

type workerCmd struct {
	temporalFlags `embed:""`
	LocalLimits   bool   `name:"local-limits" help:"Hold endpoints' max_concurrency, requests_per_minute and tokens_per_minute for this worker alone, instead of for all workers together."`
	CacheDir      string `name:"cache-dir" placeholder:"DIR" help:"This worker's response cache (default: $RUNNER_CACHE_DIR, else runner/ in the user cache directory). Runs submitted with --no-cache neither read nor write it."`
	NoCache       bool   `name:"no-cache" help:"Use no response cache: every call of every run goes to the model."`
}

func (workerCmd) Help() string {
	return `Connects to a Temporal frontend and makes the runs submitted with
'runner run --temporal': it walks their flows as workflows and makes their
model calls as activities, with the API keys of its own environment (and a
.env file in the current folder). Start as many as you like, on as many
machines; a worker that dies costs no completed call. Stop with Ctrl-C.
Workers and the clients that submit to them must run the same runner version.
A development server for trying it: temporal server start-dev --headless

Examples:
  runner worker --temporal 127.0.0.1:7233
  RUNNER_TEMPORAL=127.0.0.1:7233 runner worker --task-queue big-models
`
}

func (c *workerCmd) Run(e *env) error {
	addr := c.address(e)
	if addr == "" {
		return usageErrorf("--temporal: give the Temporal frontend's HOST:PORT (or set RUNNER_TEMPORAL)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cl, err := c.dial(ctx, e, addr)
	if err != nil {
		return err
	}
	defer cl.Close()
	w := worker.New(cl, c.TaskQueue, worker.Options{})
	acts := &durable.Activities{Getenv: e.getenv}
	if !c.NoCache {
		st, err := openCache(e, c.CacheDir)
		if err != nil {
			return err
		}
		if st != nil {
			acts.Cache = st
		}
	}
	if !c.LocalLimits {
		acts.Gates = &durable.Gates{Client: cl, TaskQueue: c.TaskQueue}
	}
	durable.Register(w, &durable.Workflows{Version: Version(), Registry: nodes.Registry()}, acts)
	if err := w.Start(); err != nil {
		return exitcode.With(exitcode.Failure, fmt.Errorf("starting the worker on task queue %s at %s: %w", c.TaskQueue, addr, err))
	}
	e.say("worker", map[string]string{"address": addr, "namespace": c.Namespace, "task_queue": c.TaskQueue},
		fmt.Sprintf("worker: polling task queue %s of namespace %s at %s", c.TaskQueue, c.Namespace, addr))
	<-ctx.Done()
	w.Stop()
	return nil
}

// workflowID is the workflow of a run submitted from a run directory.
func workflowID(runID string) string { return "runner-run-" + runID }

// remote makes opts a run whose calls a Follower answers once it is set:
// the run connects to no endpoint, and questions answered at the terminal
// are passed on to the workflow.
func remote(cl client.Client, opts *runtime.Options, id *string, f **durable.Follower) {
	opts.Remote = calls.StageFunc(func(ctx context.Context, c *calls.Call) (kit.Reply, calls.Source, error) {
		return (*f).Complete(ctx, c)
	})
	if ask := opts.Ask; ask != nil {
		opts.Ask = func(ctx context.Context, q spec.Question) (string, error) {
			v, err := ask(ctx, q)
			if err != nil {
				return v, err
			}
			if err := cl.SignalWorkflow(ctx, *id, "", durable.SignalAnswers, map[string]string{q.ID: v}); err != nil {
				return "", fmt.Errorf("passing the answer to question %s to workflow %s: %w", q.ID, *id, err)
			}
			return v, nil
		}
	}
}

// runOnTemporal submits a run to Temporal and records it here as it goes.
// v, when not nil, is the view (--view) to show the run's page in.
func (c *runCmd) runOnTemporal(e *env, plan *spec.Plan, opts runtime.Options, addr string, v *viewServer) error {
	if len(plan.MCPServers) > 0 {
		// A workflow must not start processes or reach servers itself; MCP
		// calls as activities are not built yet.
		return exitcode.With(exitcode.Usage, errors.New("--temporal: runs on Temporal do not serve the tools of mcp_servers yet; run this spec without --temporal"))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cl, err := c.dial(ctx, e, addr)
	if err != nil {
		return err
	}
	defer cl.Close()
	bundle, err := durable.NewBundle(plan, nodes.Registry(), opts.ContextDir)
	if err != nil {
		return exitcode.With(exitcode.Failure, err)
	}
	// The file tools run here too (the engine runs them between a call
	// and the next); they must answer as on the workers.
	opts.ContextSnapshot = bundle.Context
	if c.sweeping() {
		return c.sweepOnTemporal(ctx, e, cl, plan, bundle, opts, addr, v)
	}
	var (
		id string
		f  *durable.Follower
	)
	remote(cl, &opts, &id, &f)
	r, err := runtime.Start(plan, opts)
	if err != nil {
		return err
	}
	id = workflowID(r.ID)
	in, err := durable.NewRunInput(plan, bundle, opts, r.ID, Version())
	if err != nil {
		return err
	}
	in.Calls.Heartbeat = c.Heartbeat
	if _, err := cl.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: c.TaskQueue}, durable.RunWorkflowName, in); err != nil {
		return exitcode.With(exitcode.Failure, fmt.Errorf("submitting the run to Temporal at %s: %w", addr, err))
	}
	rec := durable.Record{Address: addr, Namespace: c.Namespace, TaskQueue: c.TaskQueue, WorkflowID: id}
	if bundle.Context != nil {
		// Written before the record that names it, so that a record never
		// names a snapshot that is not there.
		if err := durable.WriteContext(r.Dir, bundle.Context); err != nil {
			return exitcode.With(exitcode.Failure, err)
		}
		rec.ContextFile = durable.ContextFile
	}
	if err := durable.WriteRecord(r.Dir, rec); err != nil {
		return exitcode.With(exitcode.Failure, err)
	}
	e.say("temporal", rec, fmt.Sprintf("submitted to Temporal at %s as workflow %s", addr, id))
	if v != nil {
		v.show(e, "/run/"+filepath.Base(r.Dir), true)
	}
	f = durable.Follow(ctx, cl, id, 0)
	return verified(ctx, e, cl, id, r, execute(e, r))
}

// sweepOnTemporal submits a sweep (or dataset, or repeats) as one sweep
// workflow with a child run workflow per run, and makes the sweep here as
// a local sweep does, each run recorded from its child's history: the
// sweep directory, its runs and its summary are a local sweep's.
func (c *runCmd) sweepOnTemporal(ctx context.Context, e *env, cl client.Client, plan *spec.Plan, bundle *durable.Bundle, opts runtime.Options, addr string, v *viewServer) error {
	var axes []sweep.Axis
	for _, m := range c.Matrix {
		a, err := sweep.ParseAxis(m)
		if err != nil {
			return err
		}
		axes = append(axes, a)
	}
	all, err := sweep.RunOptions(plan, sweep.Options{Run: opts, Matrix: axes, Repeat: c.Repeat, Dataset: c.Dataset, Parallel: c.Parallel})
	if err != nil {
		return err
	}
	id := fmt.Sprintf("runner-sweep-%s-%s", plan.Name, time.Now().UTC().Format("20060102T150405.000Z"))
	in := durable.SweepInput{Bundle: bundle, Parallel: c.Parallel}
	for i, o := range all {
		ri, err := durable.NewRunInput(plan, nil, o, durable.ChildID(id, i+1), Version())
		if err != nil {
			return err
		}
		ri.Calls.Heartbeat = c.Heartbeat
		in.Runs = append(in.Runs, ri)
	}
	if _, err := cl.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: c.TaskQueue}, durable.SweepWorkflowName, in); err != nil {
		return exitcode.With(exitcode.Failure, fmt.Errorf("submitting the sweep to Temporal at %s: %w", addr, err))
	}
	if !c.Quiet {
		e.say("temporal", map[string]string{"address": addr, "workflow_id": id}, fmt.Sprintf("submitted to Temporal at %s as workflow %s", addr, id))
	}
	// The sweep directory keeps one snapshot of the context folder for
	// all its runs, written with the first (runs are made inside it).
	var (
		ctxOnce sync.Once
		ctxErr  error
	)
	start := func(index int, plan *spec.Plan, opts runtime.Options) (*runtime.Run, error) {
		child := durable.ChildID(id, index)
		var f *durable.Follower
		remote(cl, &opts, &child, &f)
		r, err := runtime.Start(plan, opts)
		if err != nil {
			return nil, err
		}
		rec := durable.Record{Address: addr, Namespace: c.Namespace, TaskQueue: c.TaskQueue, WorkflowID: child, Sweep: id}
		if bundle.Context != nil {
			ctxOnce.Do(func() { ctxErr = durable.WriteContext(filepath.Dir(r.Dir), bundle.Context) })
			if ctxErr != nil {
				return nil, ctxErr
			}
			rec.ContextFile = durable.SweepContextFile
		}
		if err := durable.WriteRecord(r.Dir, rec); err != nil {
			return nil, err
		}
		f = durable.Follow(ctx, cl, child, 0)
		return r, nil
	}
	return c.sweep(e, plan, opts, v, start)
}

// verified checks that the run recorded here is the run the workers made:
// the same outputs and messages.
func verified(ctx context.Context, e *env, cl client.Client, id string, r *runtime.Run, err error) error {
	if err != nil || r.Result() == nil {
		return err
	}
	var out durable.RunOutcome
	if gerr := cl.GetWorkflow(ctx, id, "").Get(ctx, &out); gerr != nil {
		return exitcode.With(exitcode.Failure, fmt.Errorf("reading the outcome of workflow %s: %w", id, gerr))
	}
	local := durable.Outcome(r.Result(), nil)
	if out.OutputsDigest != local.OutputsDigest || out.MessagesDigest != local.MessagesDigest {
		return exitcode.With(exitcode.Failure, fmt.Errorf("the run recorded in %s differs from the run workflow %s made (outputs %s there); workers and this client must run the same runner version", r.Dir, id, out.Outputs))
	}
	_ = e
	return nil
}

// resumeOnTemporal follows a run submitted to Temporal again: answers are
// passed on, failed calls tried again, and the run directory completed.
func (c *resumeCmd) resumeOnTemporal(e *env, rec durable.Record, opts runtime.Options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if c.Context != "" {
		return usageErrorf("--context %s: the run is made on Temporal, whose workers read the context folder as it was when the run was submitted; drop --context", c.Context)
	}
	// The file tools run here too: they answer from the snapshot the
	// workers have, not from the folder, which may have changed since.
	snap, err := durable.ReadContext(c.Dir, rec)
	if err != nil {
		return err
	}
	opts.ContextSnapshot = snap
	tf := temporalFlags{Namespace: rec.Namespace}
	tf.APIKeyEnv = "TEMPORAL_API_KEY"
	cl, err := tf.dial(ctx, e, rec.Address)
	if err != nil {
		return err
	}
	defer cl.Close()
	// The status is read before the answers are sent: a call that fails
	// once they let the run go on is this resume's to report, not to retry.
	// A workflow that has ended answers no query: it has no failed call.
	st, _ := queryStatus(ctx, cl, rec.WorkflowID)
	if len(opts.Answers) > 0 {
		if err := cl.SignalWorkflow(ctx, rec.WorkflowID, "", durable.SignalAnswers, opts.Answers); err != nil {
			return exitcode.With(exitcode.Failure, fmt.Errorf("passing answers to workflow %s: %w", rec.WorkflowID, err))
		}
	}
	retries := st.Retries
	if len(st.Failed) > 0 {
		if err := cl.SignalWorkflow(ctx, rec.WorkflowID, "", durable.SignalRetry, nil); err != nil {
			return exitcode.With(exitcode.Failure, fmt.Errorf("asking workflow %s to try its failed calls again: %w", rec.WorkflowID, err))
		}
		retries++
	}
	id := rec.WorkflowID
	var f *durable.Follower
	remote(cl, &opts, &id, &f)
	r, err := runtime.Resume(c.Dir, nodes.Registry(), opts)
	if err != nil {
		return err
	}
	f = durable.Follow(ctx, cl, id, retries)
	return verified(ctx, e, cl, id, r, execute(e, r))
}

func queryStatus(ctx context.Context, cl client.Client, id string) (durable.RunStatus, error) {
	var st durable.RunStatus
	v, err := cl.QueryWorkflow(ctx, id, "", durable.QueryStatus)
	if err != nil {
		return st, err
	}
	if err := v.Get(&st); err != nil {
		return st, err
	}
	return st, nil
}
