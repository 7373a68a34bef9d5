package spec

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
)

// Agents from data: a declaration with recruit: is a group of up to Max
// agents ID_1..ID_Max whose names, roles, personas and models are given
// at run time, from a list, by a recruit node (nodes/recruit). The plan
// keeps the Max slots, so that nodes naming the group are checked, the dry
// run and the budget plan with all of them, and every id is known before
// the run; a run fills the first slots with the list's members and leaves
// the others out of every node (see Plan.Recruit).

// RecruitPlan is a declaration whose agents a recruit node makes.
type RecruitPlan struct {
	// Group is the declaration's id; Slots its Max agents, in order.
	Group string
	Max   int
	Slots []*AgentPlan
	// Models are the models a member may name, by name (the first is
	// the one a member that names none gets).
	Models []*ModelPlan
	Names  []string
	// named says the declaration has a name (members without one are
	// named NAME N, else by their ids).
	named bool
}

// RecruitKeys are the keys a recruited member's mapping may have.
var RecruitKeys = []string{"name", "role", "persona", "model", "vars"}

// recruitDecl compiles a declaration with recruit: into its slots.
func (c *compiler) recruitDecl(id string, decl *syntax.Agent, base *AgentPlan) []*AgentPlan {
	r := decl.Recruit
	where := fmt.Sprintf("agent %q", id)
	if !decl.Replicas.IsZero() {
		c.r.Errorf(r.Pos, "%s: give replicas or recruit, not both (recruit makes the group's agents at run time)", where)
		return nil
	}
	if decl.Topology.Set {
		c.r.Errorf(decl.Topology.Pos, "%s: a recruited group has no topology: its members hear each other as the nodes' history says", where)
	}
	if decl.Human.V {
		c.r.Errorf(r.Pos, "%s: a recruited group cannot be played by a person (human: true)", where)
		return nil
	}
	n := c.recruitMax(id, r.Max, r.Pos)
	if n == 0 {
		return nil
	}
	rp := &RecruitPlan{Group: id, Max: n, named: decl.Name != ""}
	if len(r.Models) == 0 {
		rp.Models, rp.Names = []*ModelPlan{base.Model}, []string{modelName(c, decl.Model)}
	}
	for _, m := range r.Models {
		if mp := c.modelRef(m, where+": recruit.models"); mp != nil {
			rp.Models, rp.Names = append(rp.Models, mp), append(rp.Names, m.V)
		}
	}
	for i := 1; i <= n; i++ {
		s := *base
		s.ID, s.Index, s.Group = replicaID(id, i), i, id
		s.Name = base.Name + " " + strconv.Itoa(i)
		if decl.Name == "" {
			s.Name = s.ID
		}
		rp.Slots = append(rp.Slots, &s)
	}
	if c.plan.Recruits == nil {
		c.plan.Recruits = map[string]*RecruitPlan{}
	}
	c.plan.Recruits[id] = rp
	return rp.Slots
}

// modelName is the name of the model an agent declaration names.
func modelName(_ *compiler, s syntax.Str) string {
	if s.V == "" {
		return "default"
	}
	return s.V
}

// recruitMax is a recruit's max: a whole number from 1 to maxReplicas,
// or an expression over vars giving one.
func (c *compiler) recruitMax(id string, e syntax.Expr, pos syntax.Pos) int {
	src := strings.TrimSpace(e.Source)
	if src == "" {
		c.r.Errorf(pos, "agent %q: recruit needs max: the most agents the group has", id)
		return 0
	}
	n, err := strconv.Atoi(src)
	if err != nil {
		v, ok := c.varsValue(id, "recruit.max", e)
		if !ok {
			return 0
		}
		var whole bool
		n, whole = wholeNumber(v)
		if !whole {
			c.r.Errorf(e.Pos, "agent %q: recruit.max must be a whole number or an expression over vars giving one (%s gives %v)", id, src, v)
			return 0
		}
	}
	if n < 1 || n > maxReplicas {
		c.r.Errorf(e.Pos, "agent %q: recruit.max is %d; it must be from 1 to %d", id, n, maxReplicas)
		return 0
	}
	return n
}

// Recruit makes the members of a recruited group from a list: an element
// is a name, or a mapping with name, role, persona, model (one of the
// group's recruit.models) and vars. Member i takes slot i's id. The list
// must have at most Max elements and the members' names must differ; the
// error says which element is wrong and why.
func (p *Plan) Recruit(group string, list []any) ([]*AgentPlan, error) {
	rp := p.Recruits[group]
	if rp == nil {
		return nil, fmt.Errorf("agent %q is not a recruited group (recruit:)", group)
	}
	if len(list) > rp.Max {
		return nil, fmt.Errorf("%d members for %q, whose recruit.max is %d (bound the list: a JSON schema's maxItems, or take(LIST, %d))", len(list), group, rp.Max, rp.Max)
	}
	out := make([]*AgentPlan, 0, len(list))
	names := map[string]int{}
	for i, el := range list {
		slot := rp.Slots[i]
		m := *slot
		m.Model = rp.Models[0]
		m.Vars = maps.Clone(slot.Vars)
		where := fmt.Sprintf("member %d of %q", i+1, group)
		switch x := el.(type) {
		case string:
			if strings.TrimSpace(x) == "" {
				return nil, fmt.Errorf("%s: the name is empty", where)
			}
			m.Name = x
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if !slices.Contains(RecruitKeys, k) {
					return nil, fmt.Errorf("%s has key %q; a member's keys are %s%s", where, k, strings.Join(RecruitKeys, ", "), syntax.DidYouMean(k, RecruitKeys))
				}
			}
			if v, ok := x["name"]; ok && v != nil {
				s, isStr := v.(string)
				if !isStr || strings.TrimSpace(s) == "" {
					return nil, fmt.Errorf("%s: name must be non-empty text, found %v", where, v)
				}
				m.Name = s
			}
			if v, ok := x["role"]; ok && v != nil {
				s, isStr := v.(string)
				if !isStr {
					return nil, fmt.Errorf("%s: role must be text, found %T", where, v)
				}
				m.Role = s
			}
			if v, ok := x["model"]; ok && v != nil {
				s, _ := v.(string)
				j := slices.Index(rp.Names, s)
				if j < 0 {
					return nil, fmt.Errorf("%s: model %v is not one the group may use (recruit.models: %s)%s", where, v, strings.Join(rp.Names, ", "), syntax.DidYouMean(s, rp.Names))
				}
				m.Model = rp.Models[j]
			}
			if v, ok := x["persona"]; ok && v != nil {
				var pv value.Persona
				if err := decodeStrict(v, &pv); err != nil {
					return nil, fmt.Errorf("%s: persona: %s", where, firstLine(err.Error()))
				}
				m.Persona = pv
			}
			if v, ok := x["vars"]; ok && v != nil {
				vm, isMap := v.(map[string]any)
				if !isMap {
					return nil, fmt.Errorf("%s: vars must be a mapping, found %T", where, v)
				}
				if m.Vars == nil && len(vm) > 0 {
					m.Vars = map[string]any{}
				}
				maps.Copy(m.Vars, vm)
			}
		default:
			return nil, fmt.Errorf("%s is %s; a member is a name or a mapping with %s", where, describeValue(el), strings.Join(RecruitKeys, ", "))
		}
		if j, dup := names[m.Name]; dup {
			return nil, fmt.Errorf("%s is named %q, as member %d is: members' names must differ", where, m.Name, j)
		}
		names[m.Name] = i + 1
		out = append(out, &m)
	}
	return out, nil
}

// describeValue names a value's type as a spec writer knows it.
func describeValue(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case int, int64, float64:
		return "a number"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("a %T", v)
}

// RecruitMembers are the members' views as a recruit node's output shows
// them: id, name, role and model name.
func RecruitMembers(members []*AgentPlan) []any {
	out := make([]any, len(members))
	for i, m := range members {
		model := ""
		if m.Model != nil {
			model = m.Model.Name
		}
		out[i] = map[string]any{"id": m.ID, "name": m.Name, "role": m.Role, "model": model}
	}
	return out
}

// RecruitMemberType is the type of an element of RecruitMembers.
var RecruitMemberType = ObjectOf(Field{Name: "id", Type: TypeString}, Field{Name: "name", Type: TypeString}, Field{Name: "role", Type: TypeString}, Field{Name: "model", Type: TypeString})

// recruitModels declares the models a recruited group may use as models
// of every node that names it: a run connects to their endpoints.
func (c *compiler) recruitModels() {
	for _, id := range c.plan.NodeOrder {
		np := c.plan.Nodes[id]
		if np.Kind == "recruit" {
			continue // it calls no model
		}
		for _, a := range np.Agents {
			if rp := c.plan.Recruits[a.Group]; rp != nil {
				for _, m := range rp.Models {
					if m != nil && !slices.Contains(np.Models, m) {
						np.Models = append(np.Models, m)
					}
				}
			}
		}
	}
}

// VarsValue evaluates an expression that reads only vars (and literals)
// with the run's var values, the defaults when validating: ok is false
// when it reads anything else or does not evaluate (its own compile
// reports why). A run that sets a var it reads compiles the spec again,
// so the value is the run's.
func (n *NodeContext) VarsValue(e syntax.Expr) (any, bool) {
	src := strings.TrimSpace(e.Source)
	tree, err := parser.Parse(src)
	if err != nil {
		return nil, false
	}
	only := true
	root := tree.Node
	ast.Walk(&root, visitorFunc(func(x *ast.Node) {
		switch v := (*x).(type) {
		case *ast.IdentifierNode:
			if v.Value != "vars" {
				only = false
			}
		case *ast.CallNode, *ast.PointerNode, *ast.VariableDeclaratorNode:
			only = false
		}
	}))
	if !only {
		return nil, false
	}
	v, err := n.c.evalVars(src)
	if err != nil {
		return nil, false
	}
	return v, true
}

// WorstCase are the group's slots as a dry run plans them: every slot, on
// the costliest of the models a member may use (by the spec's price, else
// the built-in one), so that the plan's cost is the most a run can spend.
func (rp *RecruitPlan) WorstCase() []*AgentPlan {
	var costliest *ModelPlan
	most := -1.0
	for _, m := range rp.Models {
		p := m.Price
		if p == nil {
			p = BuiltinPrice(m.Model)
		}
		c := 0.0
		if p != nil {
			c = p.Prompt + p.Completion
		}
		if c > most {
			costliest, most = m, c
		}
	}
	out := make([]*AgentPlan, len(rp.Slots))
	for i, s := range rp.Slots {
		a := *s
		if costliest != nil {
			a.Model = costliest
		}
		out[i] = &a
	}
	return out
}
