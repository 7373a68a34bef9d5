package sweep

import (
	"fmt"
	"sort"

	"github.com/debate-runner/runner/runtime/result"
)

// RoundSummary is one loop round over a sweep's scored runs: the accuracy
// the runs would have had had they stopped after the round (their outputs
// over the messages so far), the accuracy of the agents' own answers so
// far, the agents' answer flips from the round before, and how far the
// agents agreed.
type RoundSummary struct {
	Round int `json:"round"`
	// Accuracy is over the runs with a score for the round.
	Accuracy *Accuracy `json:"accuracy,omitempty"`
	// AgentAccuracy is over every agent's answer in every such run.
	AgentAccuracy *Accuracy `json:"agent_accuracy,omitempty"`
	// ByAgent is each agent's accuracy.
	ByAgent map[string]*Accuracy `json:"by_agent,omitempty"`
	// Flips count agents over all runs (none in a run's first round).
	RightToWrong      int `json:"right_to_wrong"`
	WrongToRight      int `json:"wrong_to_right"`
	ChangedWhileWrong int `json:"changed_while_wrong"`
	// MajorityChanges counts the runs whose outputs changed in the round.
	MajorityChanges int `json:"majority_changes"`
	// Agreement is the mean share of a run's agents giving its round's most
	// common answer.
	Agreement float64 `json:"agreement"`
	Runs      int     `json:"runs"`
}

// summarizeRounds adds up the runs' per-round scores, round by round.
func summarizeRounds(runs []Run) []RoundSummary {
	type acc struct {
		scores, agentScores []float64
		byAgent             map[string][]float64
		sum                 RoundSummary
		agreement           float64
	}
	by := map[int]*acc{}
	for _, r := range runs {
		if r.Status != result.StatusCompleted && r.Status != result.StatusInconclusive {
			continue
		}
		for _, rd := range r.Rounds {
			a := by[rd.Round]
			if a == nil {
				a = &acc{byAgent: map[string][]float64{}}
				by[rd.Round] = a
			}
			a.sum.Runs++
			if rd.Score != nil {
				a.scores = append(a.scores, *rd.Score)
			}
			for id, s := range rd.Agents {
				a.agentScores = append(a.agentScores, s)
				a.byAgent[id] = append(a.byAgent[id], s)
			}
			a.sum.RightToWrong += len(rd.RightToWrong)
			a.sum.WrongToRight += len(rd.WrongToRight)
			a.sum.ChangedWhileWrong += len(rd.ChangedWhileWrong)
			if rd.MajorityChanged {
				a.sum.MajorityChanges++
			}
			a.agreement += rd.Agreement
		}
	}
	rounds := make([]int, 0, len(by))
	for n := range by {
		rounds = append(rounds, n)
	}
	sort.Ints(rounds)
	var out []RoundSummary
	for _, n := range rounds {
		a := by[n]
		s := a.sum
		s.Round = n
		s.Accuracy = MeanCI(a.scores)
		s.AgentAccuracy = MeanCI(a.agentScores)
		if len(a.byAgent) > 0 {
			s.ByAgent = map[string]*Accuracy{}
			for id, sc := range a.byAgent {
				s.ByAgent[id] = MeanCI(sc)
			}
		}
		s.Agreement = a.agreement / float64(s.Runs)
		out = append(out, s)
	}
	return out
}

// String is the round's line of a sweep's accuracy lines.
func (r RoundSummary) String() string {
	line := fmt.Sprintf("round %d:", r.Round)
	if r.Accuracy != nil {
		line += fmt.Sprintf(" accuracy %.3f (95%% CI %.3f–%.3f, n=%d),", r.Accuracy.Mean, r.Accuracy.Low, r.Accuracy.High, r.Accuracy.N)
	}
	if r.AgentAccuracy != nil {
		line += fmt.Sprintf(" agents' accuracy %.3f,", r.AgentAccuracy.Mean)
	}
	return line + fmt.Sprintf(" right→wrong %d, wrong→right %d, changed while wrong %d, majority changed in %d run(s), agreement %.2f", r.RightToWrong, r.WrongToRight, r.ChangedWhileWrong, r.MajorityChanges, r.Agreement)
}
