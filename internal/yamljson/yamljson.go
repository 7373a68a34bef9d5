// Package yamljson turns a YAML tree into the values a JSON Schema
// validates, and keeps where each value is (by JSON pointer), so that a
// schema's complaint can be reported at its line and column. Test files
// and study files are read through it.
package yamljson

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Convert returns n as JSON values: mappings with string keys, numbers as
// float64, NaN and infinities as text (JSON has none). pos receives the
// line and column of each value by its JSON pointer; a mapping's entries
// are placed at their keys, since a property that is not allowed has
// nothing but its key. what names the kind of file in the error about
// merge keys (<<), which are not supported.
func Convert(n *yaml.Node, what string, pos map[string][2]int) (any, error) {
	return convert(n, "", what, pos)
}

func convert(n *yaml.Node, ptr, what string, pos map[string][2]int) (any, error) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	pos[ptr] = [2]int{n.Line, n.Column}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return convert(n.Content[0], ptr, what, pos)
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" {
				return nil, fmt.Errorf("line %d: merge keys (<<) are not supported in %s", k.Line, what)
			}
			p := ptr + "/" + strings.ReplaceAll(strings.ReplaceAll(k.Value, "~", "~0"), "/", "~1")
			val, err := convert(v, p, what, pos)
			if err != nil {
				return nil, err
			}
			m[k.Value] = val
			pos[p] = [2]int{k.Line, k.Column}
		}
		return m, nil
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := convert(c, ptr+"/"+strconv.Itoa(i), what, pos)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	return Value(v), nil
}

// Value converts what YAML decodes into what JSON Schema validates: whole
// numbers as float64, mappings with string keys.
func Value(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return fmt.Sprint(x)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = Value(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = Value(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Value(e)
		}
		return out
	}
	return v
}
