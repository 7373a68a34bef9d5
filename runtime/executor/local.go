package executor

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/paired"
	"github.com/debate-runner/runner/runtime/progress"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/sweep"
	"github.com/debate-runner/runner/runtime/tracing"
	"github.com/debate-runner/runner/spec"
)

// local makes runs here: runtime.Start, and runtime.Resume for a run
// directory (a sweep directory, sweep.Resume).
type local struct{}

func (local) Capabilities() Capabilities {
	return Capabilities{Records: true, Sweeps: true, Replays: true, Resumes: true, Batches: true}
}

func (local) Validate(*Launch) error { return nil }

func (local) Start(ctx context.Context, l *Launch) (Handle, error) {
	if l.Sweep.Sweeping() {
		return startSweep(l, nil)
	}
	r, err := runtime.Start(l.Plan, l.Run)
	if err != nil {
		return nil, err
	}
	return started(l, r, nil), nil
}

// Owns every run and sweep directory another executor does not.
func (local) Owns(string) (bool, error) { return true, nil }

func (local) Resume(ctx context.Context, dir string, l *Launch) (Handle, error) {
	if sweep.IsSweepDir(dir) {
		return resumeSweep(dir, l)
	}
	r, err := runtime.Resume(dir, l.Registry, l.Run)
	if err != nil {
		return nil, progress.NotResumed(l.Out.Tell, err)
	}
	return &runHandle{r: r, out: l.Out}, nil
}

// started is the handle of a run started here, shown in the view.
func started(l *Launch, r *runtime.Run, verify func(context.Context, *runtime.Run, error) error) *runHandle {
	l.Out.show("/run/" + filepath.Base(r.Dir))
	return &runHandle{r: r, out: l.Out, csv: l.Out.CSV, verify: verify}
}

// runHandle is a run made through the engine here (its calls made here or
// elsewhere).
type runHandle struct {
	r   *runtime.Run
	out Out
	csv string
	// verify, when set, checks the run against what made it elsewhere.
	verify func(context.Context, *runtime.Run, error) error
}

func (h *runHandle) Dir() string { return h.r.Dir }

func (h *runHandle) Result() *result.Result { return h.r.Result() }

func (h *runHandle) Wait(ctx context.Context) error {
	res, err := h.r.Execute(ctx)
	if h.out.Stdout == nil {
		return err // no one to tell: the run's own error
	}
	err = progress.Outcome(h.out.Tell, h.out.Stdout, h.r, res, err)
	if h.verify != nil {
		return h.verify(ctx, h.r, err)
	}
	progress.Calls(h.out.Tell, h.r, h.out.Quiet)
	if h.csv != "" && h.r.Result() != nil {
		if cerr := result.AppendCSV(h.csv, h.r.Result()); cerr != nil && err == nil {
			err = exitcode.With(exitcode.Failure, cerr)
		}
	}
	return err
}

// sweepHandle is a sweep whose runs an executor makes.
type sweepHandle struct {
	l     *Launch
	so    sweep.Options
	dir   string
	close func()
}

func (h *sweepHandle) Dir() string { return h.dir }

func (h *sweepHandle) Result() *result.Result { return nil }

// startSweep is the sweep l asks for, its runs started by start (nil:
// here).
func startSweep(l *Launch, start func(int, *spec.Plan, runtime.Options) (*runtime.Run, error)) (*sweepHandle, error) {
	if l.Sweep.Batch {
		if err := batchEndpoints(l); err != nil {
			return nil, err
		}
	}
	so, err := l.Sweep.Options(l.Run)
	if err != nil {
		return nil, err
	}
	so.Start = start
	// A sweep's runs wait for their folders, as they always did.
	so.Run.EarlyCalls = false
	return &sweepHandle{l: l, so: so}, nil
}

func (h *sweepHandle) Wait(ctx context.Context) error {
	if h.close != nil {
		defer h.close()
	}
	l := h.l
	t := telling(l.Out)
	h.so.OnRun = t.OnRun()
	h.so.OnBatch = t.OnBatch()
	h.so.OnStart = func(dir string, total int) {
		h.dir = dir
		t.Started(dir, total)
		// The sweep's page needs summary.json, written at its end; until
		// then the list of runs shows its runs as they go.
		l.Out.show("/?q=" + filepath.Base(dir))
	}
	ctx, span := tracing.StartSweep(ctx, l.Plan.Name)
	sum, err := sweep.Sweep(ctx, l.Plan, h.so)
	span.End(err)
	done := t.Done(sum, err, l.Out.CSV, l.Gate)
	if l.Sweep.EqualCompute == "" || sum == nil || ctx.Err() != nil {
		return done
	}
	if ecErr := h.equalCompute(ctx, t, sum); done == nil {
		return ecErr
	}
	return done
}

// equalCompute sweeps the self-consistency spec of --equal-compute over
// the sweep's dataset with the sweep's mean calls per item as its
// samples, and prints the two compared item by item.
func (h *sweepHandle) equalCompute(ctx context.Context, t sweep.Telling, sum *sweep.Summary) error {
	l := h.l
	if h.so.Start != nil {
		return exitcode.Errorf(exitcode.Usage, "--equal-compute is not offered with --temporal yet: run the sweep locally, or use a study's equal_compute")
	}
	plan, diags := runtime.Load(l.Sweep.EqualCompute, l.Registry)
	if diags.HasErrors() {
		return exitcode.Errorf(exitcode.InvalidSpec, "--equal-compute %s:\n%s", l.Sweep.EqualCompute, strings.TrimRight(diags.Format(), "\n"))
	}
	if !slices.ContainsFunc(plan.Vars, func(v *spec.VarPlan) bool { return v.Name == "samples" }) || !plan.Scored() {
		return exitcode.Errorf(exitcode.Usage, "--equal-compute %s: the spec must declare a var samples (its number of samples) and a score", l.Sweep.EqualCompute)
	}
	c, err := sweep.EqualCompute("calls", sum, nil)
	if err != nil {
		return exitcode.With(exitcode.Failure, fmt.Errorf("--equal-compute: %w", err))
	}
	t.Tell.Say("equal_compute", c, fmt.Sprintf("equal compute: %s with %d samples per item (the sweep's mean calls per item: %.2f over %d items)", plan.Name, c.Samples, c.PerItem, c.Items))
	so := h.so
	so.Run.Sets = append(slices.Clone(so.Run.Sets), fmt.Sprintf("samples=%d", c.Samples))
	so.OnStart = func(dir string, total int) { t.Started(dir, total) }
	sc, err := sweep.Sweep(ctx, plan, so)
	done := t.Done(sc, err, "", nil)
	if sc == nil || ctx.Err() != nil {
		return done
	}
	cmp, err := paired.Compare(sum, sc, paired.Options{})
	if err != nil {
		return exitcode.With(exitcode.Failure, fmt.Errorf("--equal-compute: %w", err))
	}
	if t.Stdout != nil {
		fmt.Fprintf(t.Stdout, "\n## Equal compute: %s against %s at %d samples per item\n\n%s", l.Plan.Name, plan.Name, c.Samples, cmp.Markdown())
	}
	return done
}

// resumeSweep finishes a sweep: every run that did not complete is
// resumed or started, and the summary is written.
func resumeSweep(dir string, l *Launch) (Handle, error) {
	if l.Run.Resample {
		return nil, exitcode.Errorf(exitcode.Usage, "--resample asks one run's failed calls afresh; give the directory of a failed run of the sweep (runner resume runs/sweep-<id>/<run> --resample), then resume the sweep")
	}
	if l.Run.Spec != "" {
		return nil, exitcode.Errorf(exitcode.Usage, "--spec %s: a sweep resumes with the spec it started with; resume its runs one by one to change it", l.Run.Spec)
	}
	return &resumedSweep{dir: dir, l: l}, nil
}

type resumedSweep struct {
	dir string
	l   *Launch
}

func (h *resumedSweep) Dir() string { return h.dir }

func (h *resumedSweep) Result() *result.Result { return nil }

func (h *resumedSweep) Wait(ctx context.Context) error {
	t := telling(h.l.Out)
	ro := sweep.ResumeOptions{Run: h.l.Run, OnRun: t.OnRun(), OnBatch: t.OnBatch()}
	ro.Run.Spec, ro.Run.Ask = "", nil
	sum, err := sweep.Resume(ctx, h.dir, h.l.Registry, ro)
	return t.Resumed(sum, err)
}

// telling tells the user about a sweep (see sweep.Telling).
func telling(o Out) sweep.Telling {
	return sweep.Telling{Tell: o.Tell, Stdout: o.Stdout, Quiet: o.Quiet}
}
