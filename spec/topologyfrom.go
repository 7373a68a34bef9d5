package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/debate-runner/runner/spec/syntax"
)

// topologyFrom evaluates topology: {from: EXPR} against the run's var
// values (the defaults when validating): a shape's name, or a mapping of
// agent id to the ids it hears. Problems are reported at the expression,
// since the values have no place of their own in the spec.
func (c *compiler) topologyFrom(id string, from syntax.Expr) (syntax.Topology, bool) {
	v, ok := c.varsValue(id, "topology", from)
	if !ok {
		return syntax.Topology{}, false
	}
	t := syntax.Topology{Pos: from.Pos, Set: true}
	src := strings.TrimSpace(from.Source)
	switch x := v.(type) {
	case string:
		t.Shape = syntax.Str{V: x, Pos: from.Pos, Set: true}
		return t, true
	case map[string]any:
		t.Edges.Values = map[string]*syntax.StrList{}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			list, isList := x[k].([]any)
			if !isList {
				c.r.Errorf(from.Pos, "agent %q: topology from %s: %q hears %v; give a list of agent ids", id, src, k, x[k])
				return syntax.Topology{}, false
			}
			var ids syntax.StrList
			for _, e := range list {
				s, isStr := e.(string)
				if !isStr {
					c.r.Errorf(from.Pos, "agent %q: topology from %s: %q hears %v, which is not an agent id", id, src, k, e)
					return syntax.Topology{}, false
				}
				ids = append(ids, syntax.Str{V: s, Pos: from.Pos, Set: true})
			}
			t.Edges.Keys = append(t.Edges.Keys, syntax.Str{V: k, Pos: from.Pos, Set: true})
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
				c.r.Errorf(from.Pos, "agent %q: topology from %s: the spec has no var %q%s", id, src, m[1], syntax.DidYouMean(m[1], names))
				return syntax.Topology{}, false
			}
		}
	}
	c.r.Errorf(from.Pos, "agent %q: topology from %s gives %s; it must give one of %s, or a mapping of agent id to the ids it hears", id, src, describe(v), strings.Join(topologyShapes, ", "))
	return syntax.Topology{}, false
}

// describe is a value and its type, for messages.
func describe(v any) string {
	if v == nil {
		return "nothing"
	}
	return fmt.Sprintf("%v (%T)", v, v)
}
