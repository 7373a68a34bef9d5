package calls

import (
	"encoding/json"
	"io/fs"
	"math/rand"
	"regexp"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/tags"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/templates"
)

// TestStandInMatchesPattern: a stand-in matches the patterns specs use.
func TestStandInMatchesPattern(t *testing.T) {
	for _, p := range []string{
		`\\boxed\{([^}]*)\}`, `ANSWER: (\S+)`, `ANSWER=(-?\d+)`, `(?i)final answer:\s*(?P<answer>[A-D])\b`,
		`^\s*(yes|no)\s*$`, `(\d{3})-(\d{4})`, `[[:upper:]]{2,4}`, `.+`,
	} {
		out := StandIn(kit.Shape{Format: "regex", Pattern: p}, "reply of a")
		if !regexp.MustCompile(p).MatchString(out) && !regexp.MustCompile(p).MatchString(strings.SplitN(out, "\n", 2)[1]) {
			t.Errorf("pattern %s: stand-in %q does not match", p, out)
		}
	}
}

// TestStandInSatisfiesSchema: stand-ins satisfy the library's schemas and
// typical inline ones.
func TestStandInSatisfiesSchema(t *testing.T) {
	docs := map[string]string{
		"object":   `{"type": "object", "required": ["confidence", "why"], "properties": {"confidence": {"type": "integer", "minimum": 0, "maximum": 100}, "why": {"type": "string", "minLength": 40}}}`,
		"list":     `{"type": "object", "properties": {"questions": {"type": "array", "minItems": 1, "items": {"type": "object", "required": ["question"], "properties": {"question": {"type": "string"}}}}}}`,
		"enum":     `{"type": "object", "required": ["verdict"], "properties": {"verdict": {"enum": ["A", "B"]}}}`,
		"nullable": `{"type": ["null", "number"], "exclusiveMinimum": 5}`,
		"any key":  `{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}`,
		"and key":  `{"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "anyOf": [{"required": ["b"]}]}`,
		"any type": `{"anyOf": [{"type": "string", "minLength": 3}, {"type": "integer"}]}`,
	}
	for _, lib := range templates.Libraries() {
		entries, _ := fs.ReadDir(templates.FS(), lib)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".schema.json") {
				data, _ := fs.ReadFile(templates.FS(), lib+"/"+e.Name())
				docs[lib+"/"+e.Name()] = string(data)
			}
		}
	}
	for name, doc := range docs {
		sch, err := spec.CompileJSONSchema("t", []byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out := StandIn(kit.Shape{Format: "json", Schema: json.RawMessage(doc)}, "reply of judge")
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Errorf("%s: stand-in %s is not JSON: %v", name, out, err)
			continue
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("%s: stand-in %s fails the schema: %v", name, out, err)
		}
	}
}

func TestStandInTags(t *testing.T) {
	out := StandIn(kit.Shape{Format: "tags", Tags: []kit.Tag{{Name: "SpeakingTo", Value: "All"}, {Name: "Content"}, {Name: "Verdict", Value: "YES"}}}, "turn 3 of ana")
	res := tags.Parse(out, "SpeakingTo", "Content", "Verdict")
	got := map[string]string{}
	for _, f := range res.Fields {
		got[f.Name] = f.Value
	}
	if got["SpeakingTo"] != "All" || got["Content"] != "<turn 3 of ana>" || got["Verdict"] != "YES" {
		t.Errorf("tags of %q = %v", out, got)
	}
	if StandIn(kit.Shape{}, "reply of a") != "<reply of a>" {
		t.Error("a text stand-in is its label")
	}
}

// arraySchemaGen writes random satisfiable schemas of nested objects and
// arrays: items, prefixItems (tuples, closed with items: false or not),
// minItems and maxItems in order, and leaves of every type with bounds,
// enums and consts.
type arraySchemaGen struct{ rnd *rand.Rand }

func (g arraySchemaGen) leaf() map[string]any {
	switch g.rnd.Intn(7) {
	case 0:
		return map[string]any{"type": "integer", "minimum": float64(g.rnd.Intn(5)), "maximum": float64(5 + g.rnd.Intn(5))}
	case 1:
		return map[string]any{"type": "number"}
	case 2:
		return map[string]any{"type": "boolean"}
	case 3:
		return map[string]any{"type": "string", "minLength": float64(g.rnd.Intn(4))}
	case 4:
		return map[string]any{"enum": []any{"a", 2.0, true}[g.rnd.Intn(3):]}
	case 5:
		return map[string]any{"const": []any{"k", 1.0, false, nil}[g.rnd.Intn(4)]}
	}
	return map[string]any{"type": "null"}
}

func (g arraySchemaGen) schema(depth int) map[string]any {
	if depth <= 0 || g.rnd.Intn(3) == 0 {
		return g.leaf()
	}
	if g.rnd.Intn(2) == 0 {
		props := map[string]any{}
		var req []any
		for i := 0; i < 1+g.rnd.Intn(3); i++ {
			name := string(rune('a' + i))
			if g.rnd.Intn(4) == 0 {
				// an optional property no value satisfies: a reply leaves
				// it out (a fuzzer's mutant once put enum: [1,2,3] beside
				// a $ref to an object)
				props[name] = []map[string]any{
					{"type": "object", "enum": []any{1.0, 2.0, 3.0}},
					{"not": map[string]any{}},
					{"type": "string", "const": 3.0},
					{"allOf": []any{map[string]any{"type": "integer"}, map[string]any{"type": "array"}}},
				}[g.rnd.Intn(4)]
				continue
			}
			props[name] = g.schema(depth - 1)
			if g.rnd.Intn(2) == 0 {
				req = append(req, name)
			}
		}
		m := map[string]any{"type": "object", "properties": props}
		if len(req) > 0 {
			m["required"] = req
		}
		return m
	}
	m := map[string]any{"type": "array"}
	var prefix []any
	if g.rnd.Intn(2) == 0 {
		for i := 0; i < 1+g.rnd.Intn(3); i++ {
			prefix = append(prefix, g.schema(depth-1))
		}
		m["prefixItems"] = prefix
	}
	switch g.rnd.Intn(3) {
	case 0:
		m["items"] = g.schema(depth - 1)
	case 1:
		if len(prefix) > 0 {
			m["items"] = false
		}
	}
	lo := g.rnd.Intn(3)
	if m["items"] == false && lo > len(prefix) {
		lo = len(prefix)
	}
	if g.rnd.Intn(2) == 0 {
		m["minItems"] = float64(lo)
	}
	if g.rnd.Intn(2) == 0 {
		m["maxItems"] = float64(lo + g.rnd.Intn(3))
	}
	return m
}

// TestStandInsFitGeneratedSchemas: over random schemas of nested arrays
// (tuples among them) and objects (with optional properties no value
// satisfies among theirs), the shortest, the longest and the one-item
// stand-ins are valid JSON the schema accepts: the path check's replies
// are replies the run could get.
func TestStandInsFitGeneratedSchemas(t *testing.T) {
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewSource(seed))
	for i := 0; i < 500; i++ {
		s := arraySchemaGen{rnd: rnd}.schema(3)
		doc, _ := json.Marshal(s)
		sch, err := spec.CompileJSONSchema("t", doc)
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		for _, m := range []struct{ long, one bool }{{false, false}, {true, false}, {false, true}} {
			long := m.long
			out := standIn(kit.Shape{Format: "json", Schema: doc}, "reply", m.long, m.one)
			var v any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("%s (long %v, one %v): stand-in %s is not JSON: %v", doc, long, m.one, out, err)
			}
			if err := sch.Validate(v); err != nil {
				t.Fatalf("%s (long %v, one %v): stand-in %s fails the schema: %v", doc, long, m.one, out, err)
			}
		}
	}
}
