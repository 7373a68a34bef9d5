package main

import (
	"github.com/debate-runner/runner/runtime/compare"
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
	Cell     string   `name:"cell" placeholder:"NAME=V,..." help:"For a --matrix sweep: the cell (one combination of its matrix values) the paired comparison takes of it, e.g. rounds=2; it applies to each matrix sweep compared."`
	CellB    string   `name:"cell-b" placeholder:"NAME=V,..." help:"B's cell (the second sweep, or the --baseline), when it differs from --cell: two cells of one matrix sweep compare with A and B the same directory."`
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
	return compare.Run(e.stdout, e.teller(), c.Runs, compare.Options{
		CSV: c.CSV, JSON: c.JSON, Baseline: c.Baseline, Margin: c.Margin, MarginOn: c.MarginOn, Seed: c.Seed, Resamples: c.Resample, Cell: c.Cell, CellB: c.CellB,
	})
}
