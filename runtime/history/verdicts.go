package history

import (
	"math"

	"github.com/debate-runner/runner/spec/value"
)

// verdicts keeps each goal's verdicts as messages are recorded: per goal and
// node, each agent's latest verdict, in the order first given, and whether
// the agent withdrew. A group's summary is made again only when one of its
// messages arrives, so reading them costs the number of groups, not of
// messages.
type verdicts struct {
	groups    []*verdictGroup
	byGroup   map[verdictScope]*verdictGroup
	withdrawn map[verdictAgent]bool
	// out is what list returns until a verdict or withdrawal changes it.
	out   []value.GoalVerdicts
	stale bool
}

type verdictScope struct{ goal, node string }

type verdictAgent struct {
	verdictScope
	agent string
}

// given is an agent's latest verdict in a group.
type given struct {
	verdict, reasoning string
	forced             bool
}

type verdictGroup struct {
	scope  verdictScope
	agents []string
	latest map[string]*given
	gv     value.GoalVerdicts
	stale  bool
}

func (v *verdicts) add(m *value.Message) {
	scope := verdictScope{m.Goal, m.Node}
	k := verdictAgent{scope, m.From}
	g := v.byGroup[scope]
	if m.Withdrawn {
		if v.withdrawn == nil {
			v.withdrawn = map[verdictAgent]bool{}
		}
		v.withdrawn[k] = true
		if g != nil && g.latest[m.From] != nil {
			g.stale, v.stale = true, true
		}
	}
	if m.Verdict == "" {
		return
	}
	if g == nil {
		g = &verdictGroup{scope: scope, latest: map[string]*given{}}
		if v.byGroup == nil {
			v.byGroup = map[verdictScope]*verdictGroup{}
		}
		v.byGroup[scope] = g
		v.groups = append(v.groups, g)
	}
	if g.latest[m.From] == nil {
		g.agents = append(g.agents, m.From)
	}
	g.latest[m.From] = &given{m.Verdict, m.Reasoning, m.Forced}
	g.stale, v.stale = true, true
}

// list returns the verdicts of every group, nil when none was given. The
// result is shared: read it, never change it.
func (v *verdicts) list() []value.GoalVerdicts {
	if !v.stale {
		return v.out
	}
	out := make([]value.GoalVerdicts, len(v.groups))
	for i, g := range v.groups {
		if g.stale {
			g.gv = v.summary(g)
			g.stale = false
		}
		out[i] = g.gv
	}
	v.out, v.stale = out, false
	return out
}

func (v *verdicts) summary(g *verdictGroup) value.GoalVerdicts {
	gv := value.GoalVerdicts{Goal: g.scope.goal, Node: g.scope.node, Counts: map[string]int{}, Percent: map[string]float64{}}
	for _, a := range g.agents {
		l := g.latest[a]
		gv.Verdicts = append(gv.Verdicts, value.AgentVerdict{Agent: a, Verdict: l.verdict, Reasoning: l.reasoning, Withdrawn: v.withdrawn[verdictAgent{g.scope, a}], Forced: l.forced})
		gv.Counts[l.verdict]++
	}
	for verdict, n := range gv.Counts {
		gv.Percent[verdict] = math.Round(float64(n)*10000/float64(len(gv.Verdicts))) / 100
	}
	return gv
}
