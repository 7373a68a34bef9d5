package runtime

import (
	"fmt"
	"strings"

	"github.com/debate-runner/runner/spec"
)

// Agents a recruit node made: a recruited group's members stand in its
// slots' place in every node that runs after the recruitment (see
// spec.Plan.Recruit). The plan is never changed: each node naming the
// group runs as a copy of itself with the members for agents, made once
// per recruitment so that what is cached by node (agent views) stays few.

// recruitState is what the run's recruit nodes made.
type recruitState struct {
	// members are each recruited group's members, by group.
	members map[string][]*spec.AgentPlan
	// nodes are the nodes naming a recruited group as they run with the
	// current members (their copies), by the plan's node.
	nodes map[*spec.NodePlan]*spec.NodePlan
}

// Recruit implements kit.Flow.
func (h *host) Recruit(group string, list func() ([]any, error)) ([]*spec.AgentPlan, error) {
	r := h.run
	rp := r.Plan.Recruits[group]
	if rp == nil {
		return nil, fmt.Errorf("agent %q is not a recruited group (declare it with recruit:)", group)
	}
	if h.iteration() != nil {
		return nil, fmt.Errorf("node %q recruits %q inside a concurrent foreach, where iterations run at once and which one recruits last would decide: recruit before the foreach, or run it without concurrency", h.node.ID, group)
	}
	var members []*spec.AgentPlan
	if r.dry != nil {
		// The worst case: every slot, whatever the stand-in list says.
		if _, err := list(); err != nil {
			r.dry.note("node %q: its list cannot be made from stand-in replies (%v)", h.node.ID, firstLineOf(err))
		}
		members = rp.WorstCase()
		r.dry.note("node %q plans %q at its recruit.max, %d agents on %s", h.node.ID, group, rp.Max, members[0].Model.Name)
	} else {
		l, err := list()
		if err != nil {
			return nil, err
		}
		if members, err = r.Plan.Recruit(group, l); err != nil {
			return nil, fmt.Errorf("node %q: %w", h.node.ID, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.recruited.members == nil {
		r.recruited.members = map[string][]*spec.AgentPlan{}
	}
	r.recruited.members[group] = members
	// Nodes made for the earlier members are made again, and their
	// agent views with them.
	for orig, cp := range r.recruited.nodes {
		delete(r.views, cp)
		delete(r.recruited.nodes, orig)
	}
	return members, nil
}

// withRecruits is node as it runs now: itself when it names no recruited
// group, else a copy whose agents of recruited groups are the members
// recruited so far. A node naming a group no recruit node has filled yet
// fails, naming it.
func (r *Run) withRecruits(node *spec.NodePlan) (*spec.NodePlan, error) {
	if len(r.Plan.Recruits) == 0 || node.Kind == "recruit" {
		return node, nil
	}
	named := false
	for _, a := range node.Agents {
		if r.Plan.Recruits[a.Group] != nil {
			named = true
			break
		}
	}
	if !named {
		return node, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if cp, ok := r.recruited.nodes[node]; ok {
		return cp, nil
	}
	cp := *node
	cp.Agents = nil
	var missing []string
	for _, a := range node.Agents {
		if r.Plan.Recruits[a.Group] == nil {
			cp.Agents = append(cp.Agents, a)
			continue
		}
		members, ok := r.recruited.members[a.Group]
		if !ok {
			if a.Index == 1 {
				missing = append(missing, a.Group)
			}
			continue
		}
		if a.Index <= len(members) {
			cp.Agents = append(cp.Agents, members[a.Index-1])
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("node %q names %s, which no recruit node has recruited yet: run the recruit node before it", node.ID, quoteList(missing))
	}
	if len(cp.Agents) == 0 {
		return nil, fmt.Errorf("node %q: its recruited groups have no members", node.ID)
	}
	if r.recruited.nodes == nil {
		r.recruited.nodes = map[*spec.NodePlan]*spec.NodePlan{}
	}
	r.recruited.nodes[node] = &cp
	return &cp, nil
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
