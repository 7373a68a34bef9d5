package nodes_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/docs"
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

// TestKindSchemasAgainstYAML runs real node snippets through the loader: a
// snippet that should load does, and a misspelt field is named.
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
		node string
		want string // "" = loads without diagnostics
	}{
		{"ask minimal", `{kind: ask, agents: [a], template: software-design/propose}`, ""},
		{"ask typo", `{kind: ask, agents: [a], template: software-design/propose, recrod: x}`, `"recrod"`},
		{"ask output typo", `{kind: ask, agents: [a], template: software-design/propose, output: {format: json, shcema: {}}}`, `"shcema"`},
		{"converse typo", `{kind: converse, agents: [a, b], message: {template: chain-of-debate/message}, verdict: {options: verdicts.v}, max_turn: 3}`, `"max_turn"`},
		{"clarify typo", `{kind: clarify, agents: [a], template: software-design/clarify, max_question: 3}`, `"max_question"`},
		{"compute typo", `{kind: compute, vaule: "1 + 1"}`, `"vaule"`},
		{"unknown kind", `{kind: vote, agents: [a]}`, `vote`},
	}
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
		})
	}
}

// TestKindExamplesCompile: each kind's example spec, kept in its package,
// validates without a diagnostic and uses its kind.
func TestKindExamplesCompile(t *testing.T) {
	for _, k := range nodes.Kinds() {
		t.Run(k.Name(), func(t *testing.T) {
			plan, diags := spec.Compile(k.Name()+"-example.yaml", []byte(k.Example()), nodes.Registry())
			if len(diags) > 0 {
				t.Fatalf("the example of kind %s must validate without diagnostics:\n%s", k.Name(), diags.Format())
			}
			used := false
			for _, n := range plan.Nodes {
				used = used || n.Kind == k.Name()
			}
			if !used {
				t.Errorf("the example of kind %s has no node of that kind", k.Name())
			}
		})
	}
}

// TestKindConfigsDecodeEverySchemaProperty proves, for every kind, that
// each property its schema.json declares (nested ones too) is decoded into
// its YAML form: a sample value of the property alone, decoded strictly
// into NewConfig(), must be accepted and must change the decoded value.
// Dropping or renaming a field of the YAML form, or adding a property to the
// schema that nothing decodes, fails here.
func TestKindConfigsDecodeEverySchemaProperty(t *testing.T) {
	for _, k := range nodes.Kinds() {
		t.Run(k.Name(), func(t *testing.T) {
			var frag map[string]any
			if err := json.Unmarshal(k.Schema(), &frag); err != nil {
				t.Fatal(err)
			}
			paths := propertyPaths(frag, nil)
			if len(paths) == 0 {
				t.Fatal("the schema declares no properties")
			}
			for _, path := range paths {
				doc := sampleAt(frag, path)
				text, err := yaml.Marshal(doc)
				if err != nil {
					t.Fatal(err)
				}
				cfg := k.NewConfig()
				dec := yaml.NewDecoder(bytes.NewReader(text))
				dec.KnownFields(true)
				if err := dec.Decode(cfg); err != nil {
					t.Errorf("property %s: %s does not decode into %T: %v", strings.Join(path, "."), strings.TrimSpace(string(text)), cfg, err)
					continue
				}
				if reflect.DeepEqual(cfg, k.NewConfig()) {
					t.Errorf("property %s: %s decodes into nothing of %T", strings.Join(path, "."), strings.TrimSpace(string(text)), cfg)
				}
			}
		})
	}
}

// propertyPaths lists the paths to every property of an object schema, and
// of the objects nested in it (through items of lists, too).
func propertyPaths(schema map[string]any, prefix []string) [][]string {
	var out [][]string
	props, _ := schema["properties"].(map[string]any)
	for _, name := range sortedKeys(props) {
		p := append(append([]string(nil), prefix...), name)
		out = append(out, p)
		sub, _ := props[name].(map[string]any)
		if items, ok := sub["items"].(map[string]any); ok {
			sub = items
		}
		if sub != nil {
			out = append(out, propertyPaths(sub, p)...)
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sampleAt builds a document holding a sample value at path and, on the
// way, what the schemas along it require of an object.
func sampleAt(schema map[string]any, path []string) map[string]any {
	props, _ := schema["properties"].(map[string]any)
	sub, _ := props[path[0]].(map[string]any)
	doc := map[string]any{}
	if len(path) == 1 {
		doc[path[0]] = sampleValue(sub)
		return doc
	}
	if items, ok := sub["items"].(map[string]any); ok {
		doc[path[0]] = []any{sampleAt(items, path[1:])}
		return doc
	}
	doc[path[0]] = sampleAt(sub, path[1:])
	return doc
}

// sampleValue is a value a schema accepts, never the zero value of its type.
func sampleValue(s map[string]any) any {
	if v, ok := s["const"]; ok {
		return v
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[len(e)-1]
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[key].([]any); ok && len(alts) > 0 {
			if a, ok := alts[0].(map[string]any); ok {
				return sampleValue(a)
			}
		}
	}
	ty := s["type"]
	if list, ok := ty.([]any); ok && len(list) > 0 {
		ty = list[0]
	}
	switch ty {
	case "string":
		return "x"
	case "integer":
		if m, ok := s["minimum"].(float64); ok && m > 1 {
			return int(m)
		}
		return 1
	case "number":
		return 0.5
	case "boolean":
		return true
	case "array":
		items, _ := s["items"].(map[string]any)
		return []any{sampleValue(items)}
	}
	// An object: one sample entry of its open part, or of its first
	// property.
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		return map[string]any{"x": sampleValue(ap)}
	}
	if props, ok := s["properties"].(map[string]any); ok && len(props) > 0 {
		k := sortedKeys(props)[0]
		p, _ := props[k].(map[string]any)
		return map[string]any{k: sampleValue(p)}
	}
	return map[string]any{"x": "y"}
}

// TestManualDescribesPromptData keeps the manual's "What a template sees" in
// step with the kinds' prompt data: every field a kind's templates can read
// has a row naming that kind (or "every prompt", for the fields all share),
// or, for a kind's own fields, is named (`.Field`) in the kind's section of
// docs/node-kinds.md, which its manual.md writes.
func TestManualDescribesPromptData(t *testing.T) {
	section, err := docs.Section("templates.md", "What a template sees")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{} // field -> the "in" column
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 {
			continue
		}
		for _, f := range strings.Split(cells[1], ",") {
			rows[strings.Trim(strings.TrimSpace(f), "`.")] = strings.TrimSpace(cells[3])
		}
	}
	base := map[string]bool{}
	for _, f := range reflect.VisibleFields(reflect.TypeOf(value.PromptBase{})) {
		base[f.Name] = true
		if in, ok := rows[f.Name]; !ok || in != "every prompt" {
			t.Errorf("docs/templates.md does not list .%s as in every prompt (row: %q)", f.Name, in)
		}
	}
	for _, k := range nodes.Kinds() {
		d := k.PromptData()
		if d == nil {
			continue
		}
		// A kind may describe its own fields in its section instead.
		own, err := docs.Section("node-kinds.md", "kind: "+k.Name())
		if err != nil {
			t.Error(err)
		}
		for _, f := range reflect.VisibleFields(reflect.TypeOf(d)) {
			if f.Anonymous || base[f.Name] || !f.IsExported() {
				continue
			}
			if in := rows[f.Name]; !strings.Contains(in, k.Name()) && !strings.Contains(own, "`."+f.Name) {
				t.Errorf("neither docs/templates.md (row: %q) nor the kind's section of docs/node-kinds.md (nodes/%s/manual.md) describes .%s of %s prompts", in, k.Name(), f.Name, k.Name())
			}
		}
	}
}
