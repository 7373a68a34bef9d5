package lsp

import (
	"encoding/json"
	"sort"
	"strings"
)

// schema is a JSON Schema document read as plain values, to find the
// keys and their descriptions at a path of a YAML document.
type schema struct {
	root map[string]any
}

func newSchema(data []byte) *schema {
	var root map[string]any
	if json.Unmarshal(data, &root) != nil {
		root = map[string]any{}
	}
	return &schema{root: root}
}

// deref follows $ref within the document.
func (s *schema) deref(m map[string]any) map[string]any {
	for range 20 {
		ref, ok := m["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#/") {
			return m
		}
		var cur any = s.root
		for _, p := range strings.Split(ref[2:], "/") {
			obj, ok := cur.(map[string]any)
			if !ok {
				return m
			}
			cur = obj[p]
		}
		next, ok := cur.(map[string]any)
		if !ok {
			return m
		}
		m = next
	}
	return m
}

// expand is m with the branches it allows (anyOf, oneOf, allOf, and the
// then of an if on kind: when the kind is kind).
func (s *schema) expand(m map[string]any, kind string) []map[string]any {
	m = s.deref(m)
	out := []map[string]any{m}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		list, _ := m[k].([]any)
		for _, e := range list {
			sub, ok := e.(map[string]any)
			if !ok {
				continue
			}
			if cond, ok := sub["if"].(map[string]any); ok {
				then, ok := sub["then"].(map[string]any)
				props, _ := cond["properties"].(map[string]any)
				kp, _ := props["kind"].(map[string]any)
				if ok && kind != "" && kp["const"] == kind {
					out = append(out, s.expand(then, kind)...)
				}
				continue
			}
			out = append(out, s.expand(sub, kind)...)
		}
	}
	return out
}

// at is the schemas a value at path may have: path is keys and "[]" for a
// list's element; kindOf gives the kind of a node by its id.
func (s *schema) at(path []string, kindOf func(string) string) []map[string]any {
	cur := s.expand(s.root, "")
	for i, p := range path {
		kind := ""
		if i == 1 && path[0] == "nodes" && kindOf != nil {
			kind = kindOf(p)
		}
		var next []map[string]any
		for _, c := range cur {
			if p == "[]" {
				if items, ok := c["items"].(map[string]any); ok {
					next = append(next, s.expand(items, kind)...)
				}
				continue
			}
			props, _ := c["properties"].(map[string]any)
			if sub, ok := props[p].(map[string]any); ok {
				next = append(next, s.expand(sub, kind)...)
			} else if add, ok := c["additionalProperties"].(map[string]any); ok {
				next = append(next, s.expand(add, kind)...)
			}
		}
		// A list of one form or the other: a step given as a list's
		// element is also the element's schema.
		if len(next) == 0 && p != "[]" {
			for _, c := range cur {
				if items, ok := c["items"].(map[string]any); ok {
					for _, e := range s.expand(items, kind) {
						props, _ := e["properties"].(map[string]any)
						if sub, ok := props[p].(map[string]any); ok {
							next = append(next, s.expand(sub, kind)...)
						}
					}
				}
			}
		}
		cur = next
	}
	return cur
}

// property is a key a schema allows, with its description.
type property struct {
	name, doc string
}

// properties are the keys the schemas allow, sorted, each once.
func (s *schema) properties(list []map[string]any) []property {
	seen := map[string]int{}
	var out []property
	for _, c := range list {
		props, _ := c["properties"].(map[string]any)
		for name, v := range props {
			sub, _ := v.(map[string]any)
			doc, _ := s.deref(sub)["description"].(string)
			if d, ok := sub["description"].(string); ok {
				doc = d
			}
			if i, ok := seen[name]; ok {
				if out[i].doc == "" {
					out[i].doc = doc
				}
				continue
			}
			seen[name] = len(out)
			out = append(out, property{name: name, doc: doc})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// describe is the description and the allowed values of the schemas.
func (s *schema) describe(list []map[string]any) (doc string, enum []string) {
	seen := map[string]bool{}
	for _, c := range list {
		if d, ok := c["description"].(string); ok && doc == "" {
			doc = d
		}
		vals, _ := c["enum"].([]any)
		if v, ok := c["const"]; ok {
			vals = append(vals, v)
		}
		for _, v := range vals {
			if str, ok := v.(string); ok && !seen[str] {
				seen[str] = true
				enum = append(enum, str)
			}
		}
	}
	return doc, enum
}
