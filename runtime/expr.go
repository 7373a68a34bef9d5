package runtime

import (
	"github.com/debate-runner/runner/runtime/outcome"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/value"
)

// The names the engine knows runtime/outcome's shared values by.

func evalProgram(p *spec.Program, env *spec.Env) (any, error) { return outcome.Eval(p, env) }

func goalVerdicts(plan *spec.Plan, msgs []value.Message) []value.GoalVerdicts {
	return outcome.GoalVerdicts(plan, msgs)
}

func jsonable(v any) any { return outcome.JSONable(v) }

func firstLineOf(err error) string { return outcome.FirstLine(err) }
