package spec

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/spec/syntax"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"
)

// This file checks that an output's JSON Schema can be satisfied at all:
// `{not: {}}`, a minLength above the maxLength, a property required of an
// object that admits no other properties than ones it lists without it. A
// reply schema no reply can satisfy makes every call of the node a repair
// and then a failure, after the calls were paid for. Contradictions are
// named at the keyword; where there is none, an instance is built and
// validated against the compiled schema, and handed back so that the kind
// can run it through its own reply parser.

// satisfiability is one schema checked: where its keywords are, and what
// the check found.
type satisfiability struct {
	n    *NodeContext
	root any
	loc  *syntax.Located // nil for a library's schema
	at   syntax.Pos      // where the schema is named (schema_ref), for loc == nil
	name string          // the library schema's name, for loc == nil
	// seen guards $ref cycles: pointer and whether it was mandatory.
	seen     map[string]bool
	bad      bool
	lastLine int
	// quiet checks without reporting (the builder choosing a branch).
	quiet bool
}

// SatisfiableSchema checks the output schema written at node (inline), or
// named at ref (schema_ref, doc being its JSON), for contradictions: one a
// reply cannot avoid is an error at its keyword, one only in an optional
// part (an anyOf branch, a property that may be left out) a warning. It
// returns an instance the compiled schema accepts, or ok false when there
// is none (reported) or none was found (a warning).
func (n *NodeContext) SatisfiableSchema(node *yaml.Node, ref syntax.Str, doc json.RawMessage, sch *jsonschema.Schema) (instance any, ok bool) {
	if sch == nil || doc == nil {
		return nil, false
	}
	var root any
	if json.Unmarshal(doc, &root) != nil {
		return nil, false
	}
	s := &satisfiability{n: n, root: root, seen: map[string]bool{}}
	if node != nil {
		s.loc = syntax.YAMLToJSON(&syntax.Reporter{Src: n.c.r.Src}, node)
		s.at = syntax.NodePos(node)
	} else {
		s.at, s.name = ref.Pos, ref.V
	}
	if s.check("", root, true, 0) {
		return nil, false
	}
	inst := s.build(root, 0)
	if err := sch.Validate(inst); err != nil {
		// The merged instance fails (a oneOf its first live branch does
		// not decide, say): a value of the set the types and values
		// admit may do.
		if set, _ := s.values(root, nil, 0); !set.empty() {
			if w, ok := set.witness(); ok && sch.Validate(w) == nil {
				return w, true
			}
		}
		data, _ := json.Marshal(inst)
		n.Warnf(s.at, "validate could not build a reply the output schema accepts (tried %s: %s); check that one exists", syntax.Clip(string(data), 80), schemaErrorMessage(err))
		return nil, false
	}
	return inst, true
}

// report names a contradiction at the keyword ptr points to: an error when
// every reply meets it, else a warning.
func (s *satisfiability) report(ptr string, mandatory bool, format string, args ...any) {
	if s.quiet {
		return
	}
	msg := fmt.Sprintf(format, args...)
	pos := s.at
	where := "output schema"
	if s.loc != nil {
		if v := s.loc.Values[ptr]; v != nil {
			pos = syntax.NodePos(v)
		}
		if ptr != "" {
			where += " " + syntax.DescribePointer(ptr)
		}
	} else {
		where = fmt.Sprintf("output schema %s", s.name)
		if ptr != "" {
			where += " at " + ptr
		}
	}
	if mandatory {
		s.bad = true
		s.n.Errorf(pos, "%s: %s; no reply can satisfy it", where, msg)
		return
	}
	s.n.Warnf(pos, "%s: %s; no value can be given there", where, msg)
}

// pos is the position of the value at ptr, for messages that name a
// second keyword.
func (s *satisfiability) line(ptr string) string {
	if s.loc != nil {
		if v := s.loc.Values[ptr]; v != nil && v.Line != s.lastLine {
			return fmt.Sprintf(" (line %d)", v.Line)
		}
	}
	return ""
}

// on sets the line the next message is reported on, for line.
func (s *satisfiability) on(ptr string) *satisfiability {
	s.lastLine = 0
	if s.loc != nil {
		if v := s.loc.Values[ptr]; v != nil {
			s.lastLine = v.Line
		}
	}
	return s
}

// types is the set of JSON types a schema's type keyword allows, nil for
// any.
func types(m map[string]any) []string {
	switch t := m["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// jsonType is the JSON type of a decoded value; numbers with no fraction
// are integers.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

// allows reports whether a type set admits a value of JSON type t.
func allows(ts []string, t string) bool {
	if ts == nil {
		return true
	}
	return slices.Contains(ts, t) || (t == "integer" && slices.Contains(ts, "number"))
}

// only reports whether a type set admits nothing outside family.
func only(ts []string, family ...string) bool {
	if ts == nil {
		return false
	}
	for _, t := range ts {
		if !slices.Contains(family, t) {
			return false
		}
	}
	return true
}

func num(m map[string]any, k string) (float64, bool) {
	f, ok := m[k].(float64)
	return f, ok
}

// check reports the contradictions of the schema v at ptr and whether it
// admits no value. mandatory says whether every reply must meet it.
func (s *satisfiability) check(ptr string, v any, mandatory bool, depth int) (unsat bool) {
	if depth > 64 {
		return false
	}
	switch x := v.(type) {
	case bool:
		if !x && ptr != "" {
			s.report(ptr, mandatory, "false admits no value")
		}
		return !x
	case map[string]any:
		return s.checkObject(ptr, x, mandatory, depth)
	}
	return false
}

func (s *satisfiability) checkObject(ptr string, m map[string]any, mandatory bool, depth int) (unsat bool) {
	key := ptr + "\x00" + strconv.FormatBool(mandatory)
	if s.seen[key] {
		return false
	}
	s.seen[key] = true
	fail := func(kw string, format string, args ...any) {
		s.report(ptr+"/"+kw, mandatory, format, args...)
		unsat = true
	}
	ts := types(m)
	if nv, ok := m["not"]; ok {
		if b, isBool := nv.(bool); (isBool && b) || isEmptyMap(nv) {
			fail("not", "`not: %s` rejects every value", map[bool]string{true: "{}", false: "true"}[isEmptyMap(nv)])
		}
	}
	if c, ok := m["const"]; ok && !allows(ts, jsonType(c)) {
		fail("const", "const %s is %s, but type allows only %s", compactJSON(c), syntax.Article(jsonType(c)), strings.Join(ts, ", "))
	}
	if e, ok := m["enum"].([]any); ok {
		fit := 0
		for _, v := range e {
			if allows(ts, jsonType(v)) {
				fit++
			}
		}
		if fit == 0 {
			if len(e) == 0 {
				fail("enum", "an empty enum admits no value")
			} else {
				fail("enum", "no enum value is of the type the schema allows (%s)", strings.Join(ts, ", "))
			}
		}
	}
	// Bounds constrain only values of their family; a schema that allows
	// other types is satisfied by those, so the clash is then a warning.
	bounds := func(family []string, lowKw, highKw string, strictLow, strictHigh bool) {
		lo, okLo := num(m, lowKw)
		hi, okHi := num(m, highKw)
		if !okLo || !okHi {
			return
		}
		empty := lo > hi || (lo == hi && (strictLow || strictHigh))
		if !empty {
			return
		}
		msg := fmt.Sprintf("%s %v is above %s %v%s", lowKw, lo, highKw, hi, s.on(ptr+"/"+lowKw).line(ptr+"/"+highKw))
		if lo == hi {
			msg = fmt.Sprintf("%s %v and %s %v%s leave no value between them", lowKw, lo, highKw, hi, s.on(ptr+"/"+lowKw).line(ptr+"/"+highKw))
		}
		if only(ts, family...) {
			fail(lowKw, "%s", msg)
		} else {
			s.report(ptr+"/"+lowKw, false, "%s (for %s values)", msg, family[0])
		}
	}
	for _, lk := range []string{"minimum", "exclusiveMinimum"} {
		for _, hk := range []string{"maximum", "exclusiveMaximum"} {
			bounds([]string{"number", "integer"}, lk, hk, lk == "exclusiveMinimum", hk == "exclusiveMaximum")
		}
	}
	if only(ts, "integer") && !unsat {
		if lo, hi, ok := integerRange(m); ok && lo > hi {
			kw := "minimum"
			if _, ok := m[kw]; !ok {
				kw = "exclusiveMinimum"
			}
			fail(kw, "no integer lies in the range the bounds give")
		}
	}
	bounds([]string{"string"}, "minLength", "maxLength", false, false)
	bounds([]string{"array"}, "minItems", "maxItems", false, false)
	bounds([]string{"object"}, "minProperties", "maxProperties", false, false)
	bounds([]string{"array"}, "minContains", "maxContains", false, false)

	props, _ := m["properties"].(map[string]any)
	required := []string{}
	if r, ok := m["required"].([]any); ok {
		for _, e := range r {
			if name, ok := e.(string); ok {
				required = append(required, name)
			}
		}
	}
	if mx, ok := num(m, "maxProperties"); ok && float64(len(required)) > mx && only(ts, "object") {
		fail("maxProperties", "maxProperties %v is less than the %d required properties", mx, len(required))
	}
	closed := m["additionalProperties"] == false || isFalseSchema(m["additionalProperties"])
	var patterns []*regexp.Regexp
	if pp, ok := m["patternProperties"].(map[string]any); ok {
		for p := range pp {
			if re, err := regexp.Compile(p); err == nil {
				patterns = append(patterns, re)
			}
		}
	}
	objectOnly := only(ts, "object")
	for i, name := range required {
		at := fmt.Sprintf("%s/required/%d", ptr, i)
		ps, listed := props[name]
		matched := slices.ContainsFunc(patterns, func(re *regexp.Regexp) bool { return re.MatchString(name) })
		switch {
		case closed && !listed && !matched:
			if objectOnly {
				s.report(at, mandatory, "property %q is required, but additionalProperties: false%s admits only %s", name, s.on(at).line(ptr+"/additionalProperties"), listNames(props))
				unsat = true
			} else {
				s.report(at, false, "property %q is required, but additionalProperties: false admits only %s (for object values)", name, listNames(props))
			}
		case listed:
			if s.check(ptr+"/properties/"+syntax.EscapePointer(name), ps, mandatory && objectOnly, depth+1) && objectOnly {
				unsat = true
			}
		}
	}
	for name, ps := range props {
		if !slices.Contains(required, name) {
			s.check(ptr+"/properties/"+syntax.EscapePointer(name), ps, false, depth+1)
		}
	}
	if all, ok := m["allOf"].([]any); ok {
		for i, b := range all {
			if s.check(fmt.Sprintf("%s/allOf/%d", ptr, i), b, mandatory, depth+1) {
				unsat = true
			}
		}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		branches, ok := m[kw].([]any)
		if !ok || len(branches) == 0 {
			continue
		}
		dead := 0
		for i, b := range branches {
			if s.check(fmt.Sprintf("%s/%s/%d", ptr, kw, i), b, false, depth+1) || s.requiresUnsatisfiable(ptr, props, b, depth) {
				dead++
			}
		}
		if dead == len(branches) {
			fail(kw, "every branch of %s admits no value", kw)
		}
	}
	minItems, _ := num(m, "minItems")
	if it, ok := m["items"]; ok {
		arrayOnly := only(ts, "array")
		prefix, _ := m["prefixItems"].([]any)
		need := minItems > float64(len(prefix))
		if s.check(ptr+"/items", it, mandatory && arrayOnly && need, depth+1) && arrayOnly && need {
			unsat = true
		}
	}
	if c, ok := m["contains"]; ok {
		need := true
		if mc, ok := num(m, "minContains"); ok && mc == 0 {
			need = false
		}
		if s.check(ptr+"/contains", c, mandatory && only(ts, "array") && need, depth+1) && only(ts, "array") && need {
			unsat = true
		}
		// The item contains asks for must also be one items admits.
		it, _ := m["items"].(map[string]any)
		cm, _ := c.(map[string]any)
		if need && it != nil && cm != nil && m["prefixItems"] == nil && only(ts, "array") {
			its, cts := types(it), types(cm)
			if its != nil && cts != nil && !slices.ContainsFunc(cts, func(t string) bool { return allows(its, t) || t == "number" && allows(its, "integer") }) {
				s.report(ptr+"/contains", mandatory, "contains asks for an item of type %s, but items admits only %s", strings.Join(cts, " or "), strings.Join(its, ", "))
				if mandatory {
					unsat = true
				}
			}
		}
	}
	if r, ok := m["$ref"].(string); ok && strings.HasPrefix(r, "#") {
		target := strings.TrimPrefix(r, "#")
		if t, ok := resolvePointer(s.root, target); ok && s.check(target, t, mandatory, depth+1) {
			unsat = true
		}
	}
	if !unsat {
		// Keywords each satisfiable alone may admit no value together
		// (schemaset.go): named at the one that empties the set.
		if set, parts := s.values(m, nil, depth); set.empty() {
			acc := everything()
			var said []string
			for _, p := range parts {
				said = append(said, p.kw+": "+p.set.describe())
				if acc = intersect(acc, p.set); acc.empty() {
					fail(p.kw, "its keywords admit no value together (%s)", strings.Join(said, "; "))
					break
				}
			}
		}
	}
	return unsat
}

// requiresUnsatisfiable reports a branch (of an anyOf or oneOf at ptr)
// that requires a property whose schema in props, the properties of the
// object around the branch, admits no value: `anyOf: [{required: [a]},
// {required: [b]}]` over properties a and b that both admit nothing is
// unsatisfiable, though each branch alone is not. It checks quietly: the
// properties report their own contradictions where they are written.
func (s *satisfiability) requiresUnsatisfiable(ptr string, props map[string]any, branch any, depth int) bool {
	b, ok := branch.(map[string]any)
	if !ok {
		return false
	}
	names, _ := b["required"].([]any)
	for _, n := range names {
		name, ok := n.(string)
		if !ok {
			continue
		}
		ps, listed := props[name]
		if !listed {
			continue
		}
		q := &satisfiability{n: s.n, root: s.root, seen: map[string]bool{}, quiet: true}
		if q.check(ptr+"/properties/"+syntax.EscapePointer(name), ps, true, depth+1) {
			return true
		}
	}
	return false
}

// integerRange is the integers a schema's bounds leave, when both are set.
func integerRange(m map[string]any) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(-1), math.Inf(1)
	if v, ok := num(m, "minimum"); ok {
		lo = math.Ceil(v)
	}
	if v, ok := num(m, "exclusiveMinimum"); ok {
		lo = math.Max(lo, math.Floor(v)+1)
	}
	if v, ok := num(m, "maximum"); ok {
		hi = math.Floor(v)
	}
	if v, ok := num(m, "exclusiveMaximum"); ok {
		hi = math.Min(hi, math.Ceil(v)-1)
	}
	return lo, hi, !math.IsInf(lo, 0) && !math.IsInf(hi, 0)
}

func isEmptyMap(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) == 0
}

// isFalseSchema reports a schema that admits nothing: false, {not: {}}.
func isFalseSchema(v any) bool {
	if b, ok := v.(bool); ok {
		return !b
	}
	m, ok := v.(map[string]any)
	return ok && len(m) == 1 && (isEmptyMap(m["not"]) || m["not"] == true)
}

func listNames(props map[string]any) string {
	if len(props) == 0 {
		return "no property"
	}
	names := sortedKeys(props)
	for i, n := range names {
		names[i] = strconv.Quote(n)
	}
	return strings.Join(names, ", ")
}

func compactJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return syntax.Clip(string(data), 40)
}

// resolvePointer finds the value at a JSON pointer ("/$defs/x") in doc.
func resolvePointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	at := doc
	for _, seg := range strings.Split(ptr[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch x := at.(type) {
		case map[string]any:
			v, ok := x[seg]
			if !ok {
				return nil, false
			}
			at = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			at = x[i]
		default:
			return nil, false
		}
	}
	return at, true
}
