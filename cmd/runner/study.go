package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/durable"
	"github.com/debate-runner/runner/runtime/study"
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
	st, dir, err := study.Open(c.File, c.Dir, c.RunsDir, nodes.Registry())
	if err != nil {
		return err
	}
	opts := runtime.Options{Settings: runtime.Settings{Getenv: e.getenv, Version: Version()}}
	if !c.NoCache {
		if err := openCache(e, c.CacheDir, &opts.Cache); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	so := study.Options{Run: opts, Dir: dir, Registry: nodes.Registry()}
	addr := c.address(e)
	if rec, ok, err := durable.ReadRecord(dir); err != nil {
		return exitcode.With(exitcode.Failure, err)
	} else if ok && addr == "" {
		// Made on Temporal: it goes on there.
		addr, c.Namespace, c.TaskQueue = rec.Address, rec.Namespace, rec.TaskQueue
	}
	if addr != "" {
		cl, err := c.dial(ctx, e, addr)
		if err != nil {
			return err
		}
		defer cl.Close()
		c.executor(cl, addr, 0).Study(ctx, &so, e.teller())
	}
	if !c.Quiet {
		study.Tell(e.teller(), &so)
	}
	rep, err := study.Run(ctx, st, so)
	return study.Done(ctx, e.stdout, e.teller(), rep, err, dir, c.Format)
}
