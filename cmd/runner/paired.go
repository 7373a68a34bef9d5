package main

import (
	"fmt"
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

// gateLower fails when the lower end of the paired bootstrap interval of
// (other − baseline) is below −margin: the data cannot rule out that the
// other is worse than the baseline by more than the margin.
func (c *compareCmd) gateLower(e *env, args []string, pair *paired.Result) error {
	if pair == nil || pair.Difference == nil {
		return usageErrorf("--margin-on lower: no item is scored in both %s and %s", args[1], args[0])
	}
	d := pair.Difference
	line := fmt.Sprintf("%s against the baseline %s: difference %+.3f, lower end of its 95%% paired interval %+.3f", args[1], args[0], d.Estimate, d.Low)
	data := map[string]any{"run": args[1], "baseline": args[0], "difference": d.Estimate, "low": d.Low, "margin": c.Margin}
	if d.Low < -c.Margin-1e-12 {
		return exitcode.With(exitcode.Gate, fmt.Errorf("gate failed: %s is below −%g", line, c.Margin))
	}
	data["passed"] = true
	e.say("gate", data, "gate passed: "+line+fmt.Sprintf(" (at least −%g)", c.Margin))
	return nil
}
