package sweep

import (
	"fmt"
	"strings"

	"github.com/debate-runner/runner/runtime/result"
)

// GoalDynamics adds up one goal's verdict dynamics over a sweep's runs
// (result.GoalDynamics): verdict changes, consensus, whisper influence.
type GoalDynamics struct {
	Goal string `json:"goal,omitempty"`
	// Runs are the runs with a verdict or a whisper on the goal.
	Runs            int            `json:"runs"`
	Verdicts        int            `json:"verdicts"`
	Changes         int            `json:"changes"`
	ByAgent         map[string]int `json:"changes_by_agent,omitempty"`
	MajorityChanges int            `json:"majority_changes"`
	// MeanFirstAgreement and MeanFinalAgreement are over the runs.
	MeanFirstAgreement float64 `json:"mean_first_agreement"`
	MeanFinalAgreement float64 `json:"mean_final_agreement"`
	// Whispers are the whisper edges over all runs, their counts and
	// effects added up.
	Whispers []result.WhisperInfluence `json:"whispers,omitempty"`
}

// summarizeDynamics adds up the runs' dynamics goal by goal, in the order
// goals first appear; nil when no run has any.
func summarizeDynamics(runs []Run) []GoalDynamics {
	var out []GoalDynamics
	idx := map[string]int{}
	edges := map[string]map[[2]string]int{}
	for _, r := range runs {
		for _, d := range r.Dynamics {
			i, ok := idx[d.Goal]
			if !ok {
				i = len(out)
				idx[d.Goal] = i
				out = append(out, GoalDynamics{Goal: d.Goal})
				edges[d.Goal] = map[[2]string]int{}
			}
			g := &out[i]
			g.Runs++
			g.Verdicts += d.Verdicts
			g.Changes += d.Changes
			g.MajorityChanges += d.MajorityChanges
			g.MeanFirstAgreement += d.FirstAgreement
			g.MeanFinalAgreement += d.FinalAgreement
			for a, n := range d.ByAgent {
				if g.ByAgent == nil {
					g.ByAgent = map[string]int{}
				}
				g.ByAgent[a] += n
			}
			for _, w := range d.Whispers {
				k := [2]string{w.From, w.To}
				e, ok := edges[d.Goal][k]
				if !ok {
					e = len(g.Whispers)
					edges[d.Goal][k] = e
					g.Whispers = append(g.Whispers, result.WhisperInfluence{From: w.From, To: w.To})
				}
				x := &g.Whispers[e]
				x.Count += w.Count
				x.Followed += w.Followed
				x.Changed += w.Changed
				x.Adopted += w.Adopted
			}
		}
	}
	for i := range out {
		out[i].MeanFirstAgreement /= float64(out[i].Runs)
		out[i].MeanFinalAgreement /= float64(out[i].Runs)
	}
	return out
}

// String is the goal's line of the sweep's summary.
func (g GoalDynamics) String() string {
	name := g.Goal
	if name == "" {
		name = "(no goal)"
	}
	line := fmt.Sprintf("verdicts on %s: %d over %d run(s), %d changed an agent's verdict, the plurality changed %d time(s), agreement %.2f at the first verdicts and %.2f at the end",
		name, g.Verdicts, g.Runs, g.Changes, g.MajorityChanges, g.MeanFirstAgreement, g.MeanFinalAgreement)
	if len(g.Whispers) > 0 {
		var parts []string
		for _, w := range g.Whispers {
			parts = append(parts, fmt.Sprintf("%s→%s %d (addressee's next verdict changed %d of %d, to the sender's %d)", w.From, w.To, w.Count, w.Changed, w.Followed, w.Adopted))
		}
		line += "\nwhispers on " + name + ": " + strings.Join(parts, "; ")
	}
	return line
}
