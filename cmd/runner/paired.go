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
	for i, arg := range args {
		if _, err := os.Stat(filepath.Join(arg, "summary.json")); err != nil {
			return c.notPaired(arg + " is not a sweep directory")
		}
		s, err := sweep.Load(arg)
		if err != nil {
			return nil, exitcode.With(exitcode.Failure, err)
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
	case c.JSON:
		return nil, usageErrorf("--json prints a paired comparison of two sweeps over the same dataset: %s", why)
	case c.Baseline != "" && c.MarginOn == "lower":
		return nil, usageErrorf("--margin-on lower gates on the paired interval of two sweeps over the same dataset: %s", why)
	}
	return nil, nil
}
