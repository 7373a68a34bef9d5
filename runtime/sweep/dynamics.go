package sweep

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/debate-runner/runner/runtime/result"
)

// GoalDynamics adds up one thread's dynamics (a node on a goal,
// result.GoalDynamics) over a sweep's runs: verdict changes, consensus,
// and what whispers and public messages to one agent did.
type GoalDynamics struct {
	Node string `json:"node,omitempty"`
	Goal string `json:"goal,omitempty"`
	// Runs are the runs that have the thread (a verdict or a whisper in
	// it); WithVerdicts those where a verdict was given.
	Runs         int            `json:"runs"`
	WithVerdicts int            `json:"with_verdicts"`
	Verdicts     int            `json:"verdicts"`
	Changes      int            `json:"changes"`
	ByAgent      map[string]int `json:"changes_by_agent,omitempty"`
	// Consensus are the runs whose thread ended in consensus,
	// ForcedConsensus those of them with a forced verdict in the thread;
	// ConsensusRate is Consensus over WithVerdicts with its 95 % (Wilson)
	// interval.
	Consensus       int       `json:"consensus"`
	ForcedConsensus int       `json:"forced_consensus,omitempty"`
	ConsensusRate   *Accuracy `json:"consensus_rate,omitempty"`
	MajorityChanges int       `json:"majority_changes"`
	// MeanFirstAgreement and MeanFinalAgreement are over the runs.
	MeanFirstAgreement float64 `json:"mean_first_agreement"`
	MeanFinalAgreement float64 `json:"mean_final_agreement"`
	// Whispers and Public are the edges over all runs, their counts added
	// up.
	Whispers []result.Influence `json:"whispers,omitempty"`
	Public   []result.Influence `json:"public,omitempty"`
}

// summarizeDynamics adds up the runs' dynamics (SumDynamics).
func summarizeDynamics(runs []Run) []GoalDynamics {
	each := make([][]result.GoalDynamics, len(runs))
	for i, r := range runs {
		each[i] = r.Dynamics
	}
	return SumDynamics(each)
}

// SumDynamics adds up runs' dynamics thread by thread, in the order
// threads first appear; nil when no run has any.
func SumDynamics(runs [][]result.GoalDynamics) []GoalDynamics {
	var out []GoalDynamics
	type key struct{ node, goal string }
	idx := map[key]int{}
	whispers, public := map[key]map[[2]string]*result.Influence{}, map[key]map[[2]string]*result.Influence{}
	for _, ds := range runs {
		for _, d := range ds {
			k := key{d.Node, d.Goal}
			i, ok := idx[k]
			if !ok {
				i = len(out)
				idx[k] = i
				out = append(out, GoalDynamics{Node: d.Node, Goal: d.Goal})
				whispers[k], public[k] = map[[2]string]*result.Influence{}, map[[2]string]*result.Influence{}
			}
			g := &out[i]
			g.Runs++
			if d.Verdicts > 0 {
				g.WithVerdicts++
			}
			g.Verdicts += d.Verdicts
			g.Changes += d.Changes
			g.MajorityChanges += d.MajorityChanges
			g.MeanFirstAgreement += d.FirstAgreement
			g.MeanFinalAgreement += d.FinalAgreement
			if d.Consensus != "" {
				g.Consensus++
				if d.Forced > 0 {
					g.ForcedConsensus++
				}
			}
			for a, n := range d.ByAgent {
				if g.ByAgent == nil {
					g.ByAgent = map[string]int{}
				}
				g.ByAgent[a] += n
			}
			addEdges(whispers[k], d.Whispers)
			addEdges(public[k], d.Public)
		}
	}
	for i := range out {
		g := &out[i]
		k := key{g.Node, g.Goal}
		g.MeanFirstAgreement /= float64(g.Runs)
		g.MeanFinalAgreement /= float64(g.Runs)
		g.Whispers, g.Public = edgeList(whispers[k]), edgeList(public[k])
		if g.WithVerdicts > 0 {
			scores := make([]float64, g.WithVerdicts)
			for j := range g.Consensus {
				scores[j] = 1
			}
			g.ConsensusRate = MeanCI(scores)
		}
	}
	return out
}

func addEdges(m map[[2]string]*result.Influence, es []result.Influence) {
	for _, e := range es {
		k := [2]string{e.From, e.To}
		if m[k] == nil {
			m[k] = &result.Influence{From: e.From, To: e.To}
		}
		m[k].Add(e)
	}
}

func edgeList(m map[[2]string]*result.Influence) []result.Influence {
	var out []result.Influence
	for _, k := range slices.SortedFunc(maps.Keys(m), func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) }) {
		out = append(out, *m[k])
	}
	return out
}

// Name is how a line names the thread: its goal, or its node outside
// goals.
func (g GoalDynamics) Name() string {
	switch {
	case g.Goal != "":
		return g.Goal
	case g.Node != "":
		return "node " + g.Node
	}
	return "(no goal)"
}

// String is the thread's line of the sweep's summary.
func (g GoalDynamics) String() string {
	name := g.Name()
	line := fmt.Sprintf("verdicts on %s: %d over %d run(s), %d changed an agent's verdict, the plurality changed %d time(s), agreement %.2f at the first verdicts and %.2f at the end",
		name, g.Verdicts, g.Runs, g.Changes, g.MajorityChanges, g.MeanFirstAgreement, g.MeanFinalAgreement)
	if a := g.ConsensusRate; a != nil {
		line += fmt.Sprintf(", consensus in %d of %d (95%% CI %.2f–%.2f)", g.Consensus, g.WithVerdicts, a.Low, a.High)
	}
	if len(g.Whispers) > 0 {
		var parts []string
		for _, w := range g.Whispers {
			parts = append(parts, fmt.Sprintf("%s→%s %d (addressee's next verdict changed %d of %d, to the sender's %d)", w.From, w.To, w.Count, w.Changed, w.Followed, w.Adopted))
		}
		line += "\nwhispers on " + name + ": " + strings.Join(parts, "; ")
	}
	return line
}
