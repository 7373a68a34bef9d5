package spec

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// This file decides, for the part of a JSON Schema that speaks of types
// and values (type, const, enum, allOf, anyOf, oneOf, not, $ref), which
// values it admits, so that keywords that contradict one another across
// branches (`allOf: [{type: array}, {type: boolean}]`, a oneOf whose two
// branches admit the same values and nothing else, `not` of what type
// allows) are found, whatever their nesting.
//
// A schema denotes a set of values kept as: the JSON types of which it
// admits every value but a few (infinite types: integer, fraction, string,
// array, object; null and booleans are always listed), and the few values
// whose membership differs from their type's (consts, enum members, null,
// true, false). Those few are decided one by one, so allOf (intersection),
// anyOf (union), oneOf (exactly one) and not (complement) are exact over
// schemas made only of the keywords above. Other keywords (minLength,
// properties, items...) narrow a schema in ways this does not follow: such
// a schema is taken as admitting every value of its types (more than it
// does: no false refusal), and where that would make the result smaller
// than the truth (under not, or a oneOf branch) the result is taken as
// admitting everything.

// valueSet is the set of values a schema admits: every value of the types
// in all whose canonical JSON is not in the exceptions, and the exceptions
// whose membership is true.
type valueSet struct {
	all typeBits
	// in decides the listed values (by canonical JSON): member or not,
	// whatever their type's bit says.
	in map[string]bool
	// exact is false when keywords outside this analysis narrow the set.
	exact bool
}

type typeBits uint8

const (
	bitInt typeBits = 1 << iota
	bitFrac
	bitString
	bitArray
	bitObject
	infiniteTypes = bitInt | bitFrac | bitString | bitArray | bitObject
)

// finiteValues are the values of the finite types, always listed.
var finiteValues = []string{"null", "true", "false"}

func everything() valueSet {
	s := valueSet{all: infiniteTypes, in: map[string]bool{}, exact: true}
	for _, v := range finiteValues {
		s.in[v] = true
	}
	return s
}

func nothing() valueSet { return valueSet{in: map[string]bool{}, exact: true} }

// bitOf is the type bit of a value's canonical JSON, 0 for the finite
// types.
func bitOf(canon string) typeBits {
	var v any
	if json.Unmarshal([]byte(canon), &v) != nil {
		return 0
	}
	switch x := v.(type) {
	case float64:
		if x == math.Trunc(x) {
			return bitInt
		}
		return bitFrac
	case string:
		return bitString
	case []any:
		return bitArray
	case map[string]any:
		return bitObject
	}
	return 0
}

// has reports whether the set holds the value of canonical JSON canon.
func (s valueSet) has(canon string) bool {
	if in, ok := s.in[canon]; ok {
		return in
	}
	b := bitOf(canon)
	return b != 0 && s.all&b != 0
}

// empty reports whether the set holds no value: no infinite type (less a
// finite number of values, it still holds some), no listed member.
func (s valueSet) empty() bool {
	if s.all != 0 {
		return false
	}
	for _, in := range s.in {
		if in {
			return false
		}
	}
	return true
}

// combine is the set whose members are decided by f over the members of
// sets, value by value.
func combine(sets []valueSet, bits func([]typeBits) typeBits, f func([]bool) bool) valueSet {
	out := valueSet{in: map[string]bool{}, exact: true}
	bs := make([]typeBits, len(sets))
	for i, s := range sets {
		bs[i] = s.all
		if !s.exact {
			out.exact = false
		}
	}
	out.all = bits(bs) & infiniteTypes
	keys := slices.Clone(finiteValues)
	for _, s := range sets {
		for k := range s.in {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	hs := make([]bool, len(sets))
	for _, k := range keys {
		for i, s := range sets {
			hs[i] = s.has(k)
		}
		in := f(hs)
		if b := bitOf(k); b == 0 || (out.all&b != 0) != in {
			out.in[k] = in
		}
	}
	return out
}

func intersect(sets ...valueSet) valueSet {
	return combine(sets, func(bs []typeBits) typeBits {
		r := infiniteTypes
		for _, b := range bs {
			r &= b
		}
		return r
	}, func(hs []bool) bool { return !slices.Contains(hs, false) })
}

func union(sets ...valueSet) valueSet {
	return combine(sets, func(bs []typeBits) typeBits {
		var r typeBits
		for _, b := range bs {
			r |= b
		}
		return r
	}, func(hs []bool) bool { return slices.Contains(hs, true) })
}

// exactlyOne is oneOf's set: the values exactly one of sets holds.
func exactlyOne(sets ...valueSet) valueSet {
	return combine(sets, func(bs []typeBits) typeBits {
		var once, more typeBits
		for _, b := range bs {
			more |= once & b
			once |= b
		}
		return once &^ more
	}, func(hs []bool) bool {
		n := 0
		for _, h := range hs {
			if h {
				n++
			}
		}
		return n == 1
	})
}

func complement(s valueSet) valueSet {
	return combine([]valueSet{s}, func(bs []typeBits) typeBits { return ^bs[0] }, func(hs []bool) bool { return !hs[0] })
}

// canonical is a value's JSON with sorted keys (encoding/json sorts map
// keys); numbers as JSON writes float64.
func canonical(v any) (string, bool) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	return string(data), true
}

// ofType is the set of values of a JSON type name.
func ofType(name string) valueSet {
	s := nothing()
	switch name {
	case "null":
		s.in["null"] = true
	case "boolean":
		s.in["true"], s.in["false"] = true, true
	case "integer":
		s.all = bitInt
	case "number":
		s.all = bitInt | bitFrac
	case "string":
		s.all = bitString
	case "array":
		s.all = bitArray
	case "object":
		s.all = bitObject
	default:
		return everything()
	}
	return s
}

func ofValues(vs []any) valueSet {
	s := nothing()
	for _, v := range vs {
		if c, ok := canonical(v); ok {
			s.in[c] = true
		} else {
			return everything() // not a value we can name: no claim
		}
	}
	return s
}

// typeLevel are the keywords the analysis follows exactly, or that do not
// narrow a schema's values.
var typeLevel = map[string]bool{
	"type": true, "const": true, "enum": true, "allOf": true, "anyOf": true, "oneOf": true, "not": true, "$ref": true,
	"$defs": true, "definitions": true, "title": true, "description": true, "$comment": true, "$schema": true, "$id": true,
	"examples": true, "default": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// part is one keyword's set, for messages.
type part struct {
	kw  string
	set valueSet
}

// values is the set of values the schema v admits (see above), with the
// sets of its keywords in the order they narrow it. refs are the $ref
// targets being followed (cycles admit everything).
func (s *satisfiability) values(v any, refs []string, depth int) (valueSet, []part) {
	switch x := v.(type) {
	case bool:
		if x {
			return everything(), nil
		}
		return nothing(), nil
	case map[string]any:
		if depth > 32 {
			return inexact(everything()), nil
		}
		var parts []part
		if ts, ok := x["type"]; ok {
			var sets []valueSet
			switch t := ts.(type) {
			case string:
				sets = append(sets, ofType(t))
			case []any:
				for _, e := range t {
					name, _ := e.(string)
					sets = append(sets, ofType(name))
				}
			}
			if len(sets) > 0 {
				parts = append(parts, part{"type", union(sets...)})
			}
		}
		if c, ok := x["const"]; ok {
			parts = append(parts, part{"const", ofValues([]any{c})})
		}
		if e, ok := x["enum"].([]any); ok {
			parts = append(parts, part{"enum", ofValues(e)})
		}
		if all, ok := x["allOf"].([]any); ok {
			for i, b := range all {
				bs, _ := s.values(b, refs, depth+1)
				parts = append(parts, part{fmt.Sprintf("allOf/%d", i), bs})
			}
		}
		for _, kw := range []string{"anyOf", "oneOf"} {
			bs, ok := x[kw].([]any)
			if !ok || len(bs) == 0 {
				continue
			}
			sets := make([]valueSet, len(bs))
			exact := true
			for i, b := range bs {
				sets[i], _ = s.values(b, refs, depth+1)
				exact = exact && sets[i].exact
			}
			switch {
			case kw == "anyOf":
				parts = append(parts, part{kw, union(sets...)})
			case exact:
				parts = append(parts, part{kw, exactlyOne(sets...)})
			default:
				// A branch narrowed by keywords not followed here may
				// admit values another does not: at most the union.
				parts = append(parts, part{kw, inexact(union(sets...))})
			}
		}
		if n, ok := x["not"]; ok {
			ns, _ := s.values(n, refs, depth+1)
			if ns.exact {
				parts = append(parts, part{"not", complement(ns)})
			} else {
				// the complement of more than the truth is less than
				// it: no claim
				parts = append(parts, part{"not", inexact(everything())})
			}
		}
		if r, ok := x["$ref"].(string); ok && strings.HasPrefix(r, "#") {
			target := strings.TrimPrefix(r, "#")
			if t, ok := resolvePointer(s.root, target); ok && !slices.Contains(refs, target) {
				rs, _ := s.values(t, append(slices.Clone(refs), target), depth+1)
				parts = append(parts, part{"$ref", rs})
			} else {
				parts = append(parts, part{"$ref", inexact(everything())})
			}
		}
		set := everything()
		for _, p := range parts {
			set = intersect(set, p.set)
		}
		for k := range x {
			if !typeLevel[k] {
				set.exact = false
			}
		}
		return set, parts
	}
	return inexact(everything()), nil
}

func inexact(s valueSet) valueSet {
	s.exact = false
	return s
}

// describe names a set's values for a message: its types, its values.
func (s valueSet) describe() string {
	var out []string
	names := []struct {
		b    typeBits
		name string
	}{{bitInt | bitFrac, "number"}, {bitInt, "integer"}, {bitFrac, "non-integer number"}, {bitString, "string"}, {bitArray, "array"}, {bitObject, "object"}}
	left := s.all
	for _, n := range names {
		if left&n.b == n.b {
			out = append(out, n.name)
			left &^= n.b
		}
	}
	var vals []string
	for k, in := range s.in {
		if in && (bitOf(k) == 0 || s.all&bitOf(k) == 0) {
			vals = append(vals, k)
		}
	}
	slices.Sort(vals)
	if i, j := slices.Index(vals, "false"), slices.Index(vals, "true"); i >= 0 && j >= 0 {
		vals = slices.DeleteFunc(vals, func(v string) bool { return v == "true" || v == "false" })
		out = append(out, "boolean")
	}
	if len(vals) > 4 {
		vals = append(vals[:4], "...")
	}
	if len(vals) > 0 {
		out = append(out, strings.Join(vals, ", "))
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, ", ")
}

// witness is a value the set holds, preferring an object, nil when it is
// empty: the builder's fallback when its merged instance fails.
func (s valueSet) witness() (any, bool) {
	generic := []struct {
		b     typeBits
		tries []any
	}{
		{bitObject, []any{map[string]any{}, map[string]any{"x": "x"}, map[string]any{"y": 1.0}}},
		{bitString, []any{"x", "", "y", "answer"}},
		{bitInt, []any{1.0, 0.0, 2.0, 3.0, -1.0}},
		{bitFrac, []any{0.5, 1.5, 2.5}},
		{bitArray, []any{[]any{}, []any{"x"}, []any{1.0}}},
	}
	for _, g := range generic {
		if s.all&g.b == 0 {
			continue
		}
		for _, v := range g.tries {
			if c, ok := canonical(v); ok && s.has(c) {
				return v, true
			}
		}
	}
	keys := make([]string, 0, len(s.in))
	for k, in := range s.in {
		if in {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		var v any
		if json.Unmarshal([]byte(k), &v) == nil {
			return v, true
		}
	}
	return nil, false
}
