package spec_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec/syntax"
)

// TestSpecSchemaMeansTheSameInDraft7 holds the spec schema to what lets
// the runner compile it as draft-07 (see syntax.Draft7Keywords): keywords
// that mean the same in both drafts, no $ref beside an assertion, items as
// one schema. It checks the published schema against draft 2020-12's
// meta-schema, which a run no longer does, and that both drafts find the
// same failures in every spec under testdata and ../examples.
func TestSpecSchemaMeansTheSameInDraft7(t *testing.T) {
	data, err := nodes.Registry().Schema()
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	checkDraft7Schema(t, "#", doc)

	compile := func(draft *jsonschema.Draft, src []byte) *jsonschema.Schema {
		t.Helper()
		c := jsonschema.NewCompiler()
		c.Draft = draft
		c.AssertFormat = true
		if err := c.AddResource("mem:///spec.schema.json", bytes.NewReader(src)); err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile("mem:///spec.schema.json")
		if err != nil {
			t.Fatalf("compiling the spec schema as %s: %v", draft, err)
		}
		return s
	}
	as2020 := compile(jsonschema.Draft2020, data)
	m := doc.(map[string]any)
	m["$schema"] = "http://json-schema.org/draft-07/schema#"
	d7, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	as7 := compile(jsonschema.Draft7, d7)

	var files []string
	for _, pattern := range []string{"testdata/*/*.yaml", "testdata/*/*/*.yaml", "../examples/*/*.yaml"} {
		found, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, found...)
	}
	if len(files) < 100 {
		t.Fatalf("found %d spec files, want the testdata's and the examples'", len(files))
	}
	invalid := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var root yaml.Node
		if yaml.Unmarshal(src, &root) != nil || len(root.Content) == 0 {
			continue
		}
		loc := syntax.YAMLToJSON(&syntax.Reporter{Src: syntax.NewSource(f, src)}, &root)
		want, got := failures(as2020.Validate(loc.Value)), failures(as7.Validate(loc.Value))
		if !slices.Equal(want, got) {
			t.Errorf("%s: draft 2020-12 finds %q, draft-07 %q", f, want, got)
		}
		if len(want) > 0 {
			invalid++
		}
	}
	if invalid < 20 {
		t.Errorf("only %d of %d files fail the schema; the comparison needs failures to compare", invalid, len(files))
	}
}

// failures lists a validation error's leaves as "instance keyword".
func failures(err error) []string {
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{err.Error()}
	}
	var out []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, fmt.Sprintf("%s %s: %s", e.InstanceLocation, e.KeywordLocation, e.Message))
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.Sort(out)
	return out
}

// checkDraft7Schema checks one schema of the spec schema, at path, and the
// schemas within it.
func checkDraft7Schema(t *testing.T, path string, v any) {
	t.Helper()
	s, ok := v.(map[string]any)
	if !ok {
		if _, isBool := v.(bool); !isBool {
			t.Errorf("%s: a schema is an object or a boolean, got %T", path, v)
		}
		return
	}
	for k, sub := range s {
		at := path + "/" + k
		if !syntax.Draft7Keywords[k] {
			t.Errorf("%s: keyword %q may not mean in draft-07 what it means in 2020-12; add it to syntax.Draft7Keywords only if it does", at, k)
			continue
		}
		switch k {
		case "$ref":
			for sib := range s {
				switch sib {
				case "$ref", "description", "title", "default", "examples", "$comment":
				default:
					t.Errorf("%s: %q beside $ref is ignored in draft-07", path, sib)
				}
			}
		case "properties", "$defs", "patternProperties":
			for name, p := range sub.(map[string]any) {
				checkDraft7Schema(t, at+"/"+name, p)
			}
		case "items":
			if _, isList := sub.([]any); isList {
				t.Errorf("%s: items as a list is a tuple in draft-07 and prefixItems in 2020-12", at)
				continue
			}
			checkDraft7Schema(t, at, sub)
		case "additionalProperties", "propertyNames", "not", "if", "then", "else", "contains":
			checkDraft7Schema(t, at, sub)
		case "allOf", "anyOf", "oneOf":
			for i, p := range sub.([]any) {
				checkDraft7Schema(t, fmt.Sprintf("%s/%d", at, i), p)
			}
		}
	}
}
