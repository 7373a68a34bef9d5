package main

import (
	"os"
	"path/filepath"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime/paired"
	"github.com/debate-runner/runner/runtime/sweep"
)

// paired compares two sweeps over the same dataset item by item; nil when
// args are not two such sweeps. With a baseline (args[0]), A is the other
// sweep and B the baseline, so the difference reads "new − baseline".
func (c *compareCmd) paired(args []string) (*paired.Result, error) {
	if len(args) != 2 {
		return c.notPaired("give exactly two sweep directories")
	}
	var sums [2]*sweep.Summary
	var err error
	for i, arg := range args {
		if _, err := os.Stat(filepath.Join(arg, "summary.json")); err != nil {
			return c.notPaired(arg + " is not a sweep directory")
		}
		s, lerr := sweep.Load(arg)
		if lerr != nil {
			return nil, exitcode.With(exitcode.Failure, lerr)
		}
		if s.Dataset == "" {
			return c.notPaired(arg + " ran no dataset")
		}
		sums[i] = s
	}
	a, b := sums[0], sums[1]
	if c.Baseline != "" {
		a, b = b, a
	}
	if a, b, err = c.cells(a, b); err != nil {
		return nil, err
	}
	if c.Resample < 1 {
		return nil, usageErrorf("--resamples %d: give at least 1", c.Resample)
	}
	res, err := paired.Compare(a, b, paired.Options{Resamples: c.Resample, Seed: c.Seed})
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	return res, nil
}

// notPaired is what paired returns for arguments it cannot pair: nothing,
// unless a flag needs the paired comparison.
func (c *compareCmd) notPaired(why string) (*paired.Result, error) {
	switch {
	case c.Cell != "" || c.CellB != "":
		return nil, usageErrorf("--cell chooses the matrix cell of a sweep a paired comparison takes: %s", why)
	case c.JSON:
		return nil, usageErrorf("--json prints a paired comparison of two sweeps over the same dataset: %s", why)
	case c.Baseline != "" && c.MarginOn == "lower":
		return nil, usageErrorf("--margin-on lower gates on the paired interval of two sweeps over the same dataset: %s", why)
	}
	return nil, nil
}

// cells takes the matrix cell --cell (and --cell-b) choose of each matrix
// sweep: a paired comparison pairs one run per dataset line on each side,
// never the runs of several cells mixed. A matrix sweep of several cells
// without one chosen is a usage error that lists them.
func (c *compareCmd) cells(a, b *sweep.Summary) (*sweep.Summary, *sweep.Summary, error) {
	pick := func(s *sweep.Summary, flag, value string, mustMatrix bool) (*sweep.Summary, error) {
		var cell map[string]string
		if value != "" && (mustMatrix || len(s.Matrix) > 0) {
			var err error
			if cell, err = paired.ParseCell(value); err != nil {
				return nil, usageErrorf("%s %v", flag, err)
			}
		}
		out, err := paired.SelectCell(s, cell)
		if err != nil {
			if value != "" {
				return nil, usageErrorf("%s %s: %v", flag, value, err)
			}
			return nil, usageErrorf("%v", err)
		}
		return out, nil
	}
	if c.Cell != "" && len(a.Matrix) == 0 && len(b.Matrix) == 0 {
		return nil, nil, usageErrorf("--cell %s: neither sweep is a matrix sweep, so there is no cell to choose", c.Cell)
	}
	a, err := pick(a, "--cell", c.Cell, false)
	if err != nil {
		return nil, nil, err
	}
	flag, value := "--cell", c.Cell
	if c.CellB != "" {
		flag, value = "--cell-b", c.CellB
	}
	b, err = pick(b, flag, value, c.CellB != "")
	return a, b, err
}
