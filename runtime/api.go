package runtime

import (
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/rundir"
	"github.com/debate-runner/runner/spec"
)

// This file is the runtime's API for the packages built on it (sweeps in
// runtime/sweep, dry runs in runtime/dryrun): thin exported wrappers, so
// that those packages see exactly what a run does rather than copies of it
// that could drift.

// ResolveInputValues is ResolveInputs plus inputs given as values (a
// dataset line's, placeholders), which are checked against the spec's
// declarations but never parsed: a value that starts with "@" is text, not
// a file. Options.InputValues are resolved this way.
func ResolveInputValues(plan *spec.Plan, flags []string, values map[string]any) (map[string]any, error) {
	return args.Inputs(plan, flags, values)
}

// ResolveVarValues is ResolveVars with values (a recorded run's) applied
// before the --set flags, which win. Options.VarValues are resolved this
// way.
func ResolveVarValues(plan *spec.Plan, sets []string, values map[string]any) (map[string]any, error) {
	return args.Vars(plan, sets, values)
}

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
func GoalVerdictsOf(plan *spec.Plan, msgs []spec.Message) []GoalVerdicts {
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

// ErrLocked means another process is working on the run directory.
var ErrLocked = rundir.ErrLocked

// FlagError is a problem with a command-line value; the CLI exits 2.
type FlagError = args.FlagError

// ResolveInputs turns --input flags into inputs (see args.ResolveInputs).
func ResolveInputs(plan *spec.Plan, flags []string) (map[string]any, error) {
	return args.ResolveInputs(plan, flags)
}

// ResolveVars applies --set flags to the spec's vars (see args.ResolveVars).
func ResolveVars(plan *spec.Plan, flags []string) (map[string]any, error) {
	return args.ResolveVars(plan, flags)
}
