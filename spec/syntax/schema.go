package syntax

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/internal/yamljson"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"
)

//go:embed base.schema.json
var baseSchema []byte

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// ValidateSchema checks the spec against the registry's JSON Schema and
// reports each failure at the YAML key or value it is about. It returns the
// JSON pointers of the values that failed.
func ValidateSchema(r *Reporter, reg *Schema, loc *Located) []string {
	reg.build()
	if reg.err != nil {
		r.Errorf(Pos{}, "internal error: spec schema: %v", reg.err)
		return nil
	}
	err := reg.compiled.Validate(loc.Value)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		r.Errorf(Pos{1, 1}, "schema validation: %v", err)
		return []string{""}
	}
	var failed []string
	for _, leaf := range Leaves(ve, loc) {
		reportSchemaError(r, reg, loc, leaf)
		failed = append(failed, UnescapeURLPointer(leaf.InstanceLocation))
	}
	return failed
}

// Leaves flattens a validation error tree. For anyOf/oneOf failures it keeps
// only the branch that got furthest into the value, which is almost always the
// one the author meant.
func Leaves(ve *jsonschema.ValidationError, loc *Located) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	kw := LastSegment(ve.KeywordLocation)
	if kw == "anyOf" || kw == "oneOf" {
		var best []*jsonschema.ValidationError
		bestScore := -1
		bestUnknown := 0
		for _, c := range ve.Causes {
			ls := Leaves(c, loc)
			score, unknown := 0, 0
			for _, l := range ls {
				d := strings.Count(l.InstanceLocation, "/")*4 + specificity(l, loc)
				if d > score {
					score = d
				}
				if LastSegment(l.KeywordLocation) == "additionalProperties" {
					unknown += len(QuotedNames(l.Message))
				}
			}
			// Among equally deep branches, the one that knows more of the
			// keys written is the one meant ({if: .., thn: ..} is an if).
			better := best == nil || score > bestScore ||
				(score == bestScore && (unknown < bestUnknown || (unknown == bestUnknown && len(ls) < len(best))))
			if better {
				best, bestScore, bestUnknown = ls, score, unknown
			}
		}
		return best
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, Leaves(c, loc)...)
	}
	return out
}

// specificity prefers errors that show the branch was the intended one: a
// failing type check means the branch did not fit at all, and so does a list
// of allowed words when the value is a mapping or a list.
func specificity(l *jsonschema.ValidationError, loc *Located) int {
	switch LastSegment(l.KeywordLocation) {
	case "type":
		return 0
	case "enum", "const":
		if n := ResolveAlias(loc.Values[UnescapeURLPointer(l.InstanceLocation)]); n != nil && n.Kind != yaml.ScalarNode {
			return 0
		}
	case "required":
		return 1
	case "additionalProperties":
		return 2
	}
	return 3
}

func LastSegment(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[i+1:]
	}
	return p
}

func reportSchemaError(r *Reporter, reg *Schema, loc *Located, ve *jsonschema.ValidationError) {
	ptr := UnescapeURLPointer(ve.InstanceLocation)
	node := loc.Values[ptr]
	pos := NodePos(node)
	if pos.Line == 0 {
		pos = Pos{1, 1}
	}
	where := DescribePointer(ptr)
	if stepShapeError(r, ve, node, where) {
		return
	}
	switch LastSegment(ve.KeywordLocation) {
	case "additionalProperties":
		allowed := allowedProperties(reg, ve.KeywordLocation)
		for _, name := range QuotedNames(ve.Message) {
			kp := ptr + "/" + EscapePointer(name)
			kpos := pos
			if k := loc.Keys[kp]; k != nil {
				kpos = NodePos(k)
			}
			msg := fmt.Sprintf("unknown key %q in %s%s", name, where, DidYouMean(name, allowed))
			if len(allowed) > 0 && suggest(name, allowed) == "" && len(allowed) <= 12 {
				msg += "; allowed: " + strings.Join(allowed, ", ")
			}
			r.Errorf(kpos, "%s", msg)
		}
		return
	case "required":
		names := QuotedNames(ve.Message)
		if k := loc.Keys[ptr]; k != nil && ptr != "" {
			pos = NodePos(k)
		}
		for _, name := range names {
			r.Errorf(pos, "%s is missing required key %q", where, name)
		}
		return
	case "type":
		r.Errorf(pos, "%s: %s", where, TypeMessage(ve.Message, node))
		return
	case "const":
		if ptr == "/version" {
			r.Errorf(pos, "unsupported spec version %s: this runner knows version 1", scalarText(node))
			return
		}
	case "enum":
		r.Errorf(pos, "%s: %s", where, EnumMessage(ve.Message, node))
		return
	case "pattern":
		if strings.Contains(ve.KeywordLocation, "propertyNames") {
			name := unescapePointer(LastSegment(ptr))
			if k := loc.Keys[ptr]; k != nil {
				pos = NodePos(k)
			}
			if strings.Contains(ve.KeywordLocation, "/define/") {
				r.Errorf(pos, "%q is not a valid template name (use LIBRARY/NAME with letters, digits, '_', '-' and '.')", name)
				return
			}
			r.Errorf(pos, "%q is not a valid id in %s (use letters, digits, '_' and '-', starting with a letter or '_')", name, DescribePointer(parentPointer(ptr)))
			return
		}
		pattern := strings.TrimPrefix(ve.Message, "does not match pattern ")
		// The validator quotes the pattern, doubling its backslashes.
		if form, ok := patternForms[strings.ReplaceAll(strings.Trim(pattern, "'"), `\\`, `\`)]; ok {
			r.Errorf(pos, "%s: %q is not %s", where, scalarText(node), form)
			return
		}
		r.Errorf(pos, "%s: %q does not have the expected form (%s)", where, scalarText(node), pattern)
		return
	case "minProperties", "minLength":
		r.Errorf(pos, "%s must not be empty", where)
		return
	case "uniqueItems":
		// "items at index 0 and 1 are equal": point at the repeat.
		var i, j int
		if _, err := fmt.Sscanf(ve.Message, "items at index %d and %d are equal", &i, &j); err == nil {
			item := ResolveAlias(loc.Values[ptr+"/"+strconv.Itoa(j)])
			what := DescribeValue(item)
			if item != nil {
				pos = NodePos(loc.Values[ptr+"/"+strconv.Itoa(j)])
				if item.Kind == yaml.ScalarNode {
					what = strconv.Quote(item.Value)
				}
			}
			r.Errorf(pos, "%s: %s is listed twice", where, what)
			return
		}
	case "minItems":
		r.Errorf(pos, "%s must have at least one entry", where)
		return
	case "maximum", "minimum":
		// "must be <= 10 but found 11"; the value as written reads better
		// than the validator's rendering of it (1e+23 for a long integer).
		var op, bound string
		if _, err := fmt.Sscanf(ve.Message, "must be %s %s", &op, &bound); err == nil {
			// The bound as the schema writes it (the validator's is a
			// float, inexact for 64-bit bounds).
			switch b := schemaAt(reg, strings.Split(strings.TrimPrefix(ve.KeywordLocation, "/"), "/")).(type) {
			case json.Number:
				bound = b.String()
			case float64:
				bound = strconv.FormatFloat(b, 'f', -1, 64)
			}
			if LastSegment(ve.KeywordLocation) == "maximum" {
				r.Errorf(pos, "%s: %s is too large (at most %s)", where, Clip(scalarText(node), 40), bound)
			} else {
				r.Errorf(pos, "%s: %s is too small (at least %s)", where, Clip(scalarText(node), 40), bound)
			}
			return
		}
	}
	r.Errorf(pos, "%s: %s", where, ve.Message)
}

// stepKeys are the keys that make a flow step mapping a loop, foreach or if.
var stepKeys = []string{"loop", "foreach", "if"}

// stepShapeError explains a flow step mapping that is none or several of
// loop, foreach and if. Which branch of the step schema a validator blames
// is then arbitrary, so its complaint would mislead.
func stepShapeError(r *Reporter, ve *jsonschema.ValidationError, node *yaml.Node, where string) bool {
	kw := LastSegment(ve.KeywordLocation)
	if (kw != "required" && kw != "additionalProperties") || !strings.Contains(ve.AbsoluteKeywordLocation, "/$defs/step/anyOf/") {
		return false
	}
	if i := strings.LastIndex(ve.AbsoluteKeywordLocation, "/$defs/step/anyOf/"); strings.Count(ve.AbsoluteKeywordLocation[i:], "/") != 5 {
		return false // about a value inside the step, not the step itself
	}
	n := ResolveAlias(node)
	if n == nil || n.Kind != yaml.MappingNode {
		return false
	}
	var found []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		for _, k := range stepKeys {
			if n.Content[i].Value == k {
				found = append(found, n.Content[i])
			}
		}
	}
	switch {
	case len(found) == 0 && len(n.Content) > 0:
		k := n.Content[0]
		r.Errorf(NodePos(k), "%s: unknown step %q%s; a step is a node id or a mapping with loop, foreach or if", where, k.Value, DidYouMean(k.Value, stepKeys))
		return true
	case len(found) == 0:
		r.Errorf(NodePos(n), "%s: empty step; a step is a node id or a mapping with loop, foreach or if", where)
		return true
	case len(found) > 1:
		r.Errorf(NodePos(found[1]), "%s: a step is one of loop, foreach or if; split %s and %s into two steps", where, found[0].Value, found[1].Value)
		return true
	}
	return false
}

// patternForms says in words what the patterns of the base schema accept, so
// a user reads "not a valid id" rather than a regular expression.
var patternForms = map[string]string{
	`^[A-Za-z_][A-Za-z0-9_-]*$`:                 "a valid id (use letters, digits, '_' and '-', starting with a letter or '_')",
	`^[A-Za-z0-9_.-]+$`:                         "a valid name (use letters, digits, '_', '-' and '.')",
	`^[A-Za-z0-9_-]+$`:                          "a valid option (use letters, digits, '_' and '-')",
	`^[A-Za-z_][A-Za-z0-9_]*$`:                  "a valid environment variable name (letters, digits and '_')",
	`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`: "a duration such as 90s, 2m or 1m30s",
	`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$`:      "a valid template name (LIBRARY/NAME)",
	`^[0-9]{4}-[0-9]{2}-[0-9]{2}(-preview)?$`:   "an Azure api-version such as 2024-10-21 or 2025-04-01-preview",
	`^[A-Za-z0-9-]+$`:                           "an HTTP header name such as api-key",
	`^[A-Za-z_][A-Za-z0-9_.:-]*$`:               "a valid tag name (letters, digits, '_', '-', '.' and ':', starting with a letter or '_')",
}

// UnescapeURLPointer undoes the percent-encoding the validator applies to
// each segment of an instance location ("first answer" arrives as
// "first%20answer"), leaving the JSON-pointer escapes (~0, ~1) that the
// position maps are keyed with.
func UnescapeURLPointer(ptr string) string {
	if !strings.Contains(ptr, "%") {
		return ptr
	}
	segs := strings.Split(ptr, "/")
	for i, s := range segs {
		if u, err := url.PathUnescape(s); err == nil {
			segs[i] = u
		}
	}
	return strings.Join(segs, "/")
}

func parentPointer(ptr string) string {
	if i := strings.LastIndex(ptr, "/"); i >= 0 {
		return ptr[:i]
	}
	return ""
}

func scalarText(n *yaml.Node) string {
	n = ResolveAlias(n)
	if n == nil {
		return ""
	}
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return KindName(n)
}

func TypeMessage(msg string, n *yaml.Node) string {
	// jsonschema says "expected integer, but got string".
	want := strings.TrimPrefix(msg, "expected ")
	if i := strings.Index(want, ", but got"); i >= 0 {
		want = want[:i]
	}
	if want == "string or integer or number or boolean" {
		return fmt.Sprintf("expected an expression (text, a number or a boolean), found %s", DescribeValue(n))
	}
	if strings.Contains(want, " or ") {
		alts := strings.Split(want, " or ")
		for i, a := range alts {
			alts[i] = Article(a)
		}
		return fmt.Sprintf("expected %s, found %s", strings.Join(alts, " or "), DescribeValue(n))
	}
	return fmt.Sprintf("expected %s, found %s", Article(want), DescribeValue(n))
}

func Article(t string) string {
	switch t {
	case "object":
		return "a mapping"
	case "array":
		return "a list"
	case "integer":
		return "an integer"
	case "null":
		return "null"
	}
	if strings.Contains(t, ",") || strings.Contains(t, " or ") {
		return "one of " + t
	}
	return "a " + t
}

func DescribeValue(n *yaml.Node) string {
	n = ResolveAlias(n)
	if n == nil {
		return "nothing"
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() != "!!null" {
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return fmt.Sprintf("%s %q", KindName(n), v)
	}
	return KindName(n)
}

func EnumMessage(msg string, n *yaml.Node) string {
	opts := QuotedNames(msg)
	if r := ResolveAlias(n); r == nil || r.Kind != yaml.ScalarNode {
		return fmt.Sprintf("expected one of %s, found %s", strings.Join(opts, ", "), DescribeValue(n))
	}
	got := scalarText(n)
	s := fmt.Sprintf("%q is not one of %s", got, strings.Join(opts, ", "))
	return s + DidYouMean(got, opts)
}

// QuotedNames extracts 'x' or "x" items from a validator message. The
// validator writes 'x' as Go's %q does, with ' escaped and " not: names
// holding quotes, backslashes or odd characters come back as written.
func QuotedNames(msg string) []string {
	if names, ok := singleQuoted(msg); ok {
		return names
	}
	var out []string
	for _, q := range []byte{'\'', '"'} {
		parts := strings.Split(msg, string(q))
		for i := 1; i < len(parts); i += 2 {
			out = append(out, parts[i])
		}
		if len(out) > 0 {
			return out
		}
	}
	return out
}

// singleQuoted reads the validator's 'x' items (see quotedNames).
func singleQuoted(msg string) ([]string, bool) {
	var out []string
	for i := 0; i < len(msg); i++ {
		if msg[i] != '\'' {
			continue
		}
		j := i + 1
		for ; j < len(msg) && msg[j] != '\''; j++ {
			if msg[j] == '\\' {
				j++
			}
		}
		if j >= len(msg) {
			return nil, false
		}
		inner := strings.ReplaceAll(msg[i+1:j], `\'`, `'`)
		inner = strings.ReplaceAll(inner, `"`, `\"`)
		name, err := strconv.Unquote(`"` + inner + `"`)
		if err != nil {
			return nil, false
		}
		out = append(out, name)
		i = j
	}
	return out, len(out) > 0
}

// DescribePointer names a JSON pointer the way a user reads the spec:
// "nodes.propose", "flow[2].loop", or "the spec" for the root.
func DescribePointer(ptr string) string {
	if ptr == "" {
		return "the spec"
	}
	return yamljson.Describe(ptr)
}

// allowedProperties finds the properties a schema location allows, for
// "did you mean" suggestions.
func allowedProperties(reg *Schema, keywordLoc string) []string {
	// keywordLoc is like /properties/nodes/additionalProperties/$ref/allOf/0/then/$ref/additionalProperties;
	// resolve it against the raw schema, following $ref.
	segs := strings.Split(strings.TrimPrefix(keywordLoc, "/"), "/")
	if len(segs) == 0 {
		return nil
	}
	segs = segs[:len(segs)-1] // drop the failing keyword itself
	m, ok := schemaAt(reg, segs).(map[string]any)
	if !ok {
		return nil
	}
	props, _ := m["properties"].(map[string]any)
	out := make([]string, 0, len(props))
	for k := range props {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// schemaAt follows keyword location segments through the raw schema,
// through $ref, and returns what is there (nil when nothing is).
func schemaAt(reg *Schema, segs []string) any {
	cur := any(reg.raw)
	for _, s := range segs {
		s = unescapePointer(s)
		m, ok := cur.(map[string]any)
		if s == "$ref" && ok {
			ref, _ := m["$ref"].(string)
			cur = resolveRef(reg.raw, ref)
			continue
		}
		switch v := cur.(type) {
		case map[string]any:
			cur = v[s]
		case []any:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(v) {
				return nil
			}
			cur = v[i]
		default:
			return nil
		}
	}
	return cur
}

func resolveRef(root map[string]any, ref string) any {
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	var cur any = root
	for _, s := range strings.Split(ref[2:], "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[unescapePointer(s)]
	}
	return cur
}
