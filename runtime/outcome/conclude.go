package outcome

import (
	"fmt"
	"reflect"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
	"github.com/expr-lang/expr/vm"
)

// Conclude decides whether a run that ran to its end reached its purpose.
//
// Goals first: a goal of a spec whose conversations ask for verdicts is
// concluded when its condition (goals[].concluded) holds, by default when
// its most common final verdict was given freely (not forced) by at least
// one agent. Then outputs: an output came from a fallback or a forced
// verdict when its value changes as those values do; it is evaluated again
// with every fallback output and forced verdict replaced by a different
// value, so an answer that a majority reached stays concluded though one
// agent's reply fell back, and an answer that is the fallback does not.
// Last the run: the spec's concluded condition, by default no goal
// inconclusive and no output from a fallback or a forced verdict.
//
// env is the expressions' environment at the run's end, verdicts the
// goals' verdicts as the run's history holds them, and warn says what
// could not be evaluated.
func Conclude(plan *spec.Plan, env *spec.Env, verdicts func() []value.GoalVerdicts, outputs map[string]any, warn func(format string, args ...any)) *result.Conclusion {
	c := &result.Conclusion{Concluded: true}
	for _, m := range env.Messages {
		if m.Fallback {
			c.Fallbacks++
		}
		if m.Forced {
			c.ForcedVerdicts++
		}
	}
	c.InconclusiveGoals = inconclusiveGoals(plan, env, verdicts, warn)
	if c.Fallbacks+c.ForcedVerdicts > 0 {
		c.FallbackOutputs = fallbackOutputs(plan, env, outputs)
	}
	if plan.Concluded == nil {
		c.Concluded = len(c.InconclusiveGoals) == 0 && len(c.FallbackOutputs) == 0
		return c
	}
	c.Condition = plan.Concluded.Source
	m := env.Map()
	m["outputs"] = outputs
	m["fallback_outputs"] = orNone(c.FallbackOutputs)
	m["inconclusive_goals"] = orNone(c.InconclusiveGoals)
	v, err := vm.Run(plan.Concluded.Program, m)
	if err != nil {
		c.Problem = fmt.Sprintf("concluded (%s) could not be evaluated: %s", c.Condition, FirstLine(err))
		warn("%s", c.Problem)
		c.Concluded = false
		return c
	}
	b, _ := v.(bool)
	c.Concluded = b
	return c
}

func orNone(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// inconclusiveGoals lists the goals that reached no conclusion, in the
// spec's order.
func inconclusiveGoals(plan *spec.Plan, env *spec.Env, verdicts func() []value.GoalVerdicts, warn func(format string, args ...any)) []string {
	if len(plan.Goals) == 0 {
		return nil
	}
	// A watcher's verdicts (a moderation panel's decisions) are about the
	// conversation, not the goal.
	watchers := map[string]bool{}
	for _, n := range plan.Nodes {
		for _, w := range n.Runs {
			watchers[w] = true
		}
	}
	asks := false
	for id, n := range plan.Nodes {
		if va, ok := n.Config.(spec.VerdictAsker); ok && va.AsksVerdicts() && !watchers[id] {
			asks = true
		}
	}
	gvs := verdicts()
	var out []string
	for _, g := range plan.Goals {
		prog := plan.GoalConcluded[g.ID]
		if prog == nil && !asks {
			continue
		}
		var final []value.AgentVerdict
		for _, gv := range gvs {
			if gv.Goal == g.ID && !watchers[gv.Node] {
				final = append(final, gv.Verdicts...)
			}
		}
		consensus := consensusOf(final)
		ok := false
		if prog == nil {
			for _, v := range final {
				ok = ok || v.Verdict == consensus && !v.Forced
			}
		} else {
			m := env.Map()
			m["goal"] = g
			m["final_verdicts"] = append([]value.AgentVerdict{}, final...)
			m["consensus"] = consensus
			v, err := vm.Run(prog.Program, m)
			if err != nil {
				warn("goal %q: concluded (%s) could not be evaluated: %s; the goal counts as inconclusive", g.ID, prog.Source, FirstLine(err))
			}
			ok, _ = v.(bool)
		}
		if !ok {
			out = append(out, g.ID)
		}
	}
	return out
}

// consensusOf is the most common verdict ("" when none), the first given
// among equals, as mode() in expressions picks it.
func consensusOf(vs []value.AgentVerdict) string {
	counts := map[string]int{}
	best := ""
	for _, v := range vs {
		counts[v.Verdict]++
		if counts[v.Verdict] > counts[best] || best == "" {
			best = v.Verdict
		}
	}
	return best
}

// fallbackOutputs lists the outputs whose values change when the fallback
// outputs and forced verdicts do (or that cannot be evaluated without
// them), in declaration order.
func fallbackOutputs(plan *spec.Plan, env *spec.Env, outputs map[string]any) []string {
	alt := *env
	alt.Messages = make([]value.Message, len(env.Messages))
	for i, m := range env.Messages {
		alt.Messages[i] = perturbMessage(m)
	}
	alt.Nodes = make(map[string]value.NodeResult, len(env.Nodes))
	for id, res := range env.Nodes {
		alt.Nodes[id] = perturbNode(res)
	}
	alt.Extra = map[string]any{}
	for k, v := range env.Extra {
		alt.Extra[k] = v
	}
	// latest() of the environment reads the messages (not the run's
	// index), and the verdicts are counted again from the changed ones.
	delete(alt.Extra, "latest")
	alt.Extra["goal_verdicts"] = GoalVerdicts(plan, alt.Messages)
	var out []string
	for _, o := range plan.Outputs {
		v, err := Eval(o.Program, &alt)
		if err != nil || !reflect.DeepEqual(JSONable(v), outputs[o.Name]) {
			out = append(out, o.Name)
		}
	}
	return out
}

func perturbMessage(m value.Message) value.Message {
	if m.Fallback {
		// Only the output stands in: the reply itself is what the
		// model said.
		m.Output = perturb(m.Output)
	}
	if m.Forced {
		m.Verdict = perturbText(m.Verdict)
	}
	return m
}

func perturbNode(res value.NodeResult) value.NodeResult {
	changed := false
	msgs := make([]value.Message, len(res.Messages))
	outs := make(map[string]any, len(res.Outputs))
	for k, v := range res.Outputs {
		outs[k] = v
	}
	for i, m := range res.Messages {
		msgs[i] = perturbMessage(m)
		if m.Fallback {
			changed = true
			outs[m.From] = msgs[i].Output
			if i == len(res.Messages)-1 {
				res.Output = msgs[i].Output
			}
		}
	}
	if changed {
		res.Messages, res.Outputs = msgs, outs
	}
	return res
}

// perturb returns a value of the same shape that differs in every leaf.
func perturb(v any) any {
	switch x := v.(type) {
	case nil:
		return perturbText("")
	case string:
		return perturbText(x)
	case bool:
		return !x
	case int:
		return x + 7919
	case int64:
		return x + 7919
	case float64:
		return x + 7919.5
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = perturb(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = perturb(e)
		}
		return out
	}
	return perturbText(fmt.Sprint(v))
}

func perturbText(s string) string { return "\x00stand-in\x00" + s }
