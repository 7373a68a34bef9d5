package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/cache"
	"github.com/debate-runner/runner/runtime/dryrun"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/sweep"
	"github.com/debate-runner/runner/runtime/tracing"
	"github.com/debate-runner/runner/spec"
)

// experimentFlags are the run flags for reproducible experiments: dry runs,
// replays, the response cache, sweeps and datasets.
type experimentFlags struct {
	DryRun        bool     `name:"dry-run" help:"Run the spec with stand-in replies and no model: print each node's first-round prompts and the worst-case plan of calls with token and cost estimates."`
	AllPrompts    bool     `name:"all-prompts" help:"With --dry-run: print every call's prompt, not only each node's first round."`
	Replay        string   `placeholder:"JOURNAL|RUN_DIR" help:"Serve every model call from a recorded run: no network, no API key. Inputs, vars and seed default to the recording's."`
	ReplayMissing string   `name:"replay-missing" enum:"error,live" default:"error" help:"What a call the recording lacks does: error, or live (call the model)."`
	CacheDir      string   `name:"cache-dir" placeholder:"DIR" help:"Response cache directory (default: $RUNNER_CACHE_DIR, else runner/ in the user cache directory)."`
	NoCache       bool     `name:"no-cache" help:"Neither read nor write the response cache: every call goes to the model."`
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

// sweeping reports whether the flags ask for more than one run.
func (c *runCmd) sweeping() bool {
	return len(c.Matrix) > 0 || c.Dataset != "" || c.Repeat > 1
}

// experimentOptions adds the replay and the cache to a run's options.
func (c *runCmd) experimentOptions(e *env, plan *spec.Plan, opts *runtime.Options) error {
	if c.Repeat < 1 {
		return usageErrorf("--repeat %d: give a count of at least 1", c.Repeat)
	}
	if c.Parallel < 1 {
		return usageErrorf("--parallel %d: give a count of at least 1", c.Parallel)
	}
	if c.FailUnder != nil {
		if c.Dataset == "" {
			return usageErrorf("--fail-under gates the accuracy of a --dataset sweep; give --dataset")
		}
		if *c.FailUnder < 0 || *c.FailUnder > 1 {
			return usageErrorf("--fail-under %g: give an accuracy between 0 and 1", *c.FailUnder)
		}
		if plan.Score == nil {
			return usageErrorf("--fail-under: the spec has no score expression, so its runs have no accuracy")
		}
	}
	if c.Replay != "" {
		if c.sweeping() {
			return usageErrorf("--replay serves one recorded run; it cannot be combined with --matrix, --repeat or --dataset")
		}
		rec, err := runtime.LoadReplay(c.Replay)
		if err != nil {
			return err
		}
		opts.Replay, opts.ReplayFrom = rec, c.Replay
		if opts.ReplayThreads, err = runtime.LoadReplayThreads(c.Replay); err != nil {
			return err
		}
		opts.ReplayMissingLive = c.ReplayMissing == "live"
		if m, ok := recordedManifest(c.Replay); ok {
			replayDefaults(plan, m, opts)
		}
	}
	if c.NoCache || opts.Replay != nil && !opts.ReplayMissingLive {
		return nil
	}
	st, err := openCache(e, c.CacheDir)
	if err != nil {
		return err
	}
	if st != nil {
		opts.Cache = st
	}
	return nil
}

// openCache opens the response cache in dir, or in the default folder when
// dir is empty. A cache that cannot be opened is a usage error when dir was
// given (--cache-dir), else a warning and no cache (nil).
func openCache(e *env, dir string) (*cache.Store, error) {
	explicit := dir != ""
	if dir == "" {
		d, err := cache.DefaultDir(e.getenv)
		if err != nil {
			e.say("warning", map[string]string{"message": "no response cache: " + err.Error()}, "runner: warning: no response cache: "+err.Error())
			return nil, nil
		}
		dir = d
	}
	if dir == "" {
		return nil, nil // no home to put a cache in (and none asked for)
	}
	st, err := cache.Open(dir)
	if err != nil {
		if explicit {
			return nil, usageErrorf("--cache-dir %s: %v", dir, err)
		}
		e.say("warning", map[string]string{"message": "no response cache: " + err.Error()}, "runner: warning: no response cache: "+err.Error())
		return nil, nil
	}
	return st, nil
}

// recordedManifest reads run.json of the run a --replay path belongs to.
func recordedManifest(path string) (result.Manifest, bool) {
	dir := path
	if info, err := os.Stat(path); err == nil && !info.IsDir() {
		dir = filepath.Dir(path)
	}
	var m result.Manifest
	data, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil || json.Unmarshal(data, &m) != nil {
		return m, false
	}
	return m, true
}

// replayDefaults takes the recorded run's inputs, vars and seed for those
// the command line does not give, so that a replay reproduces the run.
func replayDefaults(plan *spec.Plan, m result.Manifest, opts *runtime.Options) {
	given := map[string]bool{}
	for _, f := range opts.Inputs {
		name, _, _ := strings.Cut(f, "=")
		given[name] = true
	}
	declared := map[string]bool{}
	for _, in := range plan.Inputs {
		declared[in.Name] = true
	}
	for k, v := range m.Inputs {
		if given[k] || !declared[k] {
			continue
		}
		if opts.InputValues == nil {
			opts.InputValues = map[string]any{}
		}
		opts.InputValues[k] = v
	}
	if len(m.Vars) > 0 {
		opts.VarValues = m.Vars
	}
	if len(opts.Models) == 0 && len(m.ModelOverrides) > 0 {
		opts.Models = m.ModelOverrides
	}
	if opts.Seed == nil {
		seed := m.Seed
		opts.Seed = &seed
	}
}

// reportCalls says where the calls of a run came from when not all went to
// the model.
func (c *runCmd) reportCalls(e *env, r *runtime.Run) {
	cc := r.CallCounts()
	if c.Quiet || cc.Total() == cc.Network {
		return
	}
	var parts []string
	sent := fmt.Sprintf("%d sent", cc.Network)
	if cc.Resampled > 0 {
		sent += fmt.Sprintf(" of which %d asked afresh (--resample)", cc.Resampled)
	}
	parts = append(parts, sent)
	if cc.Cache > 0 {
		parts = append(parts, fmt.Sprintf("%d from the cache", cc.Cache))
	}
	if cc.Shared > 0 {
		parts = append(parts, fmt.Sprintf("%d shared", cc.Shared))
	}
	if cc.Replay > 0 {
		parts = append(parts, fmt.Sprintf("%d replayed", cc.Replay))
	}
	if cc.Journal > 0 {
		parts = append(parts, fmt.Sprintf("%d from the journal", cc.Journal))
	}
	hint := ""
	if cc.Cache > 0 {
		hint = "; --no-cache asks the model again"
	}
	e.say("calls", cc, fmt.Sprintf("calls: %d (%s)%s", cc.Total(), strings.Join(parts, ", "), hint))
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
	given := map[string]bool{}
	for _, f := range opts.Inputs {
		name, _, _ := strings.Cut(f, "=")
		given[name] = true
	}
	values := map[string]any{}
	var placeholders []string
	for _, in := range plan.Inputs {
		if in.Required && !given[in.Name] {
			values[in.Name] = "<input " + in.Name + ">"
			placeholders = append(placeholders, in.Name)
		}
	}
	rep, err := dryrun.Run(plan, dryrun.Options{Inputs: opts.Inputs, InputValues: values, Sets: c.Set, Seed: c.Seed, AllPrompts: c.AllPrompts, Models: opts.Models, Budget: c.Budget})
	if err != nil {
		return err
	}
	if len(placeholders) > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("input(s) %s not given: a placeholder stands in, so prompt sizes leave them out", strings.Join(placeholders, ", ")))
	}
	if c.JSON {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return exitcode.With(exitcode.Failure, err)
		}
		fmt.Fprintln(e.stdout, string(data))
		return nil
	}
	rep.Write(e.stdout, !c.Quiet)
	return nil
}

// sweep runs every combination and prints the summary.
// sweep makes a sweep's runs, with start (nil: locally) starting each.
func (c *runCmd) sweep(e *env, plan *spec.Plan, opts runtime.Options, v *viewServer, start func(int, *spec.Plan, runtime.Options) (*runtime.Run, error)) error {
	var axes []sweep.Axis
	for _, m := range c.Matrix {
		a, err := sweep.ParseAxis(m)
		if err != nil {
			return err
		}
		axes = append(axes, a)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	so := sweep.Options{Run: opts, Matrix: axes, Repeat: c.Repeat, Dataset: c.Dataset, Parallel: c.Parallel, Start: start}
	so.OnStart = func(dir string, total int) {
		if !c.Quiet {
			e.say("sweep_started", map[string]any{"dir": dir, "runs": total}, fmt.Sprintf("sweep: %d runs in %s", total, dir))
		}
		if v != nil {
			// The sweep's page needs summary.json, written at its end;
			// until then the list of runs shows its runs as they go.
			v.show(e, "/?q="+filepath.Base(dir), true)
		}
	}
	if !c.Quiet {
		so.OnRun = func(done, total int, r sweep.Run) {
			e.say("sweep_run", map[string]any{"done": done, "total": total, "run": r}, fmt.Sprintf("[%d/%d] %s%s", done, total, r.Status, describeSweepRun(r)))
		}
	}
	ctx, span := tracing.StartSweep(e.traced(ctx), plan.Name)
	sum, err := sweep.Sweep(ctx, plan, so)
	span.End(err)
	if sum == nil {
		return err
	}
	fmt.Fprint(e.stdout, sum.Table().Markdown(60))
	fmt.Fprintf(e.stdout, "\n%s\n", sum.CallsLine())
	if line := sum.AccuracyLine(); line != "" {
		fmt.Fprintln(e.stdout, line)
	}
	if len(sum.UnusedFields) > 0 {
		msg := "dataset fields that are no input of the spec were ignored: " + strings.Join(sum.UnusedFields, ", ")
		e.say("warning", map[string]string{"message": msg}, "runner: warning: "+msg)
	}
	e.say("sweep_dir", map[string]string{"dir": sum.Dir}, "sweep: "+sum.Dir)
	if c.CSV != "" {
		for _, r := range sum.Runs {
			res, rerr := readRunResult(r.Dir)
			if rerr != nil {
				continue
			}
			if cerr := result.AppendCSV(c.CSV, res); cerr != nil && err == nil {
				err = cerr
			}
		}
	}
	switch {
	case err != nil:
		return exitcode.With(exitcode.Failure, err)
	case sum.Waiting > 0:
		return exitcode.With(exitcode.Waiting, fmt.Errorf("%d run(s) wait for answers to clarifying questions; resume each with runner resume DIR --answers FILE", sum.Waiting))
	}
	if c.FailUnder != nil {
		// The gate has counted the inconclusive runs as it was told to.
		return c.gate(e, sum)
	}
	return inconclusiveSweep(sum)
}

// inconclusiveSweep is exit 8 for a sweep some of whose runs finished
// without reaching their purpose: the summary is printed and the accuracy
// counts them, but a script must not take the sweep for a clean one.
func inconclusiveSweep(sum *sweep.Summary) error {
	if sum.Inconclusive == 0 {
		return nil
	}
	return exitcode.With(exitcode.Inconclusive, fmt.Errorf("%d of %d run(s) inconclusive (finished without reaching their purpose; see the status column of %s)",
		sum.Inconclusive, len(sum.Runs), filepath.Join(sum.Dir, "summary.md")))
}

// gate fails a dataset sweep whose accuracy (or the lower end of its
// interval) is below --fail-under.
func (c *runCmd) gate(e *env, sum *sweep.Summary) error {
	a, over := sum.Accuracy, "over all runs"
	if sum.Inconclusive > 0 {
		over += fmt.Sprintf(", %d inconclusive counted wrong", sum.Inconclusive)
	}
	if c.FailUnderOver == "concluded" {
		a, over = sum.AccuracyConcluded, fmt.Sprintf("over the %d concluded runs", sum.Completed)
	}
	if a == nil {
		return exitcode.With(exitcode.Gate, fmt.Errorf("--fail-under %g: no run was scored (%s)", *c.FailUnder, over))
	}
	value, what := a.Mean, "accuracy"
	if c.FailUnderOn == "lower" {
		value, what = a.Low, "lower end of the accuracy's 95% interval"
	}
	data := map[string]any{"value": value, "on": c.FailUnderOn, "over": c.FailUnderOver, "threshold": *c.FailUnder, "accuracy": a, "passed": value >= *c.FailUnder}
	if value < *c.FailUnder {
		return exitcode.With(exitcode.Gate, fmt.Errorf("gate failed: %s %.3f is below --fail-under %g (%s: %s)", what, value, *c.FailUnder, over, a))
	}
	e.say("gate", data, fmt.Sprintf("gate passed: %s %.3f is at least %g (%s)", what, value, *c.FailUnder, over))
	return nil
}

func describeSweepRun(r sweep.Run) string {
	var parts []string
	keys := make([]string, 0, len(r.Vars))
	for k := range r.Vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, k+"="+r.Vars[k])
	}
	if r.Line > 0 {
		parts = append(parts, fmt.Sprintf("line %d", r.Line))
	}
	if r.Sample > 0 {
		parts = append(parts, fmt.Sprintf("sample %d", r.Sample))
	}
	if len(r.OutputOrder) > 0 {
		out := sweep.FormatValue(r.Outputs[r.OutputOrder[0]])
		if len(out) > 40 {
			out = out[:40] + "…"
		}
		parts = append(parts, fmt.Sprintf("%s=%s", r.OutputOrder[0], strings.Join(strings.Fields(out), " ")))
	}
	if r.Score != nil {
		parts = append(parts, fmt.Sprintf("score=%g", *r.Score))
	}
	if r.Error != "" {
		parts = append(parts, r.Error)
	}
	s := " " + strings.Join(parts, " ")
	if r.Dir != "" {
		s += " (" + r.Dir + ")"
	}
	return s
}

// readRunResult reads result.json of a run directory.
func readRunResult(dir string) (*result.Result, error) {
	if dir == "" {
		return nil, errors.New("no run directory")
	}
	data, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		return nil, err
	}
	var res result.Result
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("%s/result.json: %w", dir, err)
	}
	return &res, nil
}

// resumeSweep finishes a sweep: every run that did not complete is
// resumed or started, and the summary is written.
func (c *resumeCmd) resumeSweep(e *env, opts runtime.Options) error {
	if c.Spec != "" {
		return usageErrorf("--spec %s: a sweep resumes with the spec it started with; resume its runs one by one to change it", c.Spec)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ro := sweep.ResumeOptions{Run: opts}
	ro.Run.Spec, ro.Run.Ask = "", nil
	if !c.Quiet {
		ro.OnRun = func(done, total int, r sweep.Run) {
			e.say("sweep_run", map[string]any{"done": done, "total": total, "run": r}, fmt.Sprintf("[%d/%d] %s%s", done, total, r.Status, describeSweepRun(r)))
		}
	}
	sum, err := sweep.Resume(ctx, c.Dir, nodes.Registry(), ro)
	if sum == nil {
		return err
	}
	fmt.Fprint(e.stdout, sum.Table().Markdown(60))
	fmt.Fprintf(e.stdout, "\n%s\n", sum.CallsLine())
	if line := sum.AccuracyLine(); line != "" {
		fmt.Fprintln(e.stdout, line)
	}
	e.say("sweep_dir", map[string]string{"dir": sum.Dir}, "sweep: "+sum.Dir)
	switch {
	case err != nil:
		return exitcode.With(exitcode.Failure, err)
	case sum.Waiting > 0:
		return exitcode.With(exitcode.Waiting, fmt.Errorf("%d run(s) wait for answers to clarifying questions; resume each with runner resume DIR --answers FILE", sum.Waiting))
	}
	return inconclusiveSweep(sum)
}
