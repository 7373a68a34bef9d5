// Package compare is runner compare: runs and sweeps side by side (the
// tables of runtime/sweep), two sweeps over the same dataset item by item
// (runtime/paired), and the gate that holds them to a baseline.
package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime/paired"
	"github.com/debate-runner/runner/runtime/progress"
	"github.com/debate-runner/runner/runtime/sweep"
)

// Options are compare's flags.
type Options struct {
	// CSV and JSON print CSV (or JSON: the paired comparison alone)
	// instead of Markdown.
	CSV, JSON bool
	// Baseline, when not "", is the run or sweep the others are gated
	// against: they may score worse than it by Margin at most, on the
	// difference of the accuracies (MarginOn "mean") or the lower end of
	// the paired interval ("lower").
	Baseline string
	Margin   float64
	MarginOn string
	// Seed and Resamples are the paired bootstrap's.
	Seed      uint64
	Resamples int
	// Cell chooses the cell of each matrix sweep the paired comparison
	// takes (NAME=V,...), CellB B's when it differs.
	Cell, CellB string
}

// Run compares the runs and sweeps of dirs (with the baseline first when
// there is one), printing on w and telling the gate's verdict with t.
func Run(w io.Writer, t progress.Teller, dirs []string, o Options) error {
	args := dirs
	if o.Baseline != "" {
		if o.Margin < 0 {
			return exitcode.Errorf(exitcode.Usage, "--margin %g: give a margin of at least 0", o.Margin)
		}
		args = append([]string{o.Baseline}, without(dirs, o.Baseline)...)
		if len(args) < 2 {
			return exitcode.Errorf(exitcode.Usage, "--baseline %s: give at least one other run or sweep to compare with it", o.Baseline)
		}
	}
	pair, err := o.paired(args)
	if err != nil {
		return err
	}
	if pair != nil && (o.JSON || o.CSV) {
		if o.JSON {
			data, _ := json.MarshalIndent(pair, "", "  ")
			fmt.Fprintln(w, string(data))
		} else {
			fmt.Fprint(w, pair.CSV())
		}
		if o.Baseline != "" {
			return o.gate(t, args, pair)
		}
		return nil
	}
	if o.JSON {
		return exitcode.Errorf(exitcode.Usage, "--json: give two sweep directories over the same dataset")
	}
	runs, sweeps, err := sweep.Compared(args)
	if err != nil {
		return err
	}
	tab := sweep.CompareTable(runs)
	if o.CSV {
		fmt.Fprint(w, tab.CSV())
		return nil
	}
	fmt.Fprint(w, tab.Markdown(60))
	if len(sweeps) > 0 {
		st := sweep.SweepsTable(sweeps)
		fmt.Fprint(w, "\n"+st.Markdown(0))
	}
	if pair != nil {
		fmt.Fprint(w, "\n"+pair.Markdown())
	}
	if o.Baseline != "" {
		return o.gate(t, args, pair)
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
func (o Options) gate(t progress.Teller, args []string, pair *paired.Result) error {
	if o.MarginOn == "lower" {
		data, line, err := pair.GateLower(args[0], args[1], o.Margin)
		if err == nil {
			t.Say("gate", data, line)
		}
		return err
	}
	passed, err := sweep.ScoreGate(args[0], args[1:], o.Margin)
	for _, p := range passed {
		t.Say("gate", p.Data, p.Text)
	}
	return err
}

// paired compares two sweeps over the same dataset item by item; nil when
// args are not two such sweeps. With a baseline (args[0]), A is the other
// sweep and B the baseline, so the difference reads "new − baseline".
func (o Options) paired(args []string) (*paired.Result, error) {
	if len(args) != 2 {
		return o.notPaired("give exactly two sweep directories")
	}
	var sums [2]*sweep.Summary
	var err error
	for i, arg := range args {
		if _, err := os.Stat(filepath.Join(arg, "summary.json")); err != nil {
			return o.notPaired(arg + " is not a sweep directory")
		}
		s, lerr := sweep.Load(arg)
		if lerr != nil {
			return nil, exitcode.With(exitcode.Failure, lerr)
		}
		if s.Dataset == "" {
			return o.notPaired(arg + " ran no dataset")
		}
		sums[i] = s
	}
	a, b := sums[0], sums[1]
	if o.Baseline != "" {
		a, b = b, a
	}
	if a, b, err = o.cells(a, b); err != nil {
		return nil, err
	}
	if o.Resamples < 1 {
		return nil, exitcode.Errorf(exitcode.Usage, "--resamples %d: give at least 1", o.Resamples)
	}
	res, err := paired.Compare(a, b, paired.Options{Resamples: o.Resamples, Seed: o.Seed})
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "%v", err)
	}
	return res, nil
}

// notPaired is what paired returns for arguments it cannot pair: nothing,
// unless a flag needs the paired comparison.
func (o Options) notPaired(why string) (*paired.Result, error) {
	switch {
	case o.Cell != "" || o.CellB != "":
		return nil, exitcode.Errorf(exitcode.Usage, "--cell chooses the matrix cell of a sweep a paired comparison takes: %s", why)
	case o.JSON:
		return nil, exitcode.Errorf(exitcode.Usage, "--json prints a paired comparison of two sweeps over the same dataset: %s", why)
	case o.Baseline != "" && o.MarginOn == "lower":
		return nil, exitcode.Errorf(exitcode.Usage, "--margin-on lower gates on the paired interval of two sweeps over the same dataset: %s", why)
	}
	return nil, nil
}

// cells takes the matrix cell --cell (and --cell-b) choose of each matrix
// sweep: a paired comparison pairs one run per dataset line on each side,
// never the runs of several cells mixed. A matrix sweep of several cells
// without one chosen is a usage error that lists them.
func (o Options) cells(a, b *sweep.Summary) (*sweep.Summary, *sweep.Summary, error) {
	pick := func(s *sweep.Summary, flag, value string, mustMatrix bool) (*sweep.Summary, error) {
		var cell map[string]string
		if value != "" && (mustMatrix || len(s.Matrix) > 0) {
			var err error
			if cell, err = paired.ParseCell(value); err != nil {
				return nil, exitcode.Errorf(exitcode.Usage, "%s %v", flag, err)
			}
		}
		out, err := paired.SelectCell(s, cell)
		if err != nil {
			if value != "" {
				return nil, exitcode.Errorf(exitcode.Usage, "%s %s: %v", flag, value, err)
			}
			return nil, exitcode.Errorf(exitcode.Usage, "%v", err)
		}
		return out, nil
	}
	if o.Cell != "" && len(a.Matrix) == 0 && len(b.Matrix) == 0 {
		return nil, nil, exitcode.Errorf(exitcode.Usage, "--cell %s: neither sweep is a matrix sweep, so there is no cell to choose", o.Cell)
	}
	a, err := pick(a, "--cell", o.Cell, false)
	if err != nil {
		return nil, nil, err
	}
	flag, value := "--cell", o.Cell
	if o.CellB != "" {
		flag, value = "--cell-b", o.CellB
	}
	b, err = pick(b, flag, value, o.CellB != "")
	return a, b, err
}
