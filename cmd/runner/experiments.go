package main

import (
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/cache"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/sweep"
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
	Batch         bool     `name:"batch" help:"Send each wave of a sweep's calls as one provider batch (OpenAI Batch API, Anthropic Message Batches): half the price, answered within 24 hours; every run of the sweep goes at once. Needs a sweep and endpoints of kind openai or anthropic."`
	EqualCompute  string   `name:"equal-compute" placeholder:"SPEC" help:"With --dataset: after the sweep, sweep the self-consistency spec SPEC over the same items with its var samples set to the sweep's mean calls per item, and compare the two item by item (see docs/experiments.md)."`
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
	return sweep.Flags{Matrix: c.Matrix, Repeat: c.Repeat, Dataset: c.Dataset, Parallel: c.Parallel, OwnSamples: c.OwnSamples, FailUnder: c.FailUnder, Batch: c.Batch, EqualCompute: c.EqualCompute}
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
