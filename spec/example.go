package spec

import (
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
)

// build makes a value meant to satisfy the schema v: the first enum value
// or the const, else a value of the first type allowed that meets the
// bounds, with the required properties and the fewest items. allOf is
// merged in; of anyOf and oneOf the first branch is taken. The caller
// validates what comes out. Where a schema's type-and-value keywords
// (type, const, enum, allOf, anyOf, oneOf, not, $ref) are all it says and
// the merged value is not one they admit (a oneOf whose first live branch
// another also admits, a not), a value of the set they admit is taken
// (schemaset.go).
func (s *satisfiability) build(v any, depth int) any {
	inst := s.buildMerged(v, depth)
	if m, ok := v.(map[string]any); ok && depth <= 32 && composed(m) {
		if set, _ := s.values(m, nil, depth); set.exact && !set.empty() {
			if c, ok := canonical(inst); !ok || !set.has(c) {
				if w, ok := set.witness(); ok {
					return w
				}
			}
		}
	}
	return inst
}

// composed reports a schema that combines others or lists its values.
func composed(m map[string]any) bool {
	for _, k := range []string{"allOf", "anyOf", "oneOf", "not", "$ref", "enum", "const"} {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

func (s *satisfiability) buildMerged(v any, depth int) any {
	m, ok := v.(map[string]any)
	if !ok || depth > 32 {
		return "x"
	}
	if r, ok := m["$ref"].(string); ok && strings.HasPrefix(r, "#") {
		if t, ok := resolvePointer(s.root, strings.TrimPrefix(r, "#")); ok {
			merged := mergeSchemas(m, t)
			delete(merged, "$ref")
			return s.build(merged, depth+1)
		}
	}
	if all, ok := m["allOf"].([]any); ok {
		merged := m
		for _, b := range all {
			merged = mergeSchemas(merged, b)
		}
		delete(merged, "allOf")
		return s.build(merged, depth+1)
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if bs, ok := m[kw].([]any); ok && len(bs) > 0 {
			pick := bs[0]
			for _, b := range bs {
				if !s.admitsNothing(b) {
					pick = b
					break
				}
			}
			merged := mergeSchemas(m, pick)
			delete(merged, kw)
			return s.build(merged, depth+1)
		}
	}
	ts := types(m)
	if c, ok := m["const"]; ok {
		return c
	}
	if e, ok := m["enum"].([]any); ok {
		for _, v := range e {
			if allows(ts, jsonType(v)) {
				return v
			}
		}
	}
	t := ""
	if len(ts) > 0 {
		t = ts[0]
		if slices.Contains(ts, "object") {
			t = "object" // most replies are objects; prefer it when allowed
		}
	} else {
		switch {
		case m["properties"] != nil || m["required"] != nil || m["additionalProperties"] != nil:
			t = "object"
		case m["items"] != nil || m["prefixItems"] != nil || m["minItems"] != nil:
			t = "array"
		case m["minimum"] != nil || m["maximum"] != nil || m["exclusiveMinimum"] != nil || m["exclusiveMaximum"] != nil || m["multipleOf"] != nil:
			t = "number"
		default:
			t = "string"
		}
	}
	switch t {
	case "null":
		return nil
	case "boolean":
		return true
	case "integer", "number":
		return buildNumber(m, t == "integer")
	case "array":
		return s.buildArray(m, depth)
	case "object":
		return s.buildObject(m, depth)
	}
	return buildString(m)
}

func (s *satisfiability) buildObject(m map[string]any, depth int) any {
	out := map[string]any{}
	props, _ := m["properties"].(map[string]any)
	if r, ok := m["required"].([]any); ok {
		for _, e := range r {
			name, _ := e.(string)
			ps, listed := props[name]
			if !listed {
				ps = patternSchema(m, name)
			}
			if ps == nil {
				ps = m["additionalProperties"]
				if ps == nil {
					ps = true
				}
			}
			out[name] = s.build(ps, depth+1)
		}
	}
	minP, _ := num(m, "minProperties")
	for _, name := range sortedKeys(props) {
		if float64(len(out)) >= minP {
			break
		}
		if _, done := out[name]; !done {
			out[name] = s.build(props[name], depth+1)
		}
	}
	for i := 0; float64(len(out)) < minP && i < 1000; i++ {
		out[fmt.Sprintf("p%d", i)] = "x"
	}
	return out
}

// admitsNothing checks a schema for contradictions without reporting
// them.
func (s *satisfiability) admitsNothing(v any) bool {
	q := &satisfiability{n: s.n, root: s.root, seen: map[string]bool{}, quiet: true}
	return q.check("", v, true, 0)
}

// patternSchema is the schema of the first patternProperties entry whose
// pattern matches name, or nil.
func patternSchema(m map[string]any, name string) any {
	pp, _ := m["patternProperties"].(map[string]any)
	for _, p := range sortedKeys(pp) {
		if re, err := regexp.Compile(p); err == nil && re.MatchString(name) {
			return pp[p]
		}
	}
	return nil
}

func (s *satisfiability) buildArray(m map[string]any, depth int) any {
	out := []any{}
	prefix, _ := m["prefixItems"].([]any)
	n, _ := num(m, "minItems")
	if c, ok := m["contains"]; ok {
		mc := 1.0
		if v, ok := num(m, "minContains"); ok {
			mc = v
		}
		for i := 0; float64(i) < mc && i < 1000; i++ {
			out = append(out, s.build(c, depth+1))
		}
	}
	for i := len(out); float64(i) < n && i < 1000; i++ {
		if i < len(prefix) {
			out = append(out, s.build(prefix[i], depth+1))
			continue
		}
		it, ok := m["items"]
		if !ok {
			it = true
		}
		out = append(out, s.build(it, depth+1))
	}
	if u, _ := m["uniqueItems"].(bool); u {
		// Distinct texts where the items are texts; other items may clash,
		// which the validation after the build reports.
		for i := range out {
			if str, ok := out[i].(string); ok && i > 0 {
				out[i] = fmt.Sprintf("%s%d", str, i)
			}
		}
	}
	return out
}

func buildNumber(m map[string]any, integer bool) any {
	lo, hi := math.Inf(-1), math.Inf(1)
	step := 1.0
	if !integer {
		step = 0.5
	}
	if v, ok := num(m, "minimum"); ok {
		lo = v
	}
	if v, ok := num(m, "exclusiveMinimum"); ok && v >= lo {
		lo = v + step
		if integer {
			lo = math.Floor(v) + 1
		}
	}
	if v, ok := num(m, "maximum"); ok {
		hi = v
	}
	if v, ok := num(m, "exclusiveMaximum"); ok && v <= hi {
		hi = v - step
		if integer {
			hi = math.Ceil(v) - 1
		}
	}
	x := 0.0
	switch {
	case !math.IsInf(lo, 0):
		x = lo
	case !math.IsInf(hi, 0) && hi < 0:
		x = hi
	}
	if integer {
		x = math.Ceil(x)
	}
	if mo, ok := num(m, "multipleOf"); ok && mo > 0 {
		x = math.Ceil(x/mo) * mo
	}
	if x > hi && !math.IsInf(lo, 0) && !math.IsInf(hi, 0) {
		x = (lo + hi) / 2
	}
	if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
		return float64(int64(x))
	}
	return x
}

// formatSamples are values of the string formats a reply schema is likely
// to name (the validator asserts none by default; they are sensible text).
var formatSamples = map[string]string{
	"date-time": "2024-01-02T03:04:05Z", "date": "2024-01-02", "time": "03:04:05Z",
	"email": "a@example.com", "uri": "https://example.com/", "uuid": "00000000-0000-4000-8000-000000000000",
	"hostname": "example.com", "ipv4": "192.0.2.1", "ipv6": "2001:db8::1", "duration": "P1D",
}

func buildString(m map[string]any) any {
	str := "x"
	if f, ok := m["format"].(string); ok && formatSamples[f] != "" {
		str = formatSamples[f]
	}
	if p, ok := m["pattern"].(string); ok {
		if re, err := regexp.Compile(p); err == nil {
			if ex, ok := RegexExample(re); ok {
				str = ex
			}
		}
	}
	if v, ok := num(m, "minLength"); ok {
		for utf8.RuneCountInString(str) < int(v) && int(v) < 1<<20 {
			str += "x"
		}
	}
	if v, ok := num(m, "maxLength"); ok && utf8.RuneCountInString(str) > int(v) {
		str = string([]rune(str)[:int(v)])
	}
	return str
}

// mergeSchemas folds schema b into a copy of a for building: properties
// and required are joined, bounds narrowed, other keywords of b added
// where a lacks them.
func mergeSchemas(a map[string]any, bv any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	b, ok := bv.(map[string]any)
	if !ok {
		return out
	}
	for k, v := range b {
		cur, has := out[k]
		switch {
		case !has:
			out[k] = v
		case k == "properties":
			pa, _ := cur.(map[string]any)
			pb, _ := v.(map[string]any)
			merged := make(map[string]any, len(pa)+len(pb))
			for n, s := range pa {
				merged[n] = s
			}
			for n, s := range pb {
				if sa, ok := merged[n].(map[string]any); ok {
					merged[n] = mergeSchemas(sa, s)
				} else {
					merged[n] = s
				}
			}
			out[k] = merged
		case k == "required":
			ra, _ := cur.([]any)
			rb, _ := v.([]any)
			out[k] = append(slices.Clone(ra), rb...)
		case k == "minimum" || k == "exclusiveMinimum" || k == "minLength" || k == "minItems" || k == "minProperties":
			if x, y := cur.(float64), v.(float64); y > x {
				out[k] = y
			}
		case k == "maximum" || k == "exclusiveMaximum" || k == "maxLength" || k == "maxItems" || k == "maxProperties":
			if x, y := cur.(float64), v.(float64); y < x {
				out[k] = y
			}
		}
	}
	return out
}

// RegexExamples returns short non-empty texts the regular expression
// matches, the shortest first; none when it found none: the expression
// may match only empty text (`^$`), or anchors and word boundaries sit
// where the simple generator here cannot honour them.
func RegexExamples(re *regexp.Regexp) []string {
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return nil
	}
	tree = tree.Simplify()
	// Shortest first, then one taking every optional part once, which
	// finds non-empty text where the shortest is empty (`(\d*)`).
	var out []string
	for _, more := range []bool{false, true} {
		var b strings.Builder
		if !genRegex(&b, tree, more, 0) {
			continue
		}
		if ex := b.String(); ex != "" && re.MatchString(ex) && !slices.Contains(out, ex) {
			out = append(out, ex)
		}
	}
	return out
}

// RegexExample is the first of RegexExamples.
func RegexExample(re *regexp.Regexp) (string, bool) {
	if ex := RegexExamples(re); len(ex) > 0 {
		return ex[0], true
	}
	return "", false
}

// RegexMatchesOnlyEmpty reports whether a regular expression can match
// nothing but empty text (or nothing at all): it consumes no character on
// any path.
func RegexMatchesOnlyEmpty(re *regexp.Regexp) bool {
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return false
	}
	return !consumes(tree.Simplify())
}

func consumes(r *syntax.Regexp) bool {
	switch r.Op {
	case syntax.OpLiteral:
		return len(r.Rune) > 0
	case syntax.OpCharClass:
		return len(r.Rune) > 0
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return true
	case syntax.OpRepeat:
		return r.Max != 0 && consumes(r.Sub[0])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpCapture:
		return consumes(r.Sub[0])
	case syntax.OpConcat, syntax.OpAlternate:
		for _, s := range r.Sub {
			if consumes(s) {
				return true
			}
		}
	}
	return false
}

// genRegex writes a text r matches: the first alternative, the first rune
// of a class (a letter or digit when it has one), repeats at their
// minimum (or once more with more).
func genRegex(b *strings.Builder, r *syntax.Regexp, more bool, depth int) bool {
	if depth > 100 || b.Len() > 4096 {
		return false
	}
	switch r.Op {
	case syntax.OpNoMatch:
		return false
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	case syntax.OpLiteral:
		for _, c := range r.Rune {
			if r.Flags&syntax.FoldCase != 0 {
				c = []rune(strings.ToLower(string(c)))[0]
			}
			b.WriteRune(c)
		}
		return true
	case syntax.OpCharClass:
		if len(r.Rune) == 0 {
			return false
		}
		b.WriteRune(classRune(r.Rune))
		return true
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('x')
		return true
	case syntax.OpCapture:
		return genRegex(b, r.Sub[0], more, depth+1)
	case syntax.OpStar, syntax.OpQuest:
		if more {
			return genRegex(b, r.Sub[0], more, depth+1)
		}
		return true
	case syntax.OpPlus:
		return genRegex(b, r.Sub[0], more, depth+1)
	case syntax.OpRepeat:
		n := r.Min
		if more && n == 0 && r.Max != 0 {
			n = 1
		}
		for i := 0; i < n; i++ {
			if !genRegex(b, r.Sub[0], more, depth+1) {
				return false
			}
		}
		return true
	case syntax.OpConcat:
		for _, s := range r.Sub {
			if !genRegex(b, s, more, depth+1) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		for _, s := range r.Sub {
			var alt strings.Builder
			if genRegex(&alt, s, more, depth+1) && (alt.Len() > 0 || !more) {
				b.WriteString(alt.String())
				return true
			}
		}
		return genRegex(b, r.Sub[0], false, depth+1)
	}
	return false
}

// classRune picks a rune of a character class (pairs of lo, hi): a letter
// or digit when the class has one, else its first.
func classRune(ranges []rune) rune {
	for _, want := range [][2]rune{{'a', 'z'}, {'A', 'Z'}, {'0', '9'}} {
		for i := 0; i+1 < len(ranges); i += 2 {
			lo, hi := max(ranges[i], want[0]), min(ranges[i+1], want[1])
			if lo <= hi {
				return lo
			}
		}
	}
	c := ranges[0]
	if c < ' ' && ranges[1] >= ' ' {
		c = ' '
	}
	return c
}
