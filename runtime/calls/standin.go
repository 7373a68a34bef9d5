package calls

import (
	"encoding/json"
	"fmt"
	"regexp/syntax"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// StandIn is a reply of the shape a call expects, made without a model:
// text for a text reply, a JSON value its schema accepts, a match of its
// regular expression, its tags. label (e.g. "reply of a to answer, round
// 2") is the text it puts where a model would write prose, so that a prompt
// quoting the reply shows what it stands for.
func StandIn(shape kit.Shape, label string) string {
	return standIn(shape, label, false, false)
}

// StandInLong is StandIn with every list as long as its schema allows, up
// to three items, rather than as short: the other end of the replies a
// schema accepts.
func StandInLong(shape kit.Shape, label string) string {
	return standIn(shape, label, true, false)
}

// StandInOne is StandIn with every list one item long where its schema
// allows (else as short as allowed): between the two ends, where a list
// read with others of their own lengths (a score per proposal) is shorter
// than them but not empty.
func StandInOne(shape kit.Shape, label string) string {
	return standIn(shape, label, false, true)
}

func standIn(shape kit.Shape, label string, long, one bool) string {
	text := "<" + label + ">"
	switch shape.Format {
	case "json":
		var schema any
		if len(shape.Schema) > 0 {
			_ = json.Unmarshal(shape.Schema, &schema)
		}
		g := jsonGen{root: schema, long: long, one: one, untypedSeen: new(int)}
		v := fitSchema(shape.Schema, g.value(schema, text, 0))
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return "{}"
		}
		return strings.TrimSpace(b.String())
	case "regex":
		re, err := syntax.Parse(shape.Pattern, syntax.Perl)
		if err != nil {
			return text
		}
		return text + "\n" + regexStandIn(re.Simplify(), text)
	case "tags":
		var b strings.Builder
		for _, t := range shape.Tags {
			v := t.Value
			if v == "" {
				v = text
			}
			fmt.Fprintf(&b, "<%s>%s</%s>\n", t.Name, v, t.Name)
		}
		if b.Len() == 0 {
			return text
		}
		return strings.TrimRight(b.String(), "\n")
	}
	return text
}

// maxStandInDepth bounds how deep a schema is followed.
const maxStandInDepth = 12

// jsonGen makes values a schema accepts; root resolves local $refs.
type jsonGen struct {
	root any
	// long makes lists up to three items long, not as short as allowed.
	long bool
	// one makes lists one item long where their schema allows.
	one bool
	// untypedSeen counts the untyped parts a long reply has made so far.
	untypedSeen *int
}

// resolve follows a local reference ("#/$defs/name", "#/definitions/x").
func (g jsonGen) resolve(ref string) any {
	path, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	cur := g.root
	for _, part := range strings.Split(path, "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		cur = m[part]
	}
	return cur
}

// alternative is the schema s with its anyOf or oneOf (key) replaced by
// the alternative alt: alt's keywords over s's (required lists joined). An
// alternative that only
// names required properties of an object whose properties are all given
// (it has no required list of its own) is met as it is, so it is dropped;
// an alternative of an otherwise empty schema is the alternative.
func (g jsonGen) alternative(s map[string]any, key string, alt any) any {
	a, ok := alt.(map[string]any)
	if !ok {
		return alt
	}
	merged := map[string]any{}
	for k, v := range s {
		if k != key {
			merged[k] = v
		}
	}
	_, props := s["properties"]
	_, required := s["required"]
	if _, onlyRequired := a["required"]; onlyRequired && len(a) == 1 && props && !required {
		return merged
	}
	for k, v := range a {
		merged[k] = v
	}
	if outer, ok := s["required"].([]any); ok {
		if inner, ok := a["required"].([]any); ok {
			merged["required"] = append(append([]any(nil), outer...), inner...)
		}
	}
	return merged
}

// value is a value the schema accepts, as small as it allows: every
// required property (and, for an object with no required ones, every
// property), the least number of list items, the lowest number in range.
func (g jsonGen) value(schema any, text string, depth int) any {
	s, ok := schema.(map[string]any)
	if !ok || depth > maxStandInDepth {
		return g.untyped(text, depth)
	}
	if ref, ok := s["$ref"].(string); ok {
		if target := g.resolve(ref); target != nil {
			return g.value(target, text, depth+1)
		}
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[key].([]any); ok && len(alts) > 0 {
			return g.value(g.alternative(s, key, alts[0]), text, depth+1)
		}
	}
	if all, ok := s["allOf"].([]any); ok && len(all) > 0 {
		merged := map[string]any{}
		for _, part := range all {
			if m, ok := part.(map[string]any); ok {
				for k, v := range m {
					merged[k] = v
				}
			}
		}
		for k, v := range s {
			if k != "allOf" {
				merged[k] = v
			}
		}
		return g.value(merged, text, depth+1)
	}
	ty := s["type"]
	if list, ok := ty.([]any); ok {
		ty = nil
		for _, t := range list {
			if t != "null" {
				ty = t
				break
			}
		}
	}
	if ty == nil {
		if _, ok := s["properties"]; ok {
			ty = "object"
		} else if _, ok := s["items"]; ok {
			ty = "array"
		}
	}
	switch ty {
	case "string":
		out := text
		if n, ok := s["maxLength"].(float64); ok && len([]rune(out)) > int(n) {
			out = string([]rune(out)[:max(0, int(n))])
		}
		if n, ok := s["minLength"].(float64); ok {
			for len([]rune(out)) < int(n) {
				out += "."
			}
		}
		return out
	case "integer", "number":
		lo := 0.0
		if m, ok := s["minimum"].(float64); ok {
			lo = m
		}
		if m, ok := s["exclusiveMinimum"].(float64); ok {
			lo = m + 1
		}
		if m, ok := s["maximum"].(float64); ok && lo > m {
			lo = m
		}
		if ty == "integer" {
			return int64(lo)
		}
		return lo
	case "boolean":
		return false
	case "null":
		return nil
	case "array":
		n := 0
		if m, ok := s["minItems"].(float64); ok {
			n = int(m)
		}
		if g.long && n < 3 {
			n = 3
			if m, ok := s["maxItems"].(float64); ok && int(m) < n {
				n = max(int(m), 0)
			}
		}
		if g.one && n < 1 {
			n = 1
			if m, ok := s["maxItems"].(float64); ok && int(m) < n {
				n = max(int(m), 0)
			}
		}
		// The first items follow prefixItems, the others items (none
		// when items is false: a closed tuple).
		prefix, _ := s["prefixItems"].([]any)
		if s["items"] == false && n > len(prefix) {
			n = len(prefix)
		}
		out := make([]any, n)
		for i := range out {
			item := s["items"]
			if i < len(prefix) {
				item = prefix[i]
			}
			out[i] = g.value(item, fmt.Sprintf("%s %d", text[:len(text)-1], i+1)+">", depth+1)
		}
		return out
	case "object":
		props, _ := s["properties"].(map[string]any)
		var names []string
		if req, ok := s["required"].([]any); ok && len(req) > 0 {
			for _, r := range req {
				if n, ok := r.(string); ok {
					names = append(names, n)
				}
			}
		} else {
			for n := range props {
				names = append(names, n)
			}
			sort.Strings(names)
		}
		out := map[string]any{}
		for _, n := range names {
			out[n] = g.value(props[n], text, depth+1)
		}
		return out
	}
	return g.untyped(text, depth)
}

// untyped stands in for a part of a reply its schema leaves untyped (an
// item or property with no type, or none): text in the shortest replies,
// and in the longest a number and text in turn (a number first), so that
// what a model may put there is tried as both kinds, alone and mixed in
// one list, and an expression that works for one only (sorting or
// comparing such parts with typed ones or each other) fails on some paths,
// which validate warns of. The reply as a whole keeps its label.
func (g jsonGen) untyped(text string, depth int) any {
	if g.long && depth > 0 && g.untypedSeen != nil {
		*g.untypedSeen++
		if *g.untypedSeen%2 == 1 {
			return int64(depth)
		}
	}
	return text
}

// regexStandIn is a string the expression matches: the first alternative,
// the least repetition, the first character of a class (a letter or digit
// when the class has one); captures that accept any text get the label.
func regexStandIn(re *syntax.Regexp, text string) string {
	switch re.Op {
	case syntax.OpLiteral:
		return string(re.Rune)
	case syntax.OpCharClass:
		return string(classRune(re.Rune))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return "x"
	case syntax.OpCapture:
		if accepts(re.Sub[0], text) {
			return text
		}
		return regexStandIn(re.Sub[0], text)
	case syntax.OpStar, syntax.OpQuest:
		return ""
	case syntax.OpPlus:
		return regexStandIn(re.Sub[0], text)
	case syntax.OpRepeat:
		var b strings.Builder
		for i := 0; i < re.Min; i++ {
			b.WriteString(regexStandIn(re.Sub[0], text))
		}
		return b.String()
	case syntax.OpConcat:
		var b strings.Builder
		for _, sub := range re.Sub {
			b.WriteString(regexStandIn(sub, text))
		}
		return b.String()
	case syntax.OpAlternate:
		return regexStandIn(re.Sub[0], text)
	}
	// Empty matches, anchors and word boundaries add no text.
	return ""
}

// accepts reports whether re, a capture's body, takes text as it is: a
// class or any character, repeated (like [^}]* or .+).
func accepts(re *syntax.Regexp, text string) bool {
	if re.Op != syntax.OpStar && re.Op != syntax.OpPlus {
		return false
	}
	for _, r := range text {
		if !runeIn(re.Sub[0], r) {
			return false
		}
	}
	return true
}

func runeIn(re *syntax.Regexp, r rune) bool {
	switch re.Op {
	case syntax.OpAnyChar:
		return true
	case syntax.OpAnyCharNotNL:
		return r != '\n'
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if r >= re.Rune[i] && r <= re.Rune[i+1] {
				return true
			}
		}
	}
	return false
}

// classRune picks a rune of a character class, preferring a letter or digit.
func classRune(ranges []rune) rune {
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r < ranges[i]+128; r++ {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return r
			}
		}
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r < ranges[i]+128; r++ {
			if unicode.IsPrint(r) && r != '\n' {
				return r
			}
		}
	}
	if len(ranges) > 0 {
		return ranges[0]
	}
	return 'x'
}

// compiledStandInSchemas caches the schemas stand-ins are fitted to.
var compiledStandInSchemas sync.Map // string -> *jsonschema.Schema (nil: does not compile)

// fitSchema fits a stand-in to its schema where the keyword-by-keyword
// build above missed: it leaves out of an object the properties the
// schema refuses there and does not require, one at a time, while that
// removes failures (an optional property no value satisfies, such as
// `enum: [1, 2]` beside a $ref to an object). A stand-in the schema
// refuses would make a path check report a failure no real reply has.
func fitSchema(raw json.RawMessage, v any) any {
	if len(raw) == 0 {
		return v
	}
	c, ok := compiledStandInSchemas.Load(string(raw))
	if !ok {
		sch, err := spec.CompileJSONSchema("stand-in", raw)
		if err != nil {
			sch = nil
		}
		c, _ = compiledStandInSchemas.LoadOrStore(string(raw), sch)
	}
	sch, _ := c.(*jsonschema.Schema)
	if sch == nil {
		return v
	}
	fails := failingAt(sch, v)
	for try := 0; try < 32 && len(fails) > 0; try++ {
		improved := false
		for _, loc := range fails {
			segs := strings.Split(strings.TrimPrefix(loc, "/"), "/")
			// from the deepest property to the top one
			for n := len(segs); n >= 1 && !improved; n-- {
				parent, ok := lookup(v, segs[:n-1])
				obj, isObj := parent.(map[string]any)
				if !ok || !isObj {
					continue
				}
				key := strings.ReplaceAll(strings.ReplaceAll(segs[n-1], "~1", "/"), "~0", "~")
				old, had := obj[key]
				if !had {
					continue
				}
				delete(obj, key)
				if after := failingAt(sch, v); len(after) < len(fails) {
					fails, improved = after, true
					break
				}
				obj[key] = old
			}
			if improved {
				break
			}
		}
		if !improved {
			break
		}
	}
	return v
}

// failingAt is where the schema refuses v: the instance locations of its
// innermost validation errors (nil when it accepts v).
func failingAt(sch *jsonschema.Schema, v any) []string {
	err := sch.Validate(roundTrip(v))
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []string{""}
	}
	seen := map[string]bool{}
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			if !seen[e.InstanceLocation] {
				seen[e.InstanceLocation] = true
				out = append(out, e.InstanceLocation)
			}
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.Strings(out)
	return out
}

// roundTrip is v as the validator sees a reply: decoded JSON.
func roundTrip(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(data, &out) != nil {
		return v
	}
	return out
}

// lookup follows an instance location's segments into v.
func lookup(v any, segs []string) (any, bool) {
	cur := v
	for _, s := range segs {
		if s == "" {
			continue
		}
		s = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			cur = x[s]
		case []any:
			i := 0
			if _, err := fmt.Sscan(s, &i); err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
