package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/durable"
	"github.com/debate-runner/runner/runtime/study"
	"github.com/debate-runner/runner/runtime/sweep"
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
	path := c.File
	dir := c.Dir
	if study.IsStudyDir(path) {
		if dir == "" {
			dir = path
		}
		f, err := study.FileOf(path)
		if err != nil {
			return exitcode.With(exitcode.Failure, err)
		}
		path = f
	}
	f, err := study.Load(path)
	if err != nil {
		var errs study.Errors
		if errors.As(err, &errs) {
			return exitcode.With(exitcode.InvalidSpec, err)
		}
		return usageErrorf("%s: %v", path, err)
	}
	st, err := study.Prepare(f, nodes.Registry())
	if err != nil {
		return exitcode.With(exitcode.InvalidSpec, err)
	}
	if dir == "" {
		dir = study.DefaultDir(c.RunsDir, f)
	}
	opts := runtime.Options{Settings: runtime.Settings{Getenv: e.getenv, Version: Version()}}
	if !c.NoCache {
		st, err := openCache(e, c.CacheDir)
		if err != nil {
			return err
		}
		if st != nil {
			opts.Cache = st
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
		x := c.executor(cl, addr, 0)
		so.Sweeps = durable.Sweeps{X: x, Registry: nodes.Registry()}
		so.OnOpen = func(dir string) error {
			return durable.WriteRecord(dir, durable.Record{Address: addr, Namespace: c.Namespace, TaskQueue: c.TaskQueue, BuildID: Version()})
		}
		c.warnNoBuild(ctx, e, cl)
	}
	if !c.Quiet {
		so.OnSweep = func(cell study.Cell, d, what string) {
			e.say("study_sweep", map[string]any{"protocol": cell.Label, "model": cell.Model, "dir": d, "what": what},
				fmt.Sprintf("study: %s with %s: %s, %s", cell.Label, modelLabel(cell.Model), what, d))
		}
		so.OnRun = func(cell study.Cell, done, total int, r sweep.Run) {
			e.say("sweep_run", map[string]any{"done": done, "total": total, "run": r},
				fmt.Sprintf("[%s %s %d/%d] %s%s", cell.Label, modelLabel(cell.Model), done, total, r.Status, r.Describe()))
		}
	}
	rep, err := study.Run(ctx, st, so)
	if rep == nil {
		if err != nil && ctx.Err() != nil {
			return exitcode.With(exitcode.Failure, fmt.Errorf("study interrupted; continue it with: runner study %s", dir))
		}
		return exitcode.With(exitcode.Failure, err)
	}
	switch c.Format {
	case "csv":
		fmt.Fprint(e.stdout, rep.CSV())
	case "json":
		data, jerr := json.MarshalIndent(rep, "", "  ")
		if jerr != nil {
			return exitcode.With(exitcode.Failure, jerr)
		}
		fmt.Fprintln(e.stdout, string(data))
	default:
		fmt.Fprint(e.stdout, rep.Markdown())
	}
	e.say("study_dir", map[string]string{"dir": dir}, "study: "+dir)
	if err != nil {
		return exitcode.With(exitcode.Failure, fmt.Errorf("%w; continue the study with: runner study %s", err, dir))
	}
	inconclusive := 0
	for _, r := range rep.Rows {
		inconclusive += r.Inconclusive
	}
	if inconclusive > 0 {
		return exitcode.With(exitcode.Inconclusive, fmt.Errorf("%d run(s) of the study inconclusive (finished without reaching their purpose; counted wrong in the accuracy)", inconclusive))
	}
	return nil
}

func modelLabel(m string) string {
	if m == "" {
		return "the spec's model"
	}
	return m
}
