package difffuzz

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp/syntax"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/scripted"
)

// Profile is a way of replying: every reply a run gets under it is made by
// the same rule from the shape the call declares (text, JSON Schema, tags,
// regular expression). The generator is this package's own, apart from the
// dry run's stand-ins, so a checker built on those is tested against
// replies it did not make.
type Profile string

// The reply profiles.
const (
	// Minimal: the least a schema allows (required properties only, the
	// fewest items, the lowest numbers, the shortest strings).
	Minimal Profile = "minimal"
	// Maximal: every property, the most items (or 6), the highest numbers,
	// long texts.
	Maximal Profile = "maximal"
	// Empty: empty lists and strings wherever allowed, optional properties
	// left out (a text reply, which may not be empty, is one character).
	Empty Profile = "empty"
	// Boundary: numbers at their bounds' edges (0, negative, huge when
	// unbounded), one item lists.
	Boundary Profile = "boundary"
	// Typical: a few items, middle numbers, a sentence of text.
	Typical Profile = "typical"
)

// Profiles are every profile, in the order runs try them.
var Profiles = []Profile{Typical, Minimal, Maximal, Empty, Boundary}

// replyGen makes replies of one profile.
type replyGen struct {
	p    Profile
	root any
	n    int // counts replies, so texts differ
	// alt shifts which alternative of an anyOf or oneOf is taken.
	alt int
}

// text is prose of the profile's length.
func (g *replyGen) text(label string) string {
	switch g.p {
	case Minimal:
		return "x"
	case Empty:
		return ""
	case Maximal:
		return strings.Repeat(fmt.Sprintf("Point %d on %s: a long argument, with numbers 12, -3.5 and 1e9, and {braces} <tags> \"quotes\".\n", g.n, label), 10)
	case Boundary:
		return "0"
	}
	return fmt.Sprintf("A reply to %s: I think the answer is B, with 7 reasons.", label)
}

// Reply makes the content of a reply to a call of that shape.
func (g *replyGen) Reply(shape kit.Shape, label string) string {
	g.n++
	switch shape.Format {
	case "json":
		var schema any
		if len(shape.Schema) > 0 {
			_ = json.Unmarshal(shape.Schema, &schema)
		}
		return g.fitting(schema, shape.Schema, label)
	case "tags":
		var b strings.Builder
		for _, t := range shape.Tags {
			v := t.Value
			if v == "" {
				v = g.text(label)
			}
			// a tag the node refuses empty (a conversation's
			// <Content>) holds one character at the least, as a text
			// reply does
			if t.Filled && strings.TrimSpace(v) == "" {
				v = "."
			}
			fmt.Fprintf(&b, "<%s>%s</%s>\n", t.Name, v, t.Name)
		}
		return b.String()
	case "regex":
		re, err := syntax.Parse(shape.Pattern, syntax.Perl)
		if err != nil {
			return g.text(label)
		}
		var b strings.Builder
		g.match(&b, re, 0)
		if g.p == Typical || g.p == Maximal {
			return g.text(label) + "\n" + b.String()
		}
		return b.String()
	}
	// a text reply is read as its trimmed text, and an empty one is
	// refused (nodes/parse): the empty profile's shortest text that fits
	// is one character
	if t := g.text(label); strings.TrimSpace(t) != "" {
		return t
	}
	return "."
}

// fitting is the profile's value for schema when it fits the schema;
// else the first that fits of other choices of alternatives and then of
// the other profiles' values (a schema whose keywords meet in ways the
// generator does not follow); else the profile's value, which may be
// what no reply can satisfy.
func (g *replyGen) fitting(schema any, raw json.RawMessage, label string) string {
	encode := func(v any) string {
		data, err := json.Marshal(v)
		if err != nil {
			return "{}"
		}
		return string(data)
	}
	g.root = schema
	first := encode(g.value(schema, label, 0))
	if len(raw) == 0 || holds(schema, json.RawMessage(first)) {
		return first
	}
	for _, p := range append([]Profile{g.p}, Profiles...) {
		for alt := 0; alt < 3; alt++ {
			o := &replyGen{p: p, root: schema, n: g.n, alt: alt}
			c := encode(o.value(schema, label, 0))
			if holds(schema, json.RawMessage(c)) {
				return c
			}
		}
	}
	return first
}

// match writes a string re matches, choosing as the profile does.
func (g *replyGen) match(b *strings.Builder, re *syntax.Regexp, depth int) {
	if depth > 20 {
		return
	}
	long := g.p == Maximal
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		if len(re.Rune) >= 2 {
			r := re.Rune[0]
			if long {
				r = re.Rune[len(re.Rune)-1]
			}
			if r > 0x10ffff || r < 0x20 {
				r = re.Rune[0]
			}
			b.WriteRune(r)
		}
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('a')
	case syntax.OpCapture:
		g.match(b, re.Sub[0], depth+1)
	case syntax.OpConcat:
		for _, s := range re.Sub {
			g.match(b, s, depth+1)
		}
	case syntax.OpAlternate:
		i := 0
		if long || g.p == Boundary {
			i = len(re.Sub) - 1
		}
		g.match(b, re.Sub[i], depth+1)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		n := 0
		switch re.Op {
		case syntax.OpPlus:
			n = 1
		case syntax.OpRepeat:
			n = re.Min
		}
		if long || g.p == Typical {
			switch re.Op {
			case syntax.OpStar, syntax.OpPlus:
				n += 3
			case syntax.OpQuest:
				n = 1
			case syntax.OpRepeat:
				if re.Max > n {
					n = min(re.Max, n+3)
				}
			}
		}
		for range n {
			g.match(b, re.Sub[0], depth+1)
		}
	}
}

// value is a value schema accepts, chosen as the profile says.
func (g *replyGen) value(schema any, label string, depth int) any {
	s, ok := schema.(map[string]any)
	if !ok || depth > 14 {
		if b, ok := schema.(bool); ok && !b {
			return nil
		}
		return g.untyped(label, depth)
	}
	if ref, ok := s["$ref"].(string); ok {
		if t, ok := g.resolve(ref).(map[string]any); ok {
			// the target with the keywords beside $ref over it
			rest := map[string]any{}
			for k, v := range s {
				if k != "$ref" {
					rest[k] = v
				}
			}
			return g.value(mergeSchema(t, rest), label, depth+1)
		}
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		switch g.p {
		case Maximal, Boundary:
			return e[len(e)-1]
		case Typical:
			return e[len(e)/2]
		}
		return e[0]
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[key].([]any); ok && len(alts) > 0 {
			i := 0
			if g.p == Maximal || g.p == Boundary {
				i = len(alts) - 1
			}
			alt := alts[(i+g.alt)%len(alts)]
			merged := map[string]any{}
			for k, v := range s {
				if k != key {
					merged[k] = v
				}
			}
			if a, ok := alt.(map[string]any); ok {
				for k, v := range a {
					merged[k] = v
				}
			}
			return g.value(merged, label, depth+1)
		}
	}
	if all, ok := s["allOf"].([]any); ok {
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
		return g.value(merged, label, depth+1)
	}
	if cond, ok := s["if"]; ok && (s["then"] != nil || s["else"] != nil) {
		// a conditional schema: the value made without it, then the
		// branch its condition takes for that value merged in
		base := map[string]any{}
		for k, v := range s {
			if k != "if" && k != "then" && k != "else" {
				base[k] = v
			}
		}
		v := g.value(base, label, depth+1)
		branch := s["else"]
		if holds(cond, v) {
			branch = s["then"]
		}
		if b, ok := branch.(map[string]any); ok {
			return g.value(mergeSchema(base, b), label, depth+1)
		}
		return v
	}
	typ := schemaType(s)
	switch typ {
	case "object":
		return g.object(s, label, depth)
	case "array":
		return g.array(s, label, depth)
	case "integer":
		return g.number(s, true)
	case "number":
		return g.number(s, false)
	case "boolean":
		return g.p == Maximal || g.p == Typical
	case "null":
		return nil
	}
	if s["type"] == nil && typ == "string" && !hasStringKeywords(s) {
		return g.untyped(label, depth)
	}
	return g.str(s, label)
}

// untyped is a part of a reply its schema leaves untyped (no type, or no
// schema): a model may put any value there, so the boundary profile puts a
// number where the others put text.
func (g *replyGen) untyped(label string, depth int) any {
	if g.p == Boundary && depth > 0 {
		return 7
	}
	return g.text(label)
}

// hasStringKeywords says whether an untyped schema constrains strings
// (a pattern, a length, a format), which a number would not meet.
func hasStringKeywords(s map[string]any) bool {
	for _, k := range []string{"pattern", "minLength", "maxLength", "format"} {
		if _, ok := s[k]; ok {
			return true
		}
	}
	return false
}

func (g *replyGen) resolve(ref string) any {
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
		cur = m[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
	}
	return cur
}

// schemaType is the one type a schema's value takes: its type, or the
// first of its types that is not null (the last under some profiles is
// chosen by the caller's profile through the order given), or what its
// keywords imply.
func schemaType(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if x != "null" {
				if str, ok := x.(string); ok {
					return str
				}
			}
		}
		return "null"
	}
	switch {
	case s["properties"] != nil || s["required"] != nil:
		return "object"
	case s["items"] != nil || s["minItems"] != nil:
		return "array"
	case s["minimum"] != nil || s["maximum"] != nil:
		return "number"
	}
	return "string"
}

func num(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok
}

func (g *replyGen) number(s map[string]any, integer bool) any {
	lo, hasLo := num(s["minimum"])
	hi, hasHi := num(s["maximum"])
	if x, ok := num(s["exclusiveMinimum"]); ok {
		lo, hasLo = x+1, true
		if !integer {
			lo = x + 0.5
		}
	}
	if x, ok := num(s["exclusiveMaximum"]); ok {
		hi, hasHi = x-1, true
		if !integer {
			hi = x - 0.5
		}
	}
	var v float64
	switch g.p {
	case Minimal, Empty:
		v = 0
		if hasLo {
			v = lo
		} else if hasHi && hi < 0 {
			v = hi
		}
	case Maximal:
		v = 1e6
		if hasHi {
			v = hi
		} else if hasLo && lo > 1e6 {
			v = lo
		}
	case Boundary:
		v = -1
		if hasLo {
			v = lo
		} else if hasHi {
			v = math.Min(hi, -1)
		}
	default:
		v = 7
		if hasLo && hasHi {
			v = math.Floor((lo + hi) / 2)
		} else if hasLo {
			v = lo + 1
		} else if hasHi {
			v = hi - 1
		}
	}
	if hasLo && v < lo {
		v = lo
	}
	if hasHi && v > hi {
		v = hi
	}
	if m, ok := num(s["multipleOf"]); ok && m > 0 {
		v = math.Ceil(v/m) * m
	}
	if integer {
		return int64(math.Round(v))
	}
	if g.p == Typical || g.p == Maximal {
		return v + 0.5*float64(boolInt(!hasHi || v+0.5 <= hi))
	}
	return v
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (g *replyGen) str(s map[string]any, label string) any {
	t := g.text(label)
	if min, ok := num(s["minLength"]); ok && len([]rune(t)) < int(min) {
		t += strings.Repeat("y", int(min)-len([]rune(t)))
	}
	if max, ok := num(s["maxLength"]); ok && len([]rune(t)) > int(max) {
		t = string([]rune(t)[:int(max)])
	}
	if p, ok := s["pattern"].(string); ok {
		if re, err := syntax.Parse(p, syntax.Perl); err == nil {
			var b strings.Builder
			g.match(&b, re, 0)
			return b.String()
		}
	}
	return t
}

func (g *replyGen) array(s map[string]any, label string, depth int) any {
	n := 2
	switch g.p {
	case Minimal, Empty:
		n = 0
	case Maximal:
		n = 6
	case Boundary:
		n = 1
	}
	if lo, ok := num(s["minItems"]); ok && n < int(lo) {
		n = int(lo)
	}
	if hi, ok := num(s["maxItems"]); ok && n > int(hi) {
		n = int(hi)
	}
	if g.p == Maximal {
		if hi, ok := num(s["maxItems"]); ok && hi <= 50 {
			n = int(hi)
		}
	}
	out := make([]any, 0, n)
	prefix, _ := s["prefixItems"].([]any)
	for i := 0; i < n; i++ {
		item := s["items"]
		if i < len(prefix) {
			item = prefix[i]
		}
		v := g.value(item, fmt.Sprintf("%s[%d]", label, i), depth+1)
		if str, ok := v.(string); ok && s["uniqueItems"] == true {
			v = fmt.Sprintf("%s %d", str, i)
		}
		out = append(out, v)
	}
	return out
}

func (g *replyGen) object(s map[string]any, label string, depth int) any {
	props, _ := s["properties"].(map[string]any)
	required := map[string]bool{}
	if r, ok := s["required"].([]any); ok {
		for _, x := range r {
			if name, ok := x.(string); ok {
				required[name] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	for k := range required {
		if _, ok := props[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	out := map[string]any{}
	for _, k := range names {
		// Minimal and empty leave out what is not required (all of an
		// object that requires none is given: a reply with nothing in it
		// says nothing).
		if (g.p == Minimal || g.p == Empty) && !required[k] && len(required) > 0 {
			continue
		}
		out[k] = g.value(props[k], label+"."+k, depth+1)
	}
	if min, ok := num(s["minProperties"]); ok {
		for i := 0; len(out) < int(min); i++ {
			out[fmt.Sprintf("extra%d", i)] = g.text(label)
		}
	}
	return out
}

// transport answers every model call of a run with a reply of the
// profile, through runtime/scripted's wire format (the real client reads
// it as it reads an endpoint's).
type transport struct {
	mu    sync.Mutex
	gen   *replyGen
	calls int
}

func (t *transport) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls
}

// answer answers a clarifying question, or a human seat's turn. The
// question is the prompt, history and all: the answer names its start
// only, as a call's reply names its key. A maximal answer quoting all of
// it ten times grew each turn's prompt tenfold, and a loop of human turns
// past the worker's memory (runtime/testdata/seat.yaml in a loop): a
// growth no person's answer makes.
func (t *transport) answer(q string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := []rune(q); len(r) > 60 {
		q = string(r[:60]) + "..."
	}
	// a person's answer holds a character at the least, as a text reply
	// does: a conversation refuses an empty message in its tags format,
	// and a person told so writes something (the empty profile's answer
	// asked again and again never did)
	if a := t.gen.text("the question " + q); strings.TrimSpace(a) != "" {
		return a
	}
	return "."
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := calls.CallFrom(req.Context())
	t.mu.Lock()
	content := "x"
	if c != nil {
		content = t.gen.Reply(c.Kit.Shape, c.Key)
	}
	t.calls++
	t.mu.Unlock()
	return scripted.New(scripted.Script{Entries: []scripted.Entry{{Replies: []scripted.Reply{{Content: content}}, Always: true}}}).RoundTrip(req)
}

// holds says whether v satisfies schema (a condition's: if).
func holds(schema, v any) bool {
	raw, err := json.Marshal(schema)
	if err != nil {
		return false
	}
	sch, err := compiled(string(raw))
	if err != nil {
		return false
	}
	data, ok := v.(json.RawMessage)
	if !ok {
		data, _ = json.Marshal(v)
	}
	var x any
	if json.Unmarshal(data, &x) != nil {
		return false
	}
	return sch.Validate(x) == nil
}

// mergeSchema is a with b's keywords over it, properties merged one by
// one.
func mergeSchema(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if k == "properties" {
			pa, _ := a["properties"].(map[string]any)
			pb, _ := v.(map[string]any)
			props := map[string]any{}
			for n, x := range pa {
				props[n] = x
			}
			for n, x := range pb {
				xa, okA := pa[n].(map[string]any)
				xb, okB := x.(map[string]any)
				if okA && okB {
					props[n] = mergeSchema(xa, xb)
				} else {
					props[n] = x
				}
			}
			out[k] = props
			continue
		}
		if k == "required" {
			ra, _ := a["required"].([]any)
			rb, _ := v.([]any)
			out[k] = append(append([]any{}, ra...), rb...)
			continue
		}
		out[k] = v
	}
	return out
}

var (
	schemaMu    sync.Mutex
	schemaCache = map[string]*jsonschema.Schema{}
)

// compiled is the schema of that text, compiled once.
func compiled(text string) (*jsonschema.Schema, error) {
	schemaMu.Lock()
	defer schemaMu.Unlock()
	if s, ok := schemaCache[text]; ok {
		return s, nil
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", strings.NewReader(text)); err != nil {
		return nil, err
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		return nil, err
	}
	if len(schemaCache) > 4096 {
		schemaCache = map[string]*jsonschema.Schema{}
	}
	schemaCache[text] = s
	return s, nil
}
