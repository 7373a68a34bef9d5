package outcome

import (
	"encoding/json"
	"sort"

	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/value"
	"github.com/expr-lang/expr/vm"
)

// roundScores says how a scored run of plan (its expressions' environment
// env) stood after each loop round (see result.Round): the outputs are evaluated again over the messages up to
// the round's last one, and over each agent's own messages up to then, and
// each is scored. Outputs that read nodes rather than messages keep their
// final values, so only outputs built from messages move with the rounds.
func roundScores(plan *spec.Plan, env *spec.Env, expected any) []result.Round {
	msgs := env.Messages
	last := map[int]int{} // round -> index of its last message
	for i, m := range msgs {
		if m.Round > 0 {
			last[m.Round] = i
		}
	}
	if len(last) == 0 {
		return nil
	}
	rounds := make([]int, 0, len(last))
	for n := range last {
		rounds = append(rounds, n)
	}
	sort.Ints(rounds)
	var out []result.Round
	prevScore := map[string]*float64{}
	prevAnswer := map[string]string{}
	prevOutputs := ""
	for i, n := range rounds {
		upTo := msgs[:last[n]+1]
		rd := result.Round{Round: n, Agents: map[string]float64{}}
		if outs, ok := outputsOver(plan, env, upTo); ok {
			rd.Score = scoreOf(plan, env, outs, expected)
			b, _ := json.Marshal(outs)
			rd.MajorityChanged = i > 0 && prevOutputs != string(b)
			prevOutputs = string(b)
		}
		// The agents that wrote in the round, in the order they first did.
		var agents []string
		for _, m := range upTo {
			if m.Round == n && m.From != "" && !containsString(agents, m.From) {
				agents = append(agents, m.From)
			}
		}
		answers := map[string]string{}
		for _, a := range agents {
			var own []value.Message
			for _, m := range upTo {
				if m.From == a {
					own = append(own, m)
				}
			}
			outs, ok := outputsOver(plan, env, own)
			if !ok {
				continue
			}
			s := scoreOf(plan, env, outs, expected)
			if s != nil {
				rd.Agents[a] = *s
			}
			b, _ := json.Marshal(outs)
			answers[a] = string(b)
			if p, had := prevScore[a]; had && p != nil && s != nil {
				switch {
				case *p == 1 && *s == 0:
					rd.RightToWrong = append(rd.RightToWrong, a)
				case *p == 0 && *s == 1:
					rd.WrongToRight = append(rd.WrongToRight, a)
				case *p == 0 && *s == 0 && prevAnswer[a] != answers[a]:
					rd.ChangedWhileWrong = append(rd.ChangedWhileWrong, a)
				}
			}
			prevScore[a], prevAnswer[a] = s, answers[a]
		}
		rd.Agreement = agreement(answers)
		out = append(out, rd)
	}
	return out
}

// outputsOver evaluates the spec's outputs as if msgs were all the run
// wrote; ok is false when one cannot be evaluated.
func outputsOver(plan *spec.Plan, env *spec.Env, msgs []value.Message) (map[string]any, bool) {
	alt := *env
	alt.Messages = msgs
	alt.Extra = map[string]any{}
	for k, v := range env.Extra {
		alt.Extra[k] = v
	}
	// latest() reads these messages, not the run's index.
	delete(alt.Extra, "latest")
	alt.Extra["goal_verdicts"] = GoalVerdicts(plan, msgs)
	out := map[string]any{}
	for _, o := range plan.Outputs {
		v, err := Eval(o.Program, &alt)
		if err != nil {
			return nil, false
		}
		out[o.Name] = JSONable(v)
	}
	return out, true
}

// scoreOf is the score of outputs, nil when it cannot be computed.
func scoreOf(plan *spec.Plan, env *spec.Env, outputs map[string]any, expected any) *float64 {
	m := env.Map()
	m["outputs"] = outputs
	m["expected"] = expected
	v, err := vm.Run(plan.Score.Program, m)
	if err != nil {
		return nil
	}
	f, ok := scoreValue(v)
	if !ok {
		return nil
	}
	return &f
}

// agreement is the share of the answers that are the most common one.
func agreement(answers map[string]string) float64 {
	if len(answers) == 0 {
		return 0
	}
	counts := map[string]int{}
	top := 0
	for _, a := range answers {
		counts[a]++
		top = max(top, counts[a])
	}
	return float64(top) / float64(len(answers))
}

func containsString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
