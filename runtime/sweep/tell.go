package sweep

import (
	"errors"
	"fmt"
	"github.com/debate-runner/runner/runtime/batch"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/progress"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
)

// This file is how runner run, runner resume and runner runs tell their
// user about sweeps and runs: progress lines as runs end, the summary on
// stdout, the sweep directory, the gate's verdict, the list of runs.

// Telling tells a sweep's user what it does.
type Telling struct {
	Tell   progress.Teller
	Stdout io.Writer
	// Quiet leaves out the lines of progress (not the summary).
	Quiet bool
}

// Gate is --fail-under and its flags (see Summary.Gate).
type Gate struct {
	Threshold float64
	On, Over  string
}

// Flags are runner run's flags that make a sweep and check it.
type Flags struct {
	// Matrix are --matrix NAME=V1,V2,... flags (see ParseAxis).
	Matrix   []string
	Repeat   int
	Dataset  string
	Parallel int
	// OwnSamples keeps the sweep's samples its own (Options.OwnSamples).
	OwnSamples bool
	// FailUnder is --fail-under, the accuracy the sweep must reach.
	FailUnder *float64
	// Batch sends the sweep's calls as provider batches (Options.Batch).
	Batch bool
	// EqualCompute is --equal-compute: a self-consistency spec swept
	// after the sweep over the same dataset, its var "samples" set to the
	// sweep's mean calls per item, and compared with it item by item.
	EqualCompute string
}

// Sweeping reports whether the flags ask for more than one run.
func (f Flags) Sweeping() bool {
	return len(f.Matrix) > 0 || f.Dataset != "" || f.Repeat > 1
}

// Options are the options of the sweep the flags ask for, of runs with
// opts.
func (f Flags) Options(opts runtime.Options) (Options, error) {
	so := Options{Run: opts, Repeat: f.Repeat, Dataset: f.Dataset, Parallel: f.Parallel, OwnSamples: f.OwnSamples, Batch: f.Batch}
	for _, m := range f.Matrix {
		a, err := ParseAxis(m)
		if err != nil {
			return so, err
		}
		so.Matrix = append(so.Matrix, a)
	}
	return so, nil
}

// OnRun is the line of progress of each run as it ends (nil when quiet).
func (t Telling) OnRun() func(done, total int, r Run) {
	if t.Quiet {
		return nil
	}
	return func(done, total int, r Run) {
		t.Tell.Say("sweep_run", map[string]any{"done": done, "total": total, "run": r}, fmt.Sprintf("[%d/%d] %s%s", done, total, r.Status, r.Describe()))
	}
}

// OnBatch is the line of progress of a sweep's batches (nil when quiet).
func (t Telling) OnBatch() func(batch.Progress) {
	if t.Quiet {
		return nil
	}
	return func(p batch.Progress) {
		t.Tell.Say("sweep_batch", p, p.String())
	}
}

// Started says a sweep started (unless quiet).
func (t Telling) Started(dir string, total int) {
	if !t.Quiet {
		t.Tell.Say("sweep_started", map[string]any{"dir": dir, "runs": total}, fmt.Sprintf("sweep: %d runs in %s", total, dir))
	}
}

// Done tells a sweep that ended with sum and err: the summary on stdout,
// dataset fields it ignored, its directory; appends its runs to the CSV
// file csv (when not ""); and returns the error the command exits with:
// a failure, runs waiting, the gate's verdict (gate not nil), or exit 8
// for inconclusive runs.
func (t Telling) Done(sum *Summary, err error, csv string, gate *Gate) error {
	return t.done(sum, err, csv, gate, false)
}

// Resumed tells a resumed sweep as Done does; the dataset fields it
// ignores were told when it started.
func (t Telling) Resumed(sum *Summary, err error) error {
	return t.done(sum, err, "", nil, true)
}

func (t Telling) done(sum *Summary, err error, csv string, gate *Gate, resumed bool) error {
	if sum == nil {
		return err
	}
	sum.Write(t.Stdout)
	if len(sum.UnusedFields) > 0 && !resumed {
		t.Tell.Warn("dataset fields that are no input of the spec were ignored: " + strings.Join(sum.UnusedFields, ", "))
	}
	t.Tell.Say("sweep_dir", map[string]string{"dir": sum.Dir}, "sweep: "+sum.Dir)
	if csv != "" {
		if cerr := sum.AppendCSV(csv); cerr != nil && err == nil {
			err = cerr
		}
	}
	if err = sum.Outcome(err); err != nil {
		return err
	}
	if gate == nil {
		return sum.InconclusiveErr()
	}
	// The gate has counted the inconclusive runs as it was told to.
	data, line, err := sum.Gate(gate.Threshold, gate.On, gate.Over)
	if err == nil {
		t.Tell.Say("gate", data, line)
	}
	return err
}

// ListRuns prints the runs in dir, and those of its sweeps, as runner
// runs does: a Markdown table (or CSV) with a note on built-in prices.
// given says dir was named on the command line: a runs folder that is not
// there is then a usage error, else (a new project) nothing to list.
func ListRuns(w io.Writer, dir string, given, csv bool) error {
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		switch {
		case errors.Is(err, fs.ErrNotExist) && !given:
			// A project before its first run: nothing to list is not a
			// failure, as for an empty runs folder.
			if csv {
				fmt.Fprint(w, RunsTable(nil).CSV())
				return nil
			}
			fmt.Fprintln(w, "no runs yet: there is no runs folder here; runner run SPEC makes the first (runs/<run-id>), or give the runs folder: runner runs DIR")
			return nil
		case errors.Is(err, fs.ErrNotExist):
			return exitcode.Errorf(exitcode.Usage, "runs %s: no such folder%s", dir, syntax.DidYouMeanPath(dir, true))
		case err == nil:
			return exitcode.Errorf(exitcode.Usage, "runs %s: this is a file; give the folder of the runs (runs, or the --runs-dir of runner run)", dir)
		}
	}
	runs, err := CollectRuns(dir)
	if err != nil {
		return err
	}
	t := RunsTable(runs)
	if csv {
		fmt.Fprint(w, t.CSV())
		return nil
	}
	if len(runs) == 0 {
		fmt.Fprintf(w, "no runs in %s\n", dir)
		return nil
	}
	fmt.Fprint(w, t.Markdown(60))
	if builtin := BuiltinPrices(runs); builtin != "" {
		fmt.Fprintln(w, "\n"+BuiltinPriceNote(builtin))
	}
	return nil
}

// Check checks the flags for a run of plan: the --repeat and --parallel
// counts, --own-samples only with a sweep, and that --fail-under is an
// accuracy the sweep has.
func (f Flags) Check(plan *spec.Plan) error {
	if f.Repeat < 1 {
		return exitcode.Errorf(exitcode.Usage, "--repeat %d: give a count of at least 1", f.Repeat)
	}
	if f.Parallel < 1 {
		return exitcode.Errorf(exitcode.Usage, "--parallel %d: give a count of at least 1", f.Parallel)
	}
	if f.EqualCompute != "" && (f.Dataset == "" || len(f.Matrix) > 0) {
		return exitcode.Errorf(exitcode.Usage, "--equal-compute %s compares a dataset sweep with self-consistency item by item: give --dataset, and no --matrix (run each cell as a sweep of its own, or use a study's equal_compute)", f.EqualCompute)
	}
	if f.OwnSamples && !f.Sweeping() {
		return exitcode.Errorf(exitcode.Usage, "--own-samples keeps a sweep's samples its own; give --matrix, --repeat or --dataset")
	}
	if f.FailUnder == nil {
		return nil
	}
	switch {
	case f.Dataset == "":
		return exitcode.Errorf(exitcode.Usage, "--fail-under gates the accuracy of a --dataset sweep; give --dataset")
	case *f.FailUnder < 0 || *f.FailUnder > 1:
		return exitcode.Errorf(exitcode.Usage, "--fail-under %g: give an accuracy between 0 and 1", *f.FailUnder)
	case !plan.Scored():
		return exitcode.Errorf(exitcode.Usage, "--fail-under: the spec has no score expression, so its runs have no accuracy")
	}
	return nil
}
