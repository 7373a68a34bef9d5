package calls

import (
	"encoding/json"
	"io/fs"
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
