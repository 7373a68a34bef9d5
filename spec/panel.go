package spec

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"
	"gopkg.in/yaml.v3"
)

// Panels and topologies: a replicated declaration whose agents come from a
// list (replicas: {from: vars.panel}), each with its own model, name,
// persona and vars, and a communication graph among a group's agents
// (topology:), which templates read as .Agent.Neighbours and history can
// filter on.

// panelKeys are the keys a panel member's mapping may have.
var panelKeys = []string{"model", "name", "role", "persona", "vars"}

// panel makes one agent per element of the list from gives: an element is
// a model (a model name of the spec, or else a model id, which replaces
// the declaration's model's `model` and keeps its other settings), or a
// mapping with model, name, role, persona and vars (merged over the
// declaration's).
func (c *compiler) panel(id string, decl *syntax.Agent, base *AgentPlan, from syntax.Expr) []*AgentPlan {
	v, ok := c.replicaValue(id, from)
	if !ok {
		return nil
	}
	list, isList := v.([]any)
	if !isList {
		c.r.Errorf(from.Pos, "agent %q: replicas.from must give a list (of models, or of mappings with %s); %s gives %T", id, strings.Join(panelKeys, ", "), strings.TrimSpace(from.Source), v)
		return nil
	}
	if len(list) < 1 || len(list) > maxReplicas {
		c.r.Errorf(from.Pos, "agent %q: replicas.from gives %d members; a panel has from 1 to %d", id, len(list), maxReplicas)
		return nil
	}
	out := make([]*AgentPlan, 0, len(list))
	for i, el := range list {
		r := *base
		r.ID, r.Index, r.Group = replicaID(id, i+1), i+1, id
		r.Name = base.Name + " " + strconv.Itoa(i+1)
		if decl.Name == "" {
			r.Name = r.ID
		}
		r.Vars = maps.Clone(base.Vars)
		where := fmt.Sprintf("agent %q: replicas.from member %d", id, i+1)
		switch m := el.(type) {
		case string:
			r.Model = c.panelModel(base.Model, m, from.Pos, where)
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(m)) {
				if !slices.Contains(panelKeys, k) {
					c.r.Errorf(from.Pos, "%s has key %q; a member's keys are %s", where, k, strings.Join(panelKeys, ", "))
				}
			}
			if mv, ok := m["model"]; ok {
				s, isStr := mv.(string)
				if !isStr || s == "" {
					c.r.Errorf(from.Pos, "%s: model must be a model name or id, found %v", where, mv)
				} else {
					r.Model = c.panelModel(base.Model, s, from.Pos, where)
				}
			}
			if s, ok := m["name"].(string); ok && s != "" {
				r.Name = s
			}
			if s, ok := m["role"].(string); ok {
				r.Role = s
			}
			if p, ok := m["persona"]; ok {
				var pv value.Persona
				if err := decodeStrict(p, &pv); err != nil {
					c.r.Errorf(from.Pos, "%s: persona: %s", where, firstLine(err.Error()))
				} else {
					r.Persona = pv
				}
			}
			if vs, ok := m["vars"]; ok {
				vm, isMap := vs.(map[string]any)
				if !isMap {
					c.r.Errorf(from.Pos, "%s: vars must be a mapping, found %T", where, vs)
				}
				if r.Vars == nil && len(vm) > 0 {
					r.Vars = map[string]any{}
				}
				maps.Copy(r.Vars, vm)
			}
		default:
			c.r.Errorf(from.Pos, "%s is %T; a member is a model or a mapping with %s", where, el, strings.Join(panelKeys, ", "))
		}
		out = append(out, &r)
	}
	return out
}

// decodeStrict decodes a value (from an expression) into a struct by its
// yaml keys, refusing unknown keys.
func decodeStrict(v any, into any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	return dec.Decode(into)
}

// panelModel is the model a panel member names: a model of the spec, or
// else a model id put in place of base's (its other settings kept), added
// to the plan's models under the id so usage is counted apart.
func (c *compiler) panelModel(base *ModelPlan, name string, pos syntax.Pos, where string) *ModelPlan {
	if m, ok := c.plan.Models[name]; ok {
		return m
	}
	if base == nil {
		return nil
	}
	if strings.TrimSpace(name) == "" {
		c.r.Errorf(pos, "%s: the model is empty", where)
		return base
	}
	m := *base
	m.Name, m.Model, m.Deployment = name, name, ""
	c.plan.Models[name] = &m
	return &m
}

// syntax.Topology shapes.
var topologyShapes = []string{"complete", "ring", "star", "tree"}

// topology sets each agent's Neighbours in a group: complete (everyone
// else), ring (the previous and next, wrapping), star (the first agent
// hears everyone, the others hear the first), tree (a binary tree by
// index: an agent hears its parent and its children), or a custom
// adjacency list of ids.
func (c *compiler) topology(id string, t syntax.Topology, group []*AgentPlan) {
	if t.From.Source != "" {
		var ok bool
		if t, ok = c.topologyFrom(id, t.From); !ok {
			return
		}
	}
	n := len(group)
	ids := make([]string, n)
	for i, a := range group {
		ids[i] = a.ID
	}
	set := func(i int, js ...int) {
		for _, j := range js {
			if j != i && j >= 0 && j < n && !slices.Contains(group[i].Neighbours, ids[j]) {
				group[i].Neighbours = append(group[i].Neighbours, ids[j])
			}
		}
	}
	for _, a := range group {
		a.Neighbours = []string{} // set: the group has a topology
	}
	if t.Shape.Set {
		for i := range group {
			switch t.Shape.V {
			case "complete":
				for j := range n {
					set(i, j)
				}
			case "ring":
				set(i, (i+n-1)%n, (i+1)%n)
			case "star":
				if i == 0 {
					for j := 1; j < n; j++ {
						set(i, j)
					}
				} else {
					set(i, 0)
				}
			case "tree":
				// 1-based heap order: parent k/2, children 2k and 2k+1.
				k := i + 1
				if k > 1 {
					set(i, k/2-1)
				}
				set(i, 2*k-1, 2*k)
			default:
				if i == 0 {
					c.r.Errorf(t.Shape.Pos, "agent %q: unknown topology %q (one of %s, or a mapping of agent id to the ids it hears)%s", id, t.Shape.V, strings.Join(topologyShapes, ", "), syntax.DidYouMean(t.Shape.V, topologyShapes))
				}
				return
			}
		}
		return
	}
	for _, k := range t.Edges.Keys {
		i := slices.Index(ids, k.V)
		if i < 0 {
			c.r.Errorf(k.Pos, "agent %q: topology names %q, which is not one of its agents (%s)%s", id, k.V, strings.Join(ids, ", "), syntax.DidYouMean(k.V, ids))
			continue
		}
		for _, to := range *t.Edges.Values[k.V] {
			j := slices.Index(ids, to.V)
			switch {
			case j < 0:
				c.r.Errorf(to.Pos, "agent %q: topology: %q hears %q, which is not one of its agents (%s)%s", id, k.V, to.V, strings.Join(ids, ", "), syntax.DidYouMean(to.V, ids))
			case j == i:
				c.r.Errorf(to.Pos, "agent %q: topology: %q hears itself; list only the others it hears", id, k.V)
			default:
				set(i, j)
			}
		}
	}
}
