package nodes_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/schemas"
	"github.com/debate-runner/runner/spec"
	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"
)

func publishedSchema(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(schemas.Spec, &doc); err != nil {
		t.Fatalf("schemas/spec.schema.json is not JSON: %v", err)
	}
	return doc
}

func TestPublishedSchemaIsGenerated(t *testing.T) {
	got, err := nodes.Registry().Schema()
	if err != nil {
		t.Fatalf("Registry().Schema(): %v", err)
	}
	if !bytes.Equal(got, schemas.Spec) {
		t.Fatal("schemas/spec.schema.json differs from nodes.Registry().Schema(): run `go generate ./schemas`")
	}
}

func TestPublishedSchemaCompiles(t *testing.T) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	// Compiling validates the document against the draft 2020-12 meta-schema.
	if err := c.AddResource("spec.schema.json", bytes.NewReader(schemas.Spec)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile("spec.schema.json"); err != nil {
		t.Fatalf("schemas/spec.schema.json is not a valid draft 2020-12 schema: %v", err)
	}
	if s, _ := publishedSchema(t)["$schema"].(string); s != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %q, want draft 2020-12", s)
	}
}

type fragment struct {
	Properties map[string]map[string]any `json:"properties"`
	Required   []string                  `json:"required"`
}

// TestKindFragmentsArePublished checks each kind's schema.json against its
// definition in the published schema: every property is there, unchanged,
// described, and nothing else is added beyond the fields every node has.
func TestKindFragmentsArePublished(t *testing.T) {
	defs, _ := publishedSchema(t)["$defs"].(map[string]any)
	common := []string{"agents", "description", "kind"}
	reg := nodes.Registry()
	if got := reg.Names(); len(got) != len(nodes.Kinds()) {
		t.Fatalf("registry has %v, Kinds() has %d kinds", got, len(nodes.Kinds()))
	}
	for _, k := range nodes.Kinds() {
		t.Run(k.Name(), func(t *testing.T) {
			if kk, ok := reg.Lookup(k.Name()); !ok || kk.Name() != k.Name() {
				t.Fatalf("Lookup(%q) = %v, %v", k.Name(), kk, ok)
			}
			if strings.TrimSpace(k.Description()) == "" {
				t.Error("kind has no description")
			}
			var frag fragment
			dec := json.NewDecoder(bytes.NewReader(k.Schema()))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&frag); err != nil {
				t.Fatalf("schema.json must hold only properties and required: %v", err)
			}
			def, ok := defs["node_"+k.Name()].(map[string]any)
			if !ok {
				t.Fatalf("published schema has no $defs/node_%s", k.Name())
			}
			if def["additionalProperties"] != false {
				t.Errorf("$defs/node_%s must set additionalProperties: false", k.Name())
			}
			props, _ := def["properties"].(map[string]any)
			for name, p := range frag.Properties {
				if s, _ := p["description"].(string); strings.TrimSpace(s) == "" {
					t.Errorf("property %q has no description", name)
				}
				pub, ok := props[name]
				if !ok {
					t.Errorf("property %q is missing from $defs/node_%s", name, k.Name())
					continue
				}
				if a, b := canonical(t, p), canonical(t, pub); a != b {
					t.Errorf("property %q differs:\nschema.json: %s\npublished:   %s", name, a, b)
				}
			}
			for name := range props {
				if _, ok := frag.Properties[name]; !ok && !contains(common, name) {
					t.Errorf("$defs/node_%s has property %q that the kind does not declare", k.Name(), name)
				}
			}
			required := map[string]bool{}
			for _, r := range def["required"].([]any) {
				required[r.(string)] = true
			}
			for _, r := range append([]string{"kind"}, frag.Required...) {
				if !required[r] {
					t.Errorf("required %q is missing from $defs/node_%s", r, k.Name())
				}
				if r != "kind" && frag.Properties[r] == nil {
					t.Errorf("required %q is not a property of the kind", r)
				}
			}
		})
	}
}

func canonical(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v) // map keys are sorted
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// schemaProblems walks a schema and reports properties without a
// description and object schemas with properties that accept unknown keys.
// Schemas under "if" are conditions, not shapes, and are skipped; so is the
// node dispatcher, whose branches are checked to be closed instead.
func schemaProblems(doc map[string]any) []string {
	var out []string
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case []any:
			for i, e := range x {
				walk(e, fmt.Sprintf("%s/%d", path, i))
			}
		case map[string]any:
			if props, ok := x["properties"].(map[string]any); ok && path != "#/$defs/node" {
				if x["additionalProperties"] != false && x["unevaluatedProperties"] != false {
					out = append(out, path+": object with properties must set additionalProperties: false")
				}
				names := make([]string, 0, len(props))
				for n := range props {
					names = append(names, n)
				}
				sort.Strings(names)
				for _, n := range names {
					p, _ := props[n].(map[string]any)
					if s, _ := p["description"].(string); strings.TrimSpace(s) == "" {
						out = append(out, fmt.Sprintf("%s/properties/%s has no description", path, n))
					}
				}
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if k == "if" || k == "const" || k == "enum" || k == "default" || k == "examples" {
					continue
				}
				walk(x[k], path+"/"+k)
			}
		}
	}
	walk(doc, "#")
	return out
}

func TestPublishedSchemaIsDescribedAndClosed(t *testing.T) {
	doc := publishedSchema(t)
	for _, p := range schemaProblems(doc) {
		t.Error(p)
	}
	// The node dispatcher leaves closing to its branches: one per kind,
	// each a $ref to a closed definition.
	defs := doc["$defs"].(map[string]any)
	node := defs["node"].(map[string]any)
	branches, _ := node["allOf"].([]any)
	if len(branches) != len(nodes.Kinds()) {
		t.Fatalf("$defs/node has %d branches, want one per kind (%d)", len(branches), len(nodes.Kinds()))
	}
	enum, _ := node["properties"].(map[string]any)["kind"].(map[string]any)["enum"].([]any)
	for i, k := range nodes.Kinds() {
		b := branches[i].(map[string]any)
		ref, _ := b["then"].(map[string]any)["$ref"].(string)
		if ref != "#/$defs/node_"+k.Name() {
			t.Errorf("branch %d refers to %q, want #/$defs/node_%s", i, ref, k.Name())
		}
		if i >= len(enum) || enum[i] != k.Name() {
			t.Errorf("kind enum %v does not list %q at %d", enum, k.Name(), i)
		}
	}
}

// TestSchemaProblemsFinds shows the walk above can fail.
func TestSchemaProblemsFinds(t *testing.T) {
	doc := map[string]any{
		"type": "object", "additionalProperties": false,
		"properties": map[string]any{
			"a": map[string]any{"type": "string"},
			"b": map[string]any{"description": "B", "type": "object", "properties": map[string]any{"c": map[string]any{"description": "C"}}},
		},
		"if": map[string]any{"properties": map[string]any{"x": map[string]any{"const": 1}}},
	}
	got := schemaProblems(doc)
	want := []string{
		"#/properties/a has no description",
		"#/properties/b: object with properties must set additionalProperties: false",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestKindSchemasAgainstYAML runs real node snippets through the loader so
// the published schema and the kinds' decoders cannot drift apart: every
// snippet that should load does, a misspelt field is named, and the "full"
// snippet of each kind uses every property its schema.json declares (add a
// property there and this test asks for an example of it here).
func TestKindSchemasAgainstYAML(t *testing.T) {
	const head = `version: 1
name: t
inputs: {problem: {required: true}, context: {default: ""}}
models: {m: gpt-4o-mini}
templates: {use: [software-design, chain-of-debate]}
verdicts: {v: [YES, NO]}
agents: {a: {name: A}, b: {name: B}}
`
	tests := []struct {
		name string
		kind string // set for the snippet that must use every property
		node string
		want string // "" = loads without diagnostics
	}{
		{"ask minimal", "", `{kind: ask, agents: [a], template: software-design/propose}`, ""},
		{"ask full", "ask", `{kind: ask, agents: [a, b], description: d, template: software-design/critique, system: software-design/system,
          model: m, record: critique, carry_over: critique, each: {record: critique, from: others},
          output: {format: json, schema_ref: software-design/confidence, repair: 1, fallback: {confidence: 0}},
          tools: [search_history], max_tool_calls: 2, summarize: false}`, ""},
		{"ask typo", "", `{kind: ask, agents: [a], template: software-design/propose, recrod: x}`, `"recrod"`},
		{"ask output typo", "", `{kind: ask, agents: [a], template: software-design/propose, output: {format: json, shcema: {}}}`, `"shcema"`},
		{"converse full", "converse", `{kind: converse, agents: [a, b], description: d, speaker: round_robin, reply_to_whisper: 0.5,
          model: m, system: chain-of-debate/system, message: {format: tags, template: chain-of-debate/message},
          verdict: {options: verdicts.v, reasoning: optional, repair: 1, rules: [{check: "msg.content != ''", message: say something}]},
          until: "all(participants, {.withdrawn})", max_turns: 10,
          interject: [{every: 2, when: "turn > 1", template: chain-of-debate/remind, force_verdict: false}],
          watch: [{every: 4, node: w, template: chain-of-debate/watch}]}
  w: {kind: converse, agents: [a, b], message: {template: chain-of-debate/moderate}, verdict: {options: [OK, STOP]}}`, ""},
		{"converse typo", "", `{kind: converse, agents: [a, b], message: {template: chain-of-debate/message}, verdict: {options: verdicts.v}, max_turn: 3}`, `"max_turn"`},
		{"clarify full", "clarify", `{kind: clarify, agents: [a], description: d, template: software-design/clarify, system: software-design/system,
          model: m, max_questions: 3, max_iterations: 2, repair: 1}`, ""},
		{"clarify typo", "", `{kind: clarify, agents: [a], template: software-design/clarify, max_question: 3}`, `"max_question"`},
		{"unknown kind", "", `{kind: vote, agents: [a]}`, `vote`},
	}
	full := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := head + "nodes:\n  n: " + tc.node + "\nflow: [n]\n"
			_, diags := spec.Compile("t.yaml", []byte(src), nodes.Registry())
			switch {
			case tc.want == "" && len(diags) > 0:
				t.Fatalf("expected no diagnostics, got:\n%s", diags.Format())
			case tc.want != "" && !diags.HasErrors():
				t.Fatalf("expected an error naming %s, got none", tc.want)
			case tc.want != "" && !strings.Contains(diags.Format(), tc.want):
				t.Fatalf("expected an error naming %s, got:\n%s", tc.want, diags.Format())
			}
			if tc.kind == "" {
				return
			}
			full[tc.kind] = true
			var doc struct {
				Nodes map[string]map[string]any `yaml:"nodes"`
			}
			if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
				t.Fatal(err)
			}
			k, _ := nodes.Registry().Lookup(tc.kind)
			var frag fragment
			if err := json.Unmarshal(k.Schema(), &frag); err != nil {
				t.Fatal(err)
			}
			for name := range frag.Properties {
				if _, ok := doc.Nodes["n"][name]; !ok {
					t.Errorf("the full %s snippet does not use property %q", tc.kind, name)
				}
			}
		})
	}
	for _, k := range nodes.Kinds() {
		if !full[k.Name()] {
			t.Errorf("no full snippet for kind %s", k.Name())
		}
	}
}
