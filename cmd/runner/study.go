package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/executor"
)

type studyCmd struct {
	File          string `arg:"" name:"STUDY" help:"Study file (YAML; schemas/study.schema.json), or a study directory to continue."`
	RunsDir       string `name:"runs-dir" default:"runs" placeholder:"DIR" help:"Where the study directory (study-NAME) is created."`
	Dir           string `name:"dir" placeholder:"DIR" help:"The study directory (default: RUNS_DIR/study-NAME). Running the same study into it again continues it."`
	CacheDir      string `name:"cache-dir" placeholder:"DIR" help:"Response cache directory (default: $RUNNER_CACHE_DIR, else runner/ in the user cache directory)."`
	NoCache       bool   `name:"no-cache" help:"Neither read nor write the response cache: every call goes to the model."`
	Format        string `name:"format" enum:"md,csv,json" default:"md" help:"How the table is printed: md, csv or json (all three are written to the study directory)."`
	Quiet         bool   `short:"q" help:"No progress on stderr."`
	temporalFlags `embed:"" group:"Temporal (docs/scaling-out.md)"`
}

func (studyCmd) Help() string {
	return `Runs a study: every spec of the study file over its dataset with every
model (one sweep each, in the study directory), then prints one table: each
protocol's accuracy with its 95% interval, its difference from the baseline
under the same model with a paired bootstrap interval and an exact McNemar
p-value (Holm-adjusted across the comparisons), calls, tokens, cost, seconds
and inconclusive runs. results.md, results.csv and results.json are written
to the study directory; runner view STUDY_DIR shows the table with a chart.

A killed study continues where it stopped: run the same command again (or
runner resume STUDY_DIR, or runner study STUDY_DIR). Finished sweeps are
read, a killed sweep is resumed from its runs' journals, and no journaled
call is asked again.

With --temporal (or $RUNNER_TEMPORAL) each sweep is submitted to Temporal
and made by 'runner worker's, as 'runner run --temporal' makes one; the
study directory, its sweeps and its table are those of a local study. The
directory records where the study is made (temporal.json): continued, it
goes on there, following the runs the workers made while it was stopped. A study directory holds one study: one whose file,
dataset, models or specs changed is refused.

Exit codes: 0, 1 when a run failed (continue the study to retry it), 2
usage, 4 an invalid study file or spec, 8 when runs were inconclusive.

Examples:
  runner study examples/protocols/du-society-of-minds/study.yaml
  runner study examples/protocols/du-society-of-minds/study.yaml --temporal 127.0.0.1:7233
  runner study runs/study-du-arithmetic`
}

func (c *studyCmd) Run(e *env) error {
	x, err := executor.Lookup("study")
	if err != nil {
		return err
	}
	l := &executor.Launch{Registry: nodes.Registry(),
		Run:      runtime.Options{Settings: runtime.Settings{Getenv: e.getenv, Version: Version()}},
		Study:    executor.Study{File: c.File, Dir: c.Dir, RunsDir: c.RunsDir, CacheDir: c.CacheDir, NoCache: c.NoCache, Format: c.Format},
		Temporal: c.temporal(e, c.address(e), 0),
		Out:      executor.Out{Tell: e.teller(), Stdout: e.stdout, Quiet: c.Quiet}}
	if err := executor.Validate("study", x, l); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h, err := x.Start(ctx, l)
	if err != nil {
		return err
	}
	return h.Wait(ctx)
}
