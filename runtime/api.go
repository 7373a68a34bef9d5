package runtime

import (
	"path/filepath"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/rundir"
	"github.com/debate-runner/runner/spec"
)

// This file is the runtime's API for the packages built on it (sweeps in
// runtime/sweep, dry runs in runtime/dryrun): thin exported wrappers, so
// that those packages see exactly what a run does rather than copies of it
// that could drift.

// CheckEndpoints returns the error a run of plan with opts would fail with
// for want of an endpoint's API key (a *FlagError), without creating a run
// directory, so that many runs failing alike can be reported once. Clients
// for the endpoints are registered in opts.Clients when it is set.
func CheckEndpoints(plan *spec.Plan, opts Options) error {
	return newRun(plan, opts).connect()
}

// GoalVerdictsOf gathers the verdicts of every goal from msgs, as a run's
// result and its expressions (goal_verdicts) see them: each agent's latest
// verdict per goal and node, in the order first given.
func GoalVerdictsOf(plan *spec.Plan, msgs []value.Message) []value.GoalVerdicts {
	return goalVerdicts(plan, msgs)
}

// LoopCount reads the value of a loop's max expression as a count the way
// the flow does; false when it is no whole number.
func LoopCount(v any) (int, bool) {
	return toInt(v)
}

// ForeachItems reads the value of a foreach's in expression as the list the
// flow iterates over; an error when it is no list.
func ForeachItems(v any) ([]any, error) {
	return toList(v)
}

// SaveSpec saves a spec's text (spec.yaml) and copies of the template
// libraries it uses into dir, as a run does for its resume, and returns
// where the libraries went (for CompileSaved).
func SaveSpec(dir string, plan *spec.Plan) (map[string]string, error) {
	var files rundir.Batch
	libs, err := saveLibraries(dir, plan, &files, files.Replace)
	if err != nil {
		return nil, err
	}
	files.Replace(filepath.Join(dir, "spec.yaml"), plan.Source)
	return libs, files.Sync()
}

// CompileSaved compiles the spec SaveSpec saved in dir, under the path it
// was read from, with the saved libraries.
func CompileSaved(dir, specPath string, libs map[string]string, reg *spec.Registry) (*spec.Plan, error) {
	plan, _, err := resumePlan(dir, result.Manifest{SpecPath: specPath, Libraries: libs}, reg, "")
	return plan, err
}

// ResultOf reads a run directory's result when the run completed and its
// records are all written; false otherwise (it must be resumed).
func ResultOf(dir string) (*result.Result, result.Manifest, bool) {
	m, err := result.ReadManifest(dir)
	if err != nil || !outputsWritten(dir) {
		return nil, m, false
	}
	p, err := readPrior(filepath.Join(dir, "journal.jsonl"))
	if err != nil || !p.completed {
		return nil, m, false
	}
	res, err := result.Read(dir)
	if err != nil {
		return nil, m, false
	}
	return res, m, true
}
