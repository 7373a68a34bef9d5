package spec

import (
	"fmt"
	"maps"
)

// This file checks that expressions and templates read only nodes that can
// have run by the time they are evaluated: `nodes.X.output` in an `if`
// before X runs is nil at run time, and `.Nodes.X` in a template of a node
// that runs before X is a "map has no entry" failure, after calls were paid
// for. A read of a node that cannot have run yet is an error, unless the
// expression guards it (nodes.X?.output, nodes.X.output ?? fallback). A
// template's read of a node that may not have run (the first iteration of a
// loop, a branch not taken) is a warning; an expression's is not reported,
// since conditions often guard such reads in ways no check can follow
// (`vars.rate && nodes.rating.output > 3` after `if: vars.rate`).

// site is where an expression is evaluated.
type site struct {
	// node: while the node runs (its own conditions, speakers, rules).
	node *NodePlan
	// step: at a flow step, before its body, or after it when after is set
	// (a loop's until).
	step  *FlowStep
	after bool
	// end: once the flow has finished (outputs, score).
	end bool
}

// ranSet is what has run at a point of the flow: nodes that may have run
// (on some path, in some earlier iteration) and nodes that must have.
type ranSet struct {
	may, must map[string]bool
}

func newRanSet() ranSet { return ranSet{may: map[string]bool{}, must: map[string]bool{}} }

func (s ranSet) clone() ranSet { return ranSet{may: maps.Clone(s.may), must: maps.Clone(s.must)} }

func (s ranSet) add(id string) ranSet {
	out := s.clone()
	out.may[id], out.must[id] = true, true
	return out
}

// runOrder checks reads against what has run.
type runOrder struct {
	c *compiler
	// bySite indexes pending expressions by where they are evaluated.
	byNode map[*NodePlan][]*pendingExpr
	byStep map[*FlowStep][]*pendingExpr
	atEnd  []*pendingExpr
	// check is off while a loop body is walked only to learn what it may
	// run.
	check bool
}

func (c *compiler) checkRunOrder() {
	ro := &runOrder{c: c, byNode: map[*NodePlan][]*pendingExpr{}, byStep: map[*FlowStep][]*pendingExpr{}, check: true}
	for _, p := range c.pending {
		switch {
		case p.site == nil:
		case p.site.node != nil:
			ro.byNode[p.site.node] = append(ro.byNode[p.site.node], p)
		case p.site.step != nil:
			ro.byStep[p.site.step] = append(ro.byStep[p.site.step], p)
		case p.site.end:
			ro.atEnd = append(ro.atEnd, p)
		}
	}
	end := ro.steps(c.plan.Flow, newRanSet())
	ro.exprs(ro.atEnd, end, "when the flow has finished")
}

func (ro *runOrder) steps(steps []*FlowStep, in ranSet) ranSet {
	cur := in
	for _, s := range steps {
		cur = ro.step(s, cur)
	}
	return cur
}

func (ro *runOrder) step(s *FlowStep, in ranSet) ranSet {
	switch s.Kind {
	case StepNode:
		ro.node(s.Node, in, map[*NodePlan]bool{})
		out := in.add(s.Node.ID)
		for _, w := range ro.watchers(s.Node, map[string]bool{}) {
			out.may[w] = true
		}
		return out
	case StepLoop, StepForeach:
		ro.stepExprs(s, false, in)
		// A later iteration sees what an earlier one ran.
		entry := in.clone()
		if ro.check {
			ro.check = false
			maps.Copy(entry.may, ro.steps(s.Do, in).may)
			ro.check = true
		} else {
			maps.Copy(entry.may, ro.steps(s.Do, in).may)
		}
		out := ro.steps(s.Do, entry)
		ro.stepExprs(s, true, out)
		if s.Kind == StepLoop || s.In != nil && s.In.Source == "goals" && len(ro.c.plan.Goals) > 0 {
			// A loop runs at least once (its max is at least 1), and so
			// does a foreach over the declared goals.
			return out
		}
		return ranSet{may: out.may, must: in.must}
	case StepIf:
		ro.stepExprs(s, false, in)
		then, els := ro.steps(s.Do, in), ro.steps(s.Else, in)
		out := ranSet{may: maps.Clone(then.may), must: map[string]bool{}}
		maps.Copy(out.may, els.may)
		for id := range then.must {
			if els.must[id] {
				out.must[id] = true
			}
		}
		return out
	}
	return in
}

// watchers are the nodes a node runs itself, and theirs.
func (ro *runOrder) watchers(np *NodePlan, seen map[string]bool) []string {
	var out []string
	for _, id := range np.Runs {
		if seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, id)
		if w := ro.c.plan.Nodes[id]; w != nil {
			out = append(out, ro.watchers(w, seen)...)
		}
	}
	return out
}

// node checks what a node reads when it runs with in having run; the
// nodes it runs itself (watchers) run with the same.
func (ro *runOrder) node(np *NodePlan, in ranSet, seen map[*NodePlan]bool) {
	if !ro.check || seen[np] {
		return
	}
	seen[np] = true
	ro.exprs(ro.byNode[np], in, fmt.Sprintf("when node %q runs", np.ID))
	for _, use := range ro.c.nodeTemplates[np.ID] {
		for _, r := range use.reads {
			ro.templateRead(np, use, r, in)
		}
	}
	for _, id := range np.Runs {
		if w := ro.c.plan.Nodes[id]; w != nil {
			ro.node(w, in, seen)
		}
	}
}

func (ro *runOrder) stepExprs(s *FlowStep, after bool, in ranSet) {
	if !ro.check {
		return
	}
	var here []*pendingExpr
	for _, p := range ro.byStep[s] {
		if p.site.after == after {
			here = append(here, p)
		}
	}
	ro.exprs(here, in, "at this point of the flow")
}

func (ro *runOrder) exprs(ps []*pendingExpr, in ranSet, when string) {
	if !ro.check {
		return
	}
	for _, p := range ps {
		for _, r := range p.refs {
			if !in.may[r.id] && !r.guarded {
				ro.c.r.errorf(r.pos, "%s: node %q cannot have run %s, so its output is nil (read it after the node runs, or guard the read: nodes.%s?.output ?? DEFAULT)", r.what, r.id, when, r.id)
			}
		}
	}
}

func (ro *runOrder) templateRead(np *NodePlan, use templateUse, r tmplNodeRead, in ranSet) {
	where := fmt.Sprintf("template %s", use.name)
	if r.loc != "" {
		where = fmt.Sprintf("template %s (at %s)", use.name, r.loc)
	}
	switch {
	case !in.may[r.id]:
		ro.c.r.errorf(use.pos, "node %q: %s reads .Nodes.%s, but node %q cannot have run before node %q", np.ID, where, r.id, r.id, np.ID)
	case !in.must[r.id]:
		ro.c.r.warnf(use.pos, "node %q: %s reads .Nodes.%s, but node %q may not have run yet when node %q runs; read it with {{with index .Nodes %q}}...{{end}}", np.ID, where, r.id, r.id, np.ID, r.id)
	}
}
