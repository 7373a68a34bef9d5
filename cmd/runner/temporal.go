package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/durable"
	"github.com/debate-runner/runner/runtime/executor"
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

// connect is how to reach the Temporal frontend at addr.
func (t temporalFlags) connect(e *env, addr string) durable.Connect {
	c := durable.Connect{Address: addr, Namespace: t.Namespace, TLS: t.TLS, TLSCert: t.TLSCert, TLSKey: t.TLSKey, TLSCA: t.TLSCA, TLSServerName: t.TLSServerName, Log: e.stderr}
	if t.APIKeyEnv != "" {
		c.APIKey = e.getenv(t.APIKeyEnv)
	}
	return c
}

// dial connects to the Temporal frontend at addr.
func (t *temporalFlags) dial(ctx context.Context, e *env, addr string) (client.Client, error) {
	return durable.Dial(ctx, t.connect(e, addr))
}

// temporal is where the temporal executor submits runs.
func (t temporalFlags) temporal(e *env, addr string, heartbeat time.Duration) executor.Temporal {
	return executor.Temporal{Connect: t.connect(e, addr), TaskQueue: t.TaskQueue, Heartbeat: heartbeat, Version: Version()}
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
	acts := &durable.Activities{Getenv: e.getenv}
	if !c.NoCache {
		if err := openCache(e, c.CacheDir, &acts.Cache); err != nil {
			return err
		}
	}
	return durable.Work(ctx, cl, durable.Worker{Address: addr, Namespace: c.Namespace, TaskQueue: c.TaskQueue, Version: Version(),
		Activities: acts, LocalLimits: c.LocalLimits, Registry: nodes.Registry()}, e.teller())
}
