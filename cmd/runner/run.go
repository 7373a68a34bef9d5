package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/answers"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/cache"
	"github.com/debate-runner/runner/runtime/executor"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/progress"
	"github.com/debate-runner/runner/runtime/runflags"
	"github.com/debate-runner/runner/runtime/sweep"
	"github.com/debate-runner/runner/runtime/view"
	"github.com/debate-runner/runner/spec"
)

type runCmd struct {
	File    string   `arg:"" name:"FILE" help:"Spec file."`
	Input   []string `short:"i" name:"input" sep:"none" placeholder:"NAME=VALUE|NAME=@PATH" help:"Give an input (repeatable). @PATH reads a file."`
	Set     []string `short:"s" name:"set" sep:"none" placeholder:"NAME=VALUE" help:"Override a var (repeatable); the value must have the var's type."`
	Model   []string `name:"model" sep:"none" placeholder:"[NAME=]MODEL" help:"Use MODEL in place of the spec's model NAME (default: the model named default), repeatable: another model the spec declares, or a model id its endpoint knows."`
	RunsDir string   `name:"runs-dir" default:"runs" placeholder:"DIR" help:"Where run directories are created."`
	Seed    *int64   `help:"Seed for random choices (speaker order...)."`
	Answers string   `placeholder:"FILE" help:"YAML file of answers to clarifying questions (question id: answer)."`
	Quiet   bool     `short:"q" help:"No progress on stderr."`
	Verbose bool     `short:"v" help:"Progress as plain lines even on a terminal."`
	JSON    bool     `name:"json" help:"Print journal events to stderr as JSON lines as they happen."`
	// Flags are the flags that change a run, declared once in runflags.
	runflags.Flags `embed:""`
	Context        string   `placeholder:"FILE|DIR" help:"A file: its text becomes the spec's 'context' input. A folder: agents' read_file and list_files tools may read it."`
	CSV            string   `name:"csv" placeholder:"FILE" help:"Append a row with the run's outputs to this CSV file (header written when new)."`
	View           bool     `name:"view" help:"Serve the web view of the runs directory and open the new run's page in a browser (on a terminal it keeps serving after the run, until Ctrl-C)."`
	ViewAddr       string   `name:"view-addr" placeholder:"HOST:PORT" help:"Address of the view with --view (default 127.0.0.1:8642, or a free port)."`
	Budget         []string `name:"budget" sep:"none" placeholder:"LIMIT=VALUE" help:"Limit what the run may spend (repeatable): cost=5, calls=500, tokens=2e6, or NODE.calls=100 for one node. Overrides the spec's budget:; the run stops (exit 6) before a call that could pass it."`
	Offline        bool     `name:"offline" help:"Answer every model call with runner's simulated offline model: no key, no server, no network; replies shaped like each node expects and marked simulated, never priced (docs/providers.md#provider-kinds)."`

	experimentFlags `embed:""`
	temporalFlags   `embed:"" group:"Temporal (docs/scaling-out.md)"`
	Heartbeat       time.Duration `name:"temporal-heartbeat" default:"30s" placeholder:"DURATION" group:"Temporal (docs/scaling-out.md)" help:"How long a lost worker's calls wait before another worker makes them (at most 10s): what a lost worker costs."`
}

func (runCmd) Help() string {
	return `Validates the spec (exit 4 if invalid, before any model call), then runs it.
The run leaves DIR/<run-id>/ with spec.yaml, run.json (inputs, vars, seed,
versions), journal.jsonl (every event), result.json and report.md. The first
output is printed on stdout, the run directory on stderr.

Endpoints: the default endpoint reads OPENAI_BASE_URL and OPENAI_API_KEY
unless the spec declares its own; endpoints in the spec name their own
base_url and api_key_env (docs/providers.md gives the settings for
OpenAI, Azure, OpenRouter, Ollama, vLLM, LM Studio and llama.cpp). A .env file
next to the spec is read for variables not set in the environment.

Examples:
  runner run examples/reasoning-debate/spec.yaml -i question="What is 12+7*3?"
  runner run examples/design-debate/spec.yaml -i problem=@problem.md --set max_rounds=2
  OPENAI_BASE_URL=http://localhost:11434/v1 runner run spec.yaml -i question=@q.txt
` + experimentsHelp
}

func (c *runCmd) Run(e *env) error {
	e.jsonLines = c.JSON && !c.DryRun
	if err := args.SpecPath(c.File); err != nil {
		return err
	}
	defer runtime.PaceGC()()
	plan, diags := runtime.LoadRemembering(c.File, nodes.Registry(), cache.Where(c.CacheDir, c.NoCache, e.getenv))
	if plan != nil && !diags.HasErrors() {
		diags = append(diags, spec.UnpinnedLibraries(plan)...)
	}
	e.teller().Diagnostics(diags)
	if diags.HasErrors() {
		return exitcode.With(exitcode.InvalidSpec, fmt.Errorf("%s is invalid; nothing was run", c.File))
	}
	name := c.executorName(e)
	x, err := executor.Lookup(name)
	if err != nil {
		return err
	}
	l := &executor.Launch{Plan: plan, Registry: nodes.Registry(), Sweep: c.sweepFlags(), AllPrompts: c.AllPrompts,
		Temporal: c.temporal(e, c.address(e), c.Heartbeat), Out: c.out(e)}
	if c.FailUnder != nil {
		l.Gate = &sweep.Gate{Threshold: *c.FailUnder, On: c.FailUnderOn, Over: c.FailUnderOver}
	}
	l.Run.ReplayFrom = c.Replay
	if err := executor.Validate(name, x, l); err != nil {
		return err
	}
	if l.Run, err = c.options(e); err != nil {
		return err
	}
	if err := c.offline(plan, &l.Run); err != nil {
		return err
	}
	// A run that leaves a directory gets the cache, the recording, its
	// trace and the view; a dry run none of them.
	var v *view.Running
	if x.Capabilities().Records {
		if err := args.ContextFile(plan, c.Context, l.Run.ContextDir); err != nil {
			return err
		}
		if err := c.experimentOptions(e, plan, &l.Run); err != nil {
			return err
		}
		defer e.startTracing()()
		// The view serves the runs folder, which a run on Temporal writes
		// here as a local run does: it follows either alike.
		if c.View {
			if v, err = startView(e, c.RunsDir, c.ViewAddr); err != nil {
				return err
			}
			defer v.Stop()
			l.Out.Show = func(page string) { show(e, v, page, true) }
		}
	}
	// Nothing here writes into the run's folder, so its first calls need
	// not wait for it to be durable; the view, though, shows the run as
	// soon as it starts.
	l.Run.EarlyCalls = v == nil
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h, err := x.Start(e.traced(ctx), l)
	if err != nil {
		return err
	}
	err = h.Wait(e.traced(ctx))
	linger(e, v)
	return err
}

// executorName is the executor (executor.Registry) the flags choose.
func (c *runCmd) executorName(e *env) string {
	switch {
	case c.DryRun:
		return "dry"
	case c.address(e) != "":
		return "temporal"
	}
	return "local"
}

// out is where a run tells its user what happens.
func (c *runCmd) out(e *env) executor.Out {
	return executor.Out{Tell: e.teller(), Stdout: e.stdout, Quiet: c.Quiet, JSON: c.JSON, CSV: c.CSV}
}

func (c *runCmd) options(e *env) (runtime.Options, error) {
	opts := runtime.Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: c.Input, Sets: c.Set, Seed: c.Seed, Budget: c.Budget}, Flags: c.Flags},
		Settings: runtime.Settings{RunsDir: c.RunsDir, Getenv: e.getenv, Observer: progress.For(e.stderr, c.Quiet, c.Verbose, c.JSON), Version: Version()},
	}
	models, err := args.Models(c.Model)
	if err != nil {
		return opts, err
	}
	opts.Models = models
	if opts.Answers, opts.Ask, err = answers.Given(c.Answers, e.stdin, e.stderr, progress.IsTerminal(e.stdin)); err != nil {
		return opts, err
	}
	dir, input, err := args.Context(c.Context)
	if err != nil {
		return opts, err
	}
	if opts.ContextDir = dir; input != "" {
		opts.Inputs = append(opts.Inputs, input)
	}
	return opts, nil
}

// offline puts the offline model in place of every model with --offline.
func (c *runCmd) offline(plan *spec.Plan, opts *runtime.Options) error {
	if !c.Offline {
		return nil
	}
	if len(c.Model) > 0 {
		return usageErrorf("--offline puts the offline model in place of every model; drop --model")
	}
	models, err := args.Offline(plan)
	opts.Models = models
	return err
}

type resumeCmd struct {
	Dir     string   `arg:"" name:"RUN_DIR" help:"Run directory (runs/<run-id>), a sweep directory (runs/sweep-<id>) or a study directory (runs/study-<name>)."`
	Answers string   `placeholder:"FILE" help:"YAML file of answers to clarifying questions."`
	Spec    string   `placeholder:"FILE" help:"Continue with this spec (a fixed one) instead of the one the run started with: journaled calls whose requests are unchanged are reused, the others are made again (each is named, with why)."`
	Context string   `placeholder:"DIR" help:"The context folder the run's file tools read, when it moved (default: the one the run started with)."`
	Budget  []string `name:"budget" sep:"none" placeholder:"LIMIT=VALUE" help:"Raise (or set) what the run may spend: cost=5, calls=500, tokens=2e6, NODE.calls=100; 'none' removes a limit."`
	Quiet   bool     `short:"q" help:"No progress on stderr."`
	Verbose bool     `short:"v" help:"Progress as plain lines even on a terminal."`
	JSON    bool     `name:"json" help:"Print journal events to stderr as JSON lines."`
	Strict  bool     `name:"strict" help:"Fail at the first journaled call whose request differs from the one it was journaled for (a newer runner, a changed template) instead of making it again with a warning."`

	// Resample is the way on for a run that failed on a journaled reply.
	Resample bool `name:"resample" help:"Ask the journaled calls of the node that failed the run (the failing agent's calls with their repairs; when an output or condition failed, the calls whose replies gave way to a fallback) afresh, as a new sample, instead of serving their replies from the journal again; every other journaled call is still served from the journal."`
}

func (resumeCmd) Help() string {
	return `Continues a run that was killed, failed, stopped at its budget, or is
waiting for answers. Model calls whose responses are in the journal are not
made again, answers and tool results the journal holds are given again, and
the result is the one an uninterrupted run would have given. The run goes on
with the spec, template libraries, inputs, answers, context folder and budget
it started with (saved in its directory); --spec, --context and --budget
change them. A run that completed but lacks result.json or its reports gets
them written. A sweep directory resumes every run of the sweep that did not
complete (and starts those never started), then writes the summary.

A run that failed on what its journal holds (a reply still invalid after its
repairs, an output expression that fails on the journaled messages) would fail
the same way on every resume as it is, without asking a model: resume says so
and exits 2 without changing anything. Two ways go on: --spec with a fixed
spec, or --resample, which asks the failed node's journaled calls (or those
whose replies gave way to a fallback output) afresh: a new sample, journaled
as such and marked in the run's warnings, which a response cache does not
answer with the old reply. Every other journaled call is still served from
the journal.

Examples:
  runner resume runs/20261121T101500.000Z-design-debate-1a2b3c
  runner resume runs/<id> --answers runs/<id>/questions.yaml
  runner resume runs/<id> --spec fixed.yaml
  runner resume runs/<id> --resample
  runner resume runs/<id> --budget cost=10
  runner resume runs/sweep-<id>`
}

func (c *resumeCmd) Run(e *env) error {
	e.jsonLines = c.JSON
	defer runtime.PaceGC()()
	if err := args.RunDir(c.Dir); err != nil {
		return err
	}
	opts := runtime.Options{
		Launch:   launch.Launch{Given: launch.Given{Budget: c.Budget}, ContextDir: c.Context, Recording: launch.Recording{Strict: c.Strict}},
		Settings: runtime.Settings{Getenv: e.getenv, Observer: progress.For(e.stderr, c.Quiet, c.Verbose, c.JSON), Version: Version()},
		Resuming: runtime.Resuming{Spec: c.Spec, Resample: c.Resample},
	}
	if err := args.ContextDir(c.Context); err != nil {
		return err
	}
	var err error
	if opts.Answers, opts.Ask, err = answers.Given(c.Answers, e.stdin, e.stderr, progress.IsTerminal(e.stdin)); err != nil {
		return err
	}
	_, x, err := executor.ForDir(c.Dir)
	if err != nil {
		return err
	}
	l := &executor.Launch{Registry: nodes.Registry(), Run: opts,
		Temporal: temporalFlags{APIKeyEnv: "TEMPORAL_API_KEY"}.temporal(e, e.getenv("RUNNER_TEMPORAL"), 0),
		Out:      executor.Out{Tell: e.teller(), Stdout: e.stdout, Quiet: c.Quiet}}
	defer e.startTracing()()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h, err := x.Resume(ctx, c.Dir, l)
	if err != nil {
		return err
	}
	return h.Wait(e.traced(ctx))
}
