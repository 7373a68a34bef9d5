package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/sweep"
)

type runsCmd struct {
	Dir string `arg:"" optional:"" name:"DIR" default:"runs" help:"Runs directory (default runs)."`
	CSV bool   `name:"csv" help:"Print CSV instead of a Markdown table."`
}

func (runsCmd) Help() string {
	return `Lists the runs in DIR, and the runs of the sweeps in it, oldest first: id,
spec, status, rounds and goals, calls, tokens, cost, duration and the first
output. A run without result.json is still running or was killed ('runner
resume' continues it).

Examples:
  runner runs
  runner runs runs/sweep-20261121T101500Z-reasoning-debate-1a2b3c --csv`
}

// runInfo is one run directory, read.
type runInfo struct {
	Dir      string
	Label    string
	Sweep    string
	Manifest runtime.Manifest
	Result   *runtime.Result // nil while running or after a kill
}

// readRun reads run.json and, when present, result.json of a run directory.
func readRun(dir string) (runInfo, error) {
	info := runInfo{Dir: dir, Label: filepath.Base(dir)}
	data, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		return info, fmt.Errorf("%s is not a run directory (no run.json)", dir)
	}
	if err := json.Unmarshal(data, &info.Manifest); err != nil {
		return info, fmt.Errorf("%s/run.json: %w", dir, err)
	}
	info.Sweep = info.Manifest.Sweep
	if res, err := readRunResult(dir); err == nil {
		info.Result = res
	}
	return info, nil
}

// collectRuns finds the runs in dir and in its sweep directories.
func collectRuns(dir string) ([]runInfo, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, usageErrorf("%s: %v", dir, errorsUnwrapPath(err))
	}
	var out []runInfo
	for _, en := range entries {
		if !en.IsDir() {
			continue
		}
		sub := filepath.Join(dir, en.Name())
		if ri, err := readRun(sub); err == nil {
			out = append(out, ri)
			continue
		}
		inner, err := os.ReadDir(sub)
		if err != nil {
			continue
		}
		for _, in := range inner {
			if !in.IsDir() {
				continue
			}
			if ri, err := readRun(filepath.Join(sub, in.Name())); err == nil {
				ri.Label = en.Name() + "/" + in.Name()
				out = append(out, ri)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Manifest.Created.Equal(out[j].Manifest.Created) {
			return out[i].Manifest.Created.Before(out[j].Manifest.Created)
		}
		return out[i].Label < out[j].Label
	})
	return out, nil
}

func errorsUnwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// roundsAndGoals counts the rounds (the highest round of a message) and
// the goals a run went through.
func roundsAndGoals(res *runtime.Result) (int, int) {
	rounds := 0
	goals := map[string]bool{}
	for _, m := range res.Messages {
		rounds = max(rounds, m.Round)
		if m.Goal != "" {
			goals[m.Goal] = true
		}
	}
	return rounds, len(goals)
}

// countText shows a count, or nothing for none (a run without rounds).
func countText(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

func firstOutput(res *runtime.Result) string {
	if res == nil || len(res.OutputOrder) == 0 {
		return ""
	}
	return sweep.FormatValue(res.Outputs[res.OutputOrder[0]])
}

func (c *runsCmd) Run(e *env) error {
	runs, err := collectRuns(c.Dir)
	if err != nil {
		return err
	}
	t := sweep.Table{Header: []string{"id", "spec", "status", "rounds", "goals", "calls", "tokens", "cost", "seconds", "first output"}, Whole: 1}
	builtin := ""
	for _, r := range runs {
		row := []string{r.Label, r.Manifest.SpecName}
		if r.Result == nil {
			row = append(row, "incomplete", "", "", "", "", "", "", "")
		} else {
			rounds, goals := roundsAndGoals(r.Result)
			u := r.Result.Usage.Total
			if u.BuiltinPrices != "" {
				builtin = u.BuiltinPrices
			}
			row = append(row, r.Result.Status, countText(rounds), countText(goals), fmt.Sprint(u.Calls),
				fmt.Sprint(u.PromptTokens+u.CompletionTokens), sweep.FormatCost(u),
				fmt.Sprintf("%.1f", float64(r.Result.DurationMS)/1000), firstOutput(r.Result))
		}
		t.Rows = append(t.Rows, row)
	}
	if c.CSV {
		fmt.Fprint(e.stdout, t.CSV())
		return nil
	}
	if len(runs) == 0 {
		fmt.Fprintf(e.stdout, "no runs in %s\n", c.Dir)
		return nil
	}
	fmt.Fprint(e.stdout, t.Markdown(60))
	if builtin != "" {
		fmt.Fprintln(e.stdout, "\n"+sweep.BuiltinPriceNote(builtin))
	}
	return nil
}

type compareCmd struct {
	Runs     []string `arg:"" name:"RUN" help:"Run directories, or sweep directories (all their runs)."`
	CSV      bool     `name:"csv" help:"Print CSV instead of Markdown."`
	Baseline string   `name:"baseline" placeholder:"RUN" help:"A run or sweep directory to gate against: exit 7 when one of the others scores worse than it by more than --margin."`
	Margin   float64  `name:"margin" default:"0" placeholder:"X" help:"How much worse than --baseline a score (a run's score, a sweep's accuracy) may be."`
}

func (compareCmd) Help() string {
	return `Puts runs side by side: the vars and inputs that differ between them, their
outputs, expected values and scores, status and usage. A sweep directory stands
for all its runs; with sweeps, their accuracy (mean score with a 95% confidence
interval) and call counts are listed too.

With --baseline, compare is a CI gate: it exits 7 when a run or sweep scores
worse than the baseline by more than --margin (a sweep's score is its
accuracy, a run's its score).

Examples:
  runner compare runs/<run-a> runs/<run-b>
  runner compare runs/sweep-<debate-id> runs/sweep-<baseline-id>
  runner compare runs/sweep-<id> --csv > sweep.csv
  runner compare runs/sweep-<new> --baseline runs/sweep-<old> --margin 0.05`
}

func (c *compareCmd) Run(e *env) error {
	var runs []runInfo
	var sweeps []*sweep.Summary
	args := c.Runs
	if c.Baseline != "" {
		if c.Margin < 0 {
			return usageErrorf("--margin %g: give a margin of at least 0", c.Margin)
		}
		args = append([]string{c.Baseline}, without(c.Runs, c.Baseline)...)
		if len(args) < 2 {
			return usageErrorf("--baseline %s: give at least one other run or sweep to compare with it", c.Baseline)
		}
	}
	for _, arg := range args {
		if _, err := os.Stat(filepath.Join(arg, "summary.json")); err == nil {
			sum, err := sweep.Load(arg)
			if err != nil {
				return withCode(exitFailure, err)
			}
			sweeps = append(sweeps, sum)
			for _, sr := range sum.Runs {
				if sr.Dir == "" {
					continue // never started
				}
				dir := sr.Dir
				if _, err := os.Stat(dir); err != nil {
					dir = filepath.Join(arg, filepath.Base(sr.Dir)) // the sweep moved
				}
				ri, err := readRun(dir)
				if err != nil {
					return withCode(exitFailure, err)
				}
				ri.Label = filepath.Base(arg) + "/" + filepath.Base(dir)
				runs = append(runs, ri)
			}
			continue
		}
		ri, err := readRun(arg)
		if err != nil {
			return usageErrorf("%v", err)
		}
		runs = append(runs, ri)
	}
	t := compareTable(runs)
	if c.CSV {
		fmt.Fprint(e.stdout, t.CSV())
		return nil
	}
	fmt.Fprint(e.stdout, t.Markdown(60))
	if len(sweeps) > 0 {
		st := sweep.Table{Whole: 1, Header: []string{"sweep", "spec", "runs", "completed", "accuracy", "95% CI", "calls made", "without the cache", "tokens", "cost"}}
		for _, s := range sweeps {
			acc, ci := "", ""
			if a := s.Accuracy; a != nil {
				acc = fmt.Sprintf("%.3f (n=%d)", a.Mean, a.N)
				ci = fmt.Sprintf("%.3f–%.3f (%s)", a.Low, a.High, a.Method)
			}
			st.Rows = append(st.Rows, []string{filepath.Base(s.Dir), s.Spec, fmt.Sprint(len(s.Runs)), fmt.Sprint(s.Completed), acc, ci,
				fmt.Sprint(s.CallsMade), fmt.Sprint(s.CallsWithoutCache), fmt.Sprint(s.Usage.PromptTokens + s.Usage.CompletionTokens), sweep.FormatCost(s.Usage)})
		}
		fmt.Fprint(e.stdout, "\n"+st.Markdown(0))
	}
	if c.Baseline != "" {
		return c.gate(e, args)
	}
	return nil
}

func without(list []string, s string) []string {
	var out []string
	for _, x := range list {
		if filepath.Clean(x) != filepath.Clean(s) {
			out = append(out, x)
		}
	}
	return out
}

// gate compares every run or sweep with the baseline (args[0]) and fails
// when one scores worse than it by more than the margin.
func (c *compareCmd) gate(e *env, args []string) error {
	base, err := scoreOf(args[0])
	if err != nil {
		return usageErrorf("--baseline %s: %v", args[0], err)
	}
	var worse []string
	for _, arg := range args[1:] {
		s, err := scoreOf(arg)
		if err != nil {
			return usageErrorf("%s: %v", arg, err)
		}
		line := fmt.Sprintf("%s: %.3f against the baseline's %.3f (%+.3f)", arg, s, base, s-base)
		if base-s > c.Margin+1e-12 {
			worse = append(worse, line)
			continue
		}
		e.say("gate", map[string]any{"run": arg, "score": s, "baseline": base, "margin": c.Margin, "passed": true}, "gate passed: "+line)
	}
	if len(worse) > 0 {
		return withCode(exitGate, fmt.Errorf("gate failed: worse than the baseline %s by more than %g:\n  %s", args[0], c.Margin, strings.Join(worse, "\n  ")))
	}
	return nil
}

// scoreOf is what the gate compares: a sweep's accuracy, a run's score.
func scoreOf(dir string) (float64, error) {
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err == nil {
		sum, err := sweep.Load(dir)
		if err != nil {
			return 0, err
		}
		if sum.Accuracy == nil {
			return 0, errors.New("the sweep has no scored runs, so no accuracy to compare")
		}
		return sum.Accuracy.Mean, nil
	}
	res, err := readRunResult(dir)
	if err != nil {
		return 0, err
	}
	if res.Score == nil {
		return 0, errors.New("the run has no score (it needs a dataset line's expected value and the spec's score)")
	}
	return *res.Score, nil
}

// compareTable lays runs side by side. Vars and inputs are shown when they
// differ between the runs (all of them for a single run), outputs in the
// order the specs declare them.
func compareTable(runs []runInfo) sweep.Table {
	varying := func(get func(runInfo) map[string]any) []string {
		names := map[string]bool{}
		for _, r := range runs {
			for k := range get(r) {
				names[k] = true
			}
		}
		var out []string
		for k := range names {
			first := get(runs[0])[k]
			differs := len(runs) == 1
			for _, r := range runs[1:] {
				if !reflect.DeepEqual(get(r)[k], first) {
					differs = true
					break
				}
			}
			if differs {
				out = append(out, k)
			}
		}
		sort.Strings(out)
		return out
	}
	vars := varying(func(r runInfo) map[string]any { return r.Manifest.Vars })
	inputs := varying(func(r runInfo) map[string]any { return r.Manifest.Inputs })
	var outputs []string
	seen := map[string]bool{}
	hasScore := false
	for _, r := range runs {
		if r.Result == nil {
			continue
		}
		for _, o := range r.Result.OutputOrder {
			if !seen[o] {
				seen[o] = true
				outputs = append(outputs, o)
			}
		}
		hasScore = hasScore || r.Result.Score != nil || r.Result.Expected != nil
	}
	t := sweep.Table{Header: []string{"run", "spec"}, Whole: 1}
	for _, v := range vars {
		t.Header = append(t.Header, "var "+v)
	}
	for _, in := range inputs {
		t.Header = append(t.Header, "input "+in)
	}
	t.Header = append(t.Header, "status")
	t.Header = append(t.Header, outputs...)
	if hasScore {
		t.Header = append(t.Header, "expected", "score")
	}
	t.Header = append(t.Header, "calls", "prompt tokens", "completion tokens", "cost", "seconds")
	for _, r := range runs {
		row := []string{r.Label, r.Manifest.SpecName}
		for _, v := range vars {
			row = append(row, sweep.FormatValue(r.Manifest.Vars[v]))
		}
		for _, in := range inputs {
			row = append(row, sweep.FormatValue(r.Manifest.Inputs[in]))
		}
		res := r.Result
		if res == nil {
			row = append(row, "incomplete")
			t.Rows = append(t.Rows, row)
			continue
		}
		status := res.Status
		if res.Error != "" {
			status += ": " + strings.SplitN(res.Error, "\n", 2)[0]
		}
		row = append(row, status)
		for _, o := range outputs {
			row = append(row, sweep.FormatValue(res.Outputs[o]))
		}
		if hasScore {
			score := ""
			if res.Score != nil {
				score = fmt.Sprintf("%g", *res.Score)
			}
			row = append(row, sweep.FormatValue(res.Expected), score)
		}
		u := res.Usage.Total
		row = append(row, fmt.Sprint(u.Calls), fmt.Sprint(u.PromptTokens), fmt.Sprint(u.CompletionTokens), sweep.FormatCost(u), fmt.Sprintf("%.1f", float64(res.DurationMS)/1000))
		t.Rows = append(t.Rows, row)
	}
	return t
}
