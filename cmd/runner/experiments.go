package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/cache"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/dryrun"
	"github.com/debate-runner/runner/runtime/sweep"
	"github.com/debate-runner/runner/runtime/tracing"
	"github.com/debate-runner/runner/runtime/view"
	"github.com/debate-runner/runner/spec"
)

// experimentFlags are the run flags for reproducible experiments: dry runs,
// replays, the response cache, sweeps and datasets.
type experimentFlags struct {
	DryRun        bool     `name:"dry-run" help:"Run the spec with stand-in replies and no model: print each node's first-round prompts and the worst-case plan of calls with token and cost estimates."`
	AllPrompts    bool     `name:"all-prompts" help:"With --dry-run: print every call's prompt, not only each node's first round."`
	Replay        string   `placeholder:"JOURNAL|RUN_DIR" help:"Serve every model call from a recorded run: no network, no API key. Inputs, vars and seed default to the recording's."`
	ReplayMissing string   `name:"replay-missing" enum:"error,live" default:"error" help:"What a call the recording lacks does: error, or live (call the model)."`
	Strict        bool     `name:"strict" help:"With --replay: fail at the first call whose request differs from the recorded one (a newer runner, a changed template) instead of serving the recorded reply with a warning."`
	CacheDir      string   `name:"cache-dir" placeholder:"DIR" help:"Response cache directory (default: $RUNNER_CACHE_DIR, else runner/ in the user cache directory)."`
	NoCache       bool     `name:"no-cache" help:"Neither read nor write the response cache: every call goes to the model."`
	OwnSamples    bool     `name:"own-samples" help:"Keep a sweep's samples its own: no reply is shared through the cache with another sweep asking the same (default: shared, which pairs a comparison; see docs/experiments.md). A resume of the sweep still reuses its own calls."`
	Matrix        []string `name:"matrix" sep:"none" placeholder:"NAME=V1,V2,..." help:"Sweep a var (or input) over values, or models as model=M1,M2 (model.NAME=... for model NAME); repeat the flag to run every combination."`
	Repeat        int      `default:"1" placeholder:"N" help:"Run each combination N times, each with its own samples."`
	Dataset       string   `placeholder:"FILE.jsonl" help:"Run once per line: a line's fields are inputs; its 'expected' (or 'answer') is scored with the spec's score. A .csv file's header row names the fields; gen:arithmetic?n=100&seed=1 generates Du et al.'s arithmetic items; hf:OWNER/NAME:CONFIG:SPLIT reads a Hugging Face dataset's JSONL/CSV files (downloaded once into the cache folder; ?input.NAME=COLUMN&expected=COLUMN&transform=number&n=N)."`
	Parallel      int      `default:"4" placeholder:"N" help:"Runs of a sweep at once (endpoint limits hold across them)."`
	FailUnder     *float64 `name:"fail-under" placeholder:"X" help:"With --dataset: exit 7 when the accuracy (0-1) is below X, for CI."`
	FailUnderOn   string   `name:"fail-under-on" enum:"mean,lower" default:"mean" help:"What --fail-under compares with X: the accuracy (mean) or the lower end of its 95% interval (lower)."`
	FailUnderOver string   `name:"fail-under-over" enum:"all,concluded" default:"all" help:"Which accuracy --fail-under gates: over all runs, an inconclusive one counted wrong (all), or over the concluded runs alone (concluded)."`
}

const experimentsHelp = `
Experiments:
  Identical requests are answered from the response cache (keyed by endpoint,
  model, parameters, messages and the call's sample), so running the same spec
  with the same inputs again costs nothing; --no-cache asks the model afresh.
  --matrix, --repeat and --dataset make a sweep: every combination runs (up to
  --parallel at once) in runs/sweep-<id>/, which gets summary.md and
  summary.json. Runs of a sweep share the cache, so a sweep over max_rounds
  makes the early rounds once. A dataset's accuracy is reported over all runs
  (an inconclusive run counts as wrong) and over the concluded runs; a sweep
  with inconclusive runs exits 8 unless --fail-under gates it (then the gate
  decides, with --fail-under-over saying which accuracy it reads).

  runner run spec.yaml -i question="What is 12+7*3?" --dry-run
  runner run spec.yaml --replay runs/<run-id>
  runner run spec.yaml -i question=@q.txt --matrix max_rounds=1,2,3 --repeat 3
  runner run examples/reasoning-debate/spec.yaml --dataset examples/reasoning-debate/dataset.jsonl`

// sweepFlags are the flags that make a sweep.
func (c *runCmd) sweepFlags() sweep.Flags {
	return sweep.Flags{Matrix: c.Matrix, Repeat: c.Repeat, Dataset: c.Dataset, Parallel: c.Parallel, OwnSamples: c.OwnSamples, FailUnder: c.FailUnder}
}

// sweeping reports whether the flags ask for more than one run.
func (c *runCmd) sweeping() bool { return c.sweepFlags().Sweeping() }

// experimentOptions adds the replay and the cache to a run's options.
func (c *runCmd) experimentOptions(e *env, plan *spec.Plan, opts *runtime.Options) error {
	if err := c.sweepFlags().Check(plan); err != nil {
		return err
	}
	if c.Replay != "" {
		if c.sweeping() {
			return usageErrorf("--replay serves one recorded run; it cannot be combined with --matrix, --repeat or --dataset")
		}
		rec, m, ok, err := runtime.LoadRecording(c.Replay, c.ReplayMissing == "live")
		if err != nil {
			return err
		}
		opts.Recording = rec
		opts.Strict = c.Strict
		if ok {
			opts.DefaultTo(plan, m)
		}
	}
	if c.Strict && c.Replay == "" {
		return usageErrorf("--strict compares a replay's requests with the recording's; it needs --replay")
	}
	if c.NoCache || opts.Replay != nil && !opts.ReplayMissingLive {
		return nil
	}
	return openCache(e, c.CacheDir, &opts.Cache)
}

// openCache opens the response cache in dir, or in the default folder when
// dir is empty (see cache.OpenFor), into *into, saying why there is none
// when it cannot.
func openCache(e *env, dir string, into *calls.Cache) error {
	st, warning, err := cache.OpenFor(dir, e.getenv)
	if warning != nil {
		e.teller().Warn("no response cache: " + warning.Error())
	}
	if st != nil {
		*into = st
	}
	return err
}

// dryRun prints the plan of a run without calling any model. Required
// inputs that are not given stand as placeholders.
func (c *runCmd) dryRun(e *env, plan *spec.Plan) error {
	if c.sweeping() || c.Replay != "" {
		return usageErrorf("--dry-run plans one run; it cannot be combined with --matrix, --repeat, --dataset or --replay")
	}
	opts, err := c.options(e)
	if err != nil {
		return err
	}
	rep, err := dryrun.Run(plan, dryrun.Options{Given: opts.Given, Placeholders: true, AllPrompts: c.AllPrompts})
	if err != nil {
		return err
	}
	return rep.Print(e.stdout, c.JSON, c.Quiet)
}

// sweepOptions are the sweep the flags ask for, of runs with opts.
func (c *runCmd) sweepOptions(opts runtime.Options) (sweep.Options, error) {
	return c.sweepFlags().Options(opts)
}

// telling tells the user about a sweep (see sweep.Telling).
func (e *env) telling(quiet bool) sweep.Telling {
	return sweep.Telling{Tell: e.teller(), Stdout: e.stdout, Quiet: quiet}
}

// sweep makes a sweep's runs, with start (nil: locally) starting each.
func (c *runCmd) sweep(e *env, plan *spec.Plan, opts runtime.Options, v *view.Running, start func(int, *spec.Plan, runtime.Options) (*runtime.Run, error)) error {
	so, err := c.sweepOptions(opts)
	if err != nil {
		return err
	}
	so.Start = start
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	t := e.telling(c.Quiet)
	so.OnRun = t.OnRun()
	so.OnStart = func(dir string, total int) {
		t.Started(dir, total)
		if v != nil {
			// The sweep's page needs summary.json, written at its end;
			// until then the list of runs shows its runs as they go.
			show(e, v, "/?q="+filepath.Base(dir), true)
		}
	}
	ctx, span := tracing.StartSweep(e.traced(ctx), plan.Name)
	sum, err := sweep.Sweep(ctx, plan, so)
	span.End(err)
	var gate *sweep.Gate
	if c.FailUnder != nil {
		gate = &sweep.Gate{Threshold: *c.FailUnder, On: c.FailUnderOn, Over: c.FailUnderOver}
	}
	return t.Done(sum, err, c.CSV, gate)
}

// resumeSweep finishes a sweep: every run that did not complete is
// resumed or started, and the summary is written.
func (c *resumeCmd) resumeSweep(e *env, opts runtime.Options) error {
	if c.Spec != "" {
		return usageErrorf("--spec %s: a sweep resumes with the spec it started with; resume its runs one by one to change it", c.Spec)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	t := e.telling(c.Quiet)
	ro := sweep.ResumeOptions{Run: opts, OnRun: t.OnRun()}
	ro.Run.Spec, ro.Run.Ask = "", nil
	sum, err := sweep.Resume(ctx, c.Dir, nodes.Registry(), ro)
	return t.Resumed(sum, err)
}
