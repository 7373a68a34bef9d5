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
	for i, arg := range args {
		if _, err := os.Stat(filepath.Join(arg, "summary.json")); err != nil {
			return o.notPaired(arg + " is not a sweep directory")
		}
		s, err := sweep.Load(arg)
		if err != nil {
			return nil, exitcode.With(exitcode.Failure, err)
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
	case o.JSON:
		return nil, exitcode.Errorf(exitcode.Usage, "--json prints a paired comparison of two sweeps over the same dataset: %s", why)
	case o.Baseline != "" && o.MarginOn == "lower":
		return nil, exitcode.Errorf(exitcode.Usage, "--margin-on lower gates on the paired interval of two sweeps over the same dataset: %s", why)
	}
	return nil, nil
}
