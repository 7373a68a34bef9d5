package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// topologyFrom evaluates topology: {from: EXPR} against the run's var
// values (the defaults when validating): a shape's name, or a mapping of
// agent id to the ids it hears. Problems are reported at the expression,
// since the values have no place of their own in the spec.
func (c *compiler) topologyFrom(id string, from Expr) (Topology, bool) {
	v, ok := c.varsValue(id, "topology", from)
	if !ok {
		return Topology{}, false
	}
	t := Topology{Pos: from.Pos, Set: true}
	src := strings.TrimSpace(from.Source)
	switch x := v.(type) {
	case string:
		t.Shape = Str{V: x, Pos: from.Pos, Set: true}
		return t, true
	case map[string]any:
		t.Edges.Values = map[string]*StrList{}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			list, isList := x[k].([]any)
			if !isList {
				c.r.errorf(from.Pos, "agent %q: topology from %s: %q hears %v; give a list of agent ids", id, src, k, x[k])
				return Topology{}, false
			}
			var ids StrList
			for _, e := range list {
				s, isStr := e.(string)
				if !isStr {
					c.r.errorf(from.Pos, "agent %q: topology from %s: %q hears %v, which is not an agent id", id, src, k, e)
					return Topology{}, false
				}
				ids = append(ids, Str{V: s, Pos: from.Pos, Set: true})
			}
			t.Edges.Keys = append(t.Edges.Keys, Str{V: k, Pos: from.Pos, Set: true})
			t.Edges.Values[k] = &ids
		}
		return t, true
	}
	if v == nil {
		var names []string
		for _, vp := range c.plan.Vars {
			names = append(names, vp.Name)
		}
		for _, m := range varRef.FindAllStringSubmatch(src, -1) {
			if !slices.Contains(names, m[1]) {
				c.r.errorf(from.Pos, "agent %q: topology from %s: the spec has no var %q%s", id, src, m[1], didYouMean(m[1], names))
				return Topology{}, false
			}
		}
	}
	c.r.errorf(from.Pos, "agent %q: topology from %s gives %s; it must give one of %s, or a mapping of agent id to the ids it hears", id, src, describe(v), strings.Join(topologyShapes, ", "))
	return Topology{}, false
}

// describe is a value and its type, for messages.
func describe(v any) string {
	if v == nil {
		return "nothing"
	}
	return fmt.Sprintf("%v (%T)", v, v)
}
