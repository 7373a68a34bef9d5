package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/durable"
	"github.com/debate-runner/runner/runtime/view"
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
A worker makes only the runs of its own runner version (a run is pinned to
the version that submits it), so workers of a new version can start beside
the old ones while runs are in flight; see docs/scaling-out.md.
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
	w := worker.New(cl, c.TaskQueue, durable.WorkerOptions(c.TaskQueue, Version()))
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
	durable.Register(w, &durable.Workflows{Registry: nodes.Registry()}, acts)
	if err := w.Start(); err != nil {
		return exitcode.With(exitcode.Failure, fmt.Errorf("starting the worker on task queue %s at %s: %w", c.TaskQueue, addr, err))
	}
	defer w.Stop()
	if err := durable.Promote(ctx, cl, c.TaskQueue, Version()); err != nil {
		return exitcode.With(exitcode.Failure, err)
	}
	e.say("worker", map[string]string{"address": addr, "namespace": c.Namespace, "task_queue": c.TaskQueue, "build_id": Version()},
		fmt.Sprintf("worker: polling task queue %s of namespace %s at %s as build %s", c.TaskQueue, c.Namespace, addr, Version()))
	<-ctx.Done()
	return nil
}

// executor submits runs to Temporal at addr through cl.
func (t *temporalFlags) executor(cl client.Client, addr string, heartbeat time.Duration) durable.Executor {
	return durable.Executor{Client: cl, Address: addr, Namespace: t.Namespace, TaskQueue: t.TaskQueue, Heartbeat: heartbeat, Version: Version()}
}

// runOnTemporal submits a run to Temporal and records it here as it goes.
// v, when not nil, is the view (--view) to show the run's page in.
func (c *runCmd) runOnTemporal(e *env, plan *spec.Plan, opts runtime.Options, addr string, v *view.Running) error {
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
	x := c.executor(cl, addr, c.Heartbeat)
	if c.sweeping() {
		so, err := c.sweepOptions(opts)
		if err != nil {
			return err
		}
		id, start, err := x.StartSweep(ctx, plan, bundle, so)
		if err != nil {
			return err
		}
		c.warnNoBuild(ctx, e, cl)
		if !c.Quiet {
			e.say("temporal", map[string]string{"address": addr, "workflow_id": id}, fmt.Sprintf("submitted to Temporal at %s as workflow %s", addr, id))
		}
		return c.sweep(e, plan, opts, v, start)
	}
	r, rec, err := x.StartRun(ctx, plan, bundle, opts)
	if err != nil {
		return err
	}
	c.warnNoBuild(ctx, e, cl)
	e.say("temporal", rec, fmt.Sprintf("submitted to Temporal at %s as workflow %s", addr, rec.WorkflowID))
	if v != nil {
		show(e, v, "/run/"+filepath.Base(r.Dir), true)
	}
	return x.Verify(ctx, rec.WorkflowID, r, execute(e, r))
}

// resumeOnTemporal follows a run submitted to Temporal again: answers are
// passed on, failed calls tried again, and the run directory completed.
func (c *resumeCmd) resumeOnTemporal(e *env, rec durable.Record, opts runtime.Options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if c.Context != "" {
		return usageErrorf("--context %s: the run is made on Temporal, whose workers read the context folder as it was when the run was submitted; drop --context", c.Context)
	}
	if rec.BuildID != "" && rec.BuildID != Version() {
		msg := fmt.Sprintf("the run is made by workers of runner %s, the version that submitted it; this is runner %s, whose record of it differs if the two walk its flow differently", rec.BuildID, Version())
		e.say("warning", map[string]string{"message": msg}, "runner: warning: "+msg)
	}
	tf := temporalFlags{Namespace: rec.Namespace, TaskQueue: rec.TaskQueue}
	tf.APIKeyEnv = "TEMPORAL_API_KEY"
	cl, err := tf.dial(ctx, e, rec.Address)
	if err != nil {
		return err
	}
	defer cl.Close()
	x := tf.executor(cl, rec.Address, 0)
	r, err := x.Resume(ctx, c.Dir, rec, nodes.Registry(), opts)
	if err != nil {
		return err
	}
	return x.Verify(ctx, rec.WorkflowID, r, execute(e, r))
}

// warnNoBuild says so when no worker of this build has polled the task
// queue within a few seconds: the run waits for one, since a run goes to
// workers of the runner version that submits it.
func (t *temporalFlags) warnNoBuild(ctx context.Context, e *env, cl client.Client) {
	for wait := 0; wait < 20; wait++ {
		if ok, err := durable.HasBuild(ctx, cl, t.TaskQueue, Version()); err != nil || ok {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
	msg := fmt.Sprintf("no worker of runner %s has polled task queue %s yet: the run waits for one (a run goes to workers of the runner version that submits it)", Version(), t.TaskQueue)
	e.say("warning", map[string]string{"message": msg}, "runner: warning: "+msg)
}
