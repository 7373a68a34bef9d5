// Package outcome says how a run that ran to its end came out: whether it
// reached its purpose (Conclude: its goals' verdicts, the outputs that rest
// on a fallback or a forced verdict, the spec's concluded condition), its
// score (Scoring: the score expression against the expected value, or the
// judges' mean) and how it stood after each round; with the values the
// run's expressions are evaluated over that the engine shares (Eval,
// GoalVerdicts).
package outcome

import (
	"errors"
	"math"
	"strings"

	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/value"
	"github.com/expr-lang/expr/vm"
)

// Eval runs an expression of the spec over env, its error the
// first line of expr's.
func Eval(p *spec.Program, env *spec.Env) (any, error) {
	v, err := vm.Run(p.Program, env.Map())
	if err != nil {
		return nil, errors.New(strings.SplitN(err.Error(), "\n", 2)[0])
	}
	return v, nil
}

// GoalVerdicts keeps every goal's verdicts: the latest verdict of each agent
// per goal and node, in the order they were first given.
func GoalVerdicts(plan *spec.Plan, msgs []value.Message) []value.GoalVerdicts {
	type group struct{ goal, node string }
	type key struct {
		group
		agent string
	}
	latest := map[key]value.Message{}
	withdrawn := map[key]bool{}
	var groups []group
	agentsOf := map[group][]string{}
	for _, m := range msgs {
		g := group{m.Goal, m.Node}
		k := key{g, m.From}
		if m.Withdrawn {
			withdrawn[k] = true
		}
		if m.Verdict == "" {
			continue
		}
		if _, ok := latest[k]; !ok {
			if len(agentsOf[g]) == 0 {
				groups = append(groups, g)
			}
			agentsOf[g] = append(agentsOf[g], m.From)
		}
		latest[k] = m
	}
	var out []value.GoalVerdicts
	for _, g := range groups {
		gv := value.GoalVerdicts{Goal: g.goal, Node: g.node, Counts: map[string]int{}, Percent: map[string]float64{}}
		for _, a := range agentsOf[g] {
			k := key{g, a}
			m := latest[k]
			gv.Verdicts = append(gv.Verdicts, value.AgentVerdict{Agent: a, Verdict: m.Verdict, Reasoning: m.Reasoning, Withdrawn: withdrawn[k], Forced: m.Forced})
			gv.Counts[m.Verdict]++
		}
		for v, n := range gv.Counts {
			gv.Percent[v] = math.Round(float64(n)*10000/float64(len(gv.Verdicts))) / 100
		}
		out = append(out, gv)
	}
	return out
}

// scoreValue reads a score: true is 1, false 0, numbers as they are.
func scoreValue(v any) (float64, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, false
		}
		return x, true
	}
	return 0, false
}

// JSONable turns expression results into values encoding/json can write:
// mappings keyed by anything but text (expr's fromPairs gives map[any]any,
// groupBy map[any][]any) become mappings keyed by the keys' text.
func JSONable(v any) any { return spec.JSONValue(v) }

// FirstLine is the first line of an error, for a warning or a note.
func FirstLine(err error) string { return strings.SplitN(err.Error(), "\n", 2)[0] }
