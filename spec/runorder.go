package spec

import (
	"fmt"
	"reflect"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
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
// (on some path, in some earlier iteration) and nodes that must have. The
// sets are bitsets over the plan's node order: a flow step copies them, and
// a copy must cost little even for a spec of thousands of nodes and steps.
type ranSet struct {
	may, must bitset
}

type bitset []uint64

func newBitset(n int) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }
func (b bitset) set(i int)      { b[i/64] |= 1 << (i % 64) }
func (b bitset) clone() bitset  { return append(bitset(nil), b...) }
func (b bitset) or(o bitset)    { orInto(b, o) }
func orInto(dst, src bitset) {
	for i := range dst {
		dst[i] |= src[i]
	}
}

func (s ranSet) clone() ranSet { return ranSet{may: s.may.clone(), must: s.must.clone()} }

// runOrder checks reads against what has run.
type runOrder struct {
	c *compiler
	// bySite indexes pending expressions by where they are evaluated.
	byNode map[*NodePlan][]*pendingExpr
	byStep map[*FlowStep][]*pendingExpr
	atEnd  []*pendingExpr
	// index numbers the nodes for the bitsets.
	index map[string]int
	// runs caches, per node, the node and every node it runs itself.
	runs map[*NodePlan]bitset
	// scope is the loop and foreach variables of the steps being walked,
	// innermost last: what .Loop holds when a node runs.
	scope []string
	// scopeKinds says what each scope is: loop, foreach or goals.
	scopeKinds []string
}

func (c *compiler) checkRunOrder() {
	ro := &runOrder{c: c, byNode: map[*NodePlan][]*pendingExpr{}, byStep: map[*FlowStep][]*pendingExpr{},
		index: map[string]int{}, runs: map[*NodePlan]bitset{}}
	for i, id := range c.plan.NodeOrder {
		ro.index[id] = i
	}
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
	n := len(c.plan.NodeOrder)
	end := ro.steps(c.plan.Flow, ranSet{may: newBitset(n), must: newBitset(n)})
	ro.exprs(ro.atEnd, end, "when the flow has finished")
	ro.endExprs(ro.atEnd, end)
}

// ran reports whether id may (must) have run.
func (ro *runOrder) may(s ranSet, id string) bool {
	i, ok := ro.index[id]
	return ok && s.may.has(i)
}

func (ro *runOrder) must(s ranSet, id string) bool {
	i, ok := ro.index[id]
	return ok && s.must.has(i)
}

// steps walks a sequence from in, which it does not change.
func (ro *runOrder) steps(steps []*FlowStep, in ranSet) ranSet {
	cur := in.clone()
	for _, s := range steps {
		cur = ro.step(s, cur)
	}
	return cur
}

// step walks one step from in, which it owns (and may change).
func (ro *runOrder) step(s *FlowStep, in ranSet) ranSet {
	switch s.Kind {
	case StepNode:
		ro.node(s.Node, in, map[*NodePlan]bool{})
		in.must.set(ro.index[s.Node.ID])
		in.may.or(ro.runsOf(s.Node))
		return in
	case StepLoop, StepForeach:
		ro.stepExprs(s, false, in)
		// A later iteration sees what an earlier one may have run.
		entry := in.clone()
		ro.mayRun(s.Do, entry.may)
		ro.scope = append(ro.scope, s.As)
		ro.scopeKinds = append(ro.scopeKinds, scopeKind(s))
		out := ro.steps(s.Do, entry)
		ro.scope = ro.scope[:len(ro.scope)-1]
		ro.scopeKinds = ro.scopeKinds[:len(ro.scopeKinds)-1]
		ro.stepExprs(s, true, out)
		if s.Kind == StepLoop && s.Break != nil {
			// A break may end the first iteration after its first step:
			// only what that step must run (a node) must have run.
			must := in.must.clone()
			if len(s.Do) > 0 && s.Do[0].Kind == StepNode {
				must.set(ro.index[s.Do[0].Node.ID])
			}
			return ranSet{may: out.may, must: must}
		}
		if s.Kind == StepLoop || s.In != nil && s.In.Source == "goals" && len(ro.c.plan.Goals) > 0 {
			// A loop runs at least once (its max is at least 1), and so
			// does a foreach over the declared goals.
			return out
		}
		switch listLength(s.In) {
		case nonEmpty:
			return out // over a list that has an item in every run
		case empty:
			return in // its body never runs
		}
		return ranSet{may: out.may, must: in.must}
	case StepIf:
		ro.stepExprs(s, false, in)
		then, els := ro.steps(s.Do, in), ro.steps(s.Else, in)
		if s.Cond != nil {
			// a condition that reads nothing of the run takes the same
			// branch in every run
			if v, ok := constant(s.Cond.Source); ok {
				if b, isBool := v.(bool); isBool {
					if b {
						return then
					}
					return els
				}
			}
		}
		then.may.or(els.may)
		for i := range then.must {
			then.must[i] &= els.must[i]
		}
		return then
	}
	return in
}

// runsOf is the node and the nodes it runs itself (watchers), and theirs.
func (ro *runOrder) runsOf(np *NodePlan) bitset {
	if b, ok := ro.runs[np]; ok {
		return b
	}
	b := newBitset(len(ro.index))
	ro.runs[np] = b // a cycle (reported elsewhere) ends here
	b.set(ro.index[np.ID])
	for _, id := range np.Runs {
		if w := ro.c.plan.Nodes[id]; w != nil {
			b.or(ro.runsOf(w))
		}
	}
	return b
}

// mayRun adds to may every node a sequence can run, on any path.
func (ro *runOrder) mayRun(steps []*FlowStep, may bitset) {
	for _, s := range steps {
		switch s.Kind {
		case StepNode:
			may.or(ro.runsOf(s.Node))
		default:
			ro.mayRun(s.Do, may)
			ro.mayRun(s.Else, may)
		}
	}
}

// node checks what a node reads when it runs with in having run; the
// nodes it runs itself (watchers) run with the same.
func (ro *runOrder) node(np *NodePlan, in ranSet, seen map[*NodePlan]bool) {
	if seen[np] {
		return
	}
	seen[np] = true
	ro.exprs(ro.byNode[np], in, fmt.Sprintf("when node %q runs", np.ID))
	for _, use := range ro.c.nodeTemplates[np.ID] {
		for _, r := range use.reads {
			if r.loop {
				ro.loopRead(np, use, r)
				continue
			}
			if r.scoped != "" {
				ro.scopedRead(np, use, r)
				continue
			}
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
	var here []*pendingExpr
	for _, p := range ro.byStep[s] {
		if p.site.after == after {
			here = append(here, p)
		}
	}
	ro.exprs(here, in, "at this point of the flow")
}

func (ro *runOrder) exprs(ps []*pendingExpr, in ranSet, when string) {
	for _, p := range ps {
		for _, r := range p.refs {
			if !ro.may(in, r.id) && !r.guarded {
				ro.c.r.Errorf(r.pos, "%s: node %q cannot have run %s, so its output is nil (read it after the node runs, or guard the read: nodes.%s?.output ?? DEFAULT)", r.what, r.id, when, r.id)
			}
		}
	}
}

func (ro *runOrder) templateRead(np *NodePlan, use templateUse, r tmplNodeRead, in ranSet) {
	if ro.must(in, r.id) {
		return
	}
	where := fmt.Sprintf("template %s", use.name)
	if r.loc != "" {
		where = fmt.Sprintf("template %s (at %s)", use.name, r.loc)
	}
	switch {
	case !ro.may(in, r.id):
		ro.c.r.Errorf(use.pos, "node %q: %s reads .Nodes.%s, but node %q cannot have run before node %q", np.ID, where, r.id, r.id, np.ID)
	case !ro.must(in, r.id):
		ro.c.r.Warnf(use.pos, "node %q: %s reads .Nodes.%s, but node %q may not have run yet when node %q runs; read it with {{with index .Nodes %q}}...{{end}}", np.ID, where, r.id, r.id, np.ID, r.id)
	}
}

// constant evaluates an expression that reads nothing of the run (no
// name: literals, operators and expr's builtins but now): its value is
// the same in every run. ok is false for any other expression, or one
// whose evaluation fails (reported where it is compiled or run).
func constant(src string) (v any, ok bool) {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil, false
	}
	pure := true
	ast.Walk(&tree.Node, visitorFunc(func(n *ast.Node) {
		switch x := (*n).(type) {
		case *ast.IdentifierNode, *ast.VariableDeclaratorNode, *ast.CallNode:
			pure = false
		case *ast.BuiltinNode:
			if x.Name == "now" {
				pure = false
			}
		}
	}))
	if !pure {
		return nil, false
	}
	defer func() {
		if recover() != nil {
			v, ok = nil, false
		}
	}()
	prog, err := expr.Compile(src, expr.MaxNodes(2000))
	if err != nil {
		return nil, false
	}
	v, err = expr.Run(prog, nil)
	return v, err == nil
}

type lengthKind int

const (
	unknownLength lengthKind = iota
	empty
	nonEmpty
)

// listLength says whether a foreach's list is empty or has an item in
// every run, where that does not depend on the run: a constant list, a
// list literal with items (whatever they hold), or split over a constant
// separator that is not empty (which gives one item at the least).
func listLength(p *Program) lengthKind {
	if p == nil {
		return unknownLength
	}
	if v, ok := constant(p.Source); ok {
		rv := reflect.ValueOf(v)
		if rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
			if rv.Len() == 0 {
				return empty
			}
			return nonEmpty
		}
		return unknownLength
	}
	tree, err := parser.Parse(p.Source)
	if err != nil {
		return unknownLength
	}
	switch x := tree.Node.(type) {
	case *ast.ArrayNode:
		if len(x.Nodes) > 0 {
			return nonEmpty
		}
	case *ast.BuiltinNode:
		if x.Name == "split" && len(x.Arguments) == 2 {
			if sep, ok := x.Arguments[1].(*ast.StringNode); ok && sep.Value != "" {
				return nonEmpty
			}
		}
	}
	return unknownLength
}
