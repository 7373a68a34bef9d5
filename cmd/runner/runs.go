package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/debate-runner/runner/runtime/paired"
	"github.com/debate-runner/runner/runtime/sweep"
)

type runsCmd struct {
	// Dir is "" when not given: then runs, which a new project lacks.
	Dir string `arg:"" optional:"" name:"DIR" help:"Runs directory (default runs)."`
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

func (c *runsCmd) Run(e *env) error {
	given := c.Dir != ""
	if !given {
		c.Dir = "runs"
	}
	return sweep.ListRuns(e.stdout, c.Dir, given, c.CSV)
}

type compareCmd struct {
	Runs     []string `arg:"" name:"RUN" help:"Run directories, or sweep directories (all their runs)."`
	CSV      bool     `name:"csv" help:"Print CSV instead of Markdown."`
	Baseline string   `name:"baseline" placeholder:"RUN" help:"A run or sweep directory to gate against: exit 7 when one of the others scores worse than it by more than --margin."`
	Margin   float64  `name:"margin" default:"0" placeholder:"X" help:"How much worse than --baseline a score (a run's score, a sweep's accuracy) may be."`
	MarginOn string   `name:"margin-on" enum:"mean,lower" default:"mean" help:"What the gate holds to --margin: the difference of the accuracies (mean), or, for two sweeps over the same dataset, the lower end of the paired bootstrap interval of the difference (lower)."`
	JSON     bool     `name:"json" help:"For two sweeps over the same dataset: print the paired comparison as JSON."`
	Seed     uint64   `name:"seed" default:"1" help:"Seed of the paired bootstrap (two sweeps over the same dataset)."`
	Resample int      `name:"resamples" default:"10000" help:"Resamples of the paired bootstrap."`
}

func (compareCmd) Help() string {
	return `Puts runs side by side: the vars and inputs that differ between them, their
outputs, expected values and scores, status and usage. A sweep directory stands
for all its runs; with sweeps, their accuracy (mean score with a 95% confidence
interval) and call counts are listed too.

With --baseline, compare is a CI gate: it exits 7 when a run or sweep scores
worse than the baseline by more than --margin (a sweep's score is its
accuracy, a run's its score).

Two sweeps over the same dataset are also compared item by item: runs are
paired by dataset line, and compare prints each side's accuracy on the pairs,
the difference with a 95% paired bootstrap interval (seeded: --seed,
--resamples), an exact McNemar test for 0/1 scores (paired t and Wilcoxon for
graded ones) with the discordant counts, cost, tokens, calls and seconds per
item with their ratios, how many calls each took from the cache that the
other sent, and the items only one side has. --csv and --json print this
comparison alone. With --margin-on lower, the gate fails when the lower end
of the interval of (other − baseline) is below −margin.

Examples:
  runner compare runs/<run-a> runs/<run-b>
  runner compare runs/sweep-<debate-id> runs/sweep-<baseline-id>
  runner compare runs/sweep-<id> --csv > sweep.csv
  runner compare runs/sweep-<new> --baseline runs/sweep-<old> --margin 0.05
  runner compare runs/sweep-<new> --baseline runs/sweep-<old> --margin 0.02 --margin-on lower`
}

func (c *compareCmd) Run(e *env) error {
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
	pair, err := c.paired(args)
	if err != nil {
		return err
	}
	if pair != nil && (c.JSON || c.CSV) {
		if c.JSON {
			data, _ := json.MarshalIndent(pair, "", "  ")
			fmt.Fprintln(e.stdout, string(data))
		} else {
			fmt.Fprint(e.stdout, pair.CSV())
		}
		if c.Baseline != "" {
			return c.gate(e, args, pair)
		}
		return nil
	}
	if c.JSON {
		return usageErrorf("--json: give two sweep directories over the same dataset")
	}
	runs, sweeps, err := sweep.Compared(args)
	if err != nil {
		return err
	}
	t := sweep.CompareTable(runs)
	if c.CSV {
		fmt.Fprint(e.stdout, t.CSV())
		return nil
	}
	fmt.Fprint(e.stdout, t.Markdown(60))
	if len(sweeps) > 0 {
		st := sweep.SweepsTable(sweeps)
		fmt.Fprint(e.stdout, "\n"+st.Markdown(0))
	}
	if pair != nil {
		fmt.Fprint(e.stdout, "\n"+pair.Markdown())
	}
	if c.Baseline != "" {
		return c.gate(e, args, pair)
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
func (c *compareCmd) gate(e *env, args []string, pair *paired.Result) error {
	if c.MarginOn == "lower" {
		data, line, err := pair.GateLower(args[0], args[1], c.Margin)
		if err == nil {
			e.say("gate", data, line)
		}
		return err
	}
	passed, err := sweep.ScoreGate(args[0], args[1:], c.Margin)
	for _, p := range passed {
		e.say("gate", p.Data, p.Text)
	}
	return err
}
