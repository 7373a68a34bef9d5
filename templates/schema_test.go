package templates_test

import (
	"encoding/json"
	"io/fs"
	"strings"
	"testing"

	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/templates"
)

func TestOutputSchemas(t *testing.T) {
	const full = `"solution_markdown": "# Design", "tradeoffs": ["t"], "recommendations": ["r"], "open_questions": []`
	tests := []struct {
		schema string
		doc    string
		valid  bool
	}{
		{"software-design/solution", `{` + full + `, "unmet_requirements": [], "confidence": 90}`, true},
		{"software-design/solution", `{` + full + `, "unmet_requirements": ["no offline mode"], "confidence": 40}`, true},
		{"software-design/solution", `{` + full + `, "unmet_requirements": ["no offline mode"], "confidence": 41}`, false},
		{"software-design/solution", `{` + full + `, "unmet_requirements": ["no offline mode"], "confidence": 85}`, false},
		{"software-design/solution", `{` + full + `, "unmet_requirements": [], "confidence": 101}`, false},
		{"software-design/solution", `{` + full + `, "unmet_requirements": [], "confidence": -1}`, false},
		{"software-design/solution", `{` + full + `, "unmet_requirements": [], "confidence": 77.5}`, false},
		{"software-design/solution", `{` + full + `, "unmet_requirements": [], "confidence": "90"}`, false},
		{"software-design/solution", `{` + full + `, "confidence": 90}`, false},
		{"software-design/solution", `{"solution_markdown": "", "tradeoffs": [], "recommendations": [], "open_questions": [], "unmet_requirements": [], "confidence": 50}`, false},
		{"software-design/solution", `{` + full + `, "unmet_requirements": [""], "confidence": 10}`, false},
		{"software-design/solution", `{` + full + `, "unmet_requirements": [], "confidence": 90, "notes": "extra fields are tolerated"}`, true},
		{"software-design/confidence", `{"confidence": 85, "reason": "converged"}`, true},
		{"software-design/confidence", `{"confidence": 0}`, true},
		{"software-design/confidence", `{"reason": "no score"}`, false},
		{"software-design/confidence", `{"confidence": 150}`, false},
		{"software-design/confidence", `{"confidence": "high"}`, false},
		{"reasoning/answer", `{"answer": "42"}`, true},
		{"reasoning/answer", `{"answer": 42}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.schema+" "+tc.doc, func(t *testing.T) {
			data, err := fs.ReadFile(templates.FS(), tc.schema+".schema.json")
			if err != nil {
				t.Fatal(err)
			}
			sch, err := spec.CompileJSONSchema(tc.schema, data)
			if err != nil {
				t.Fatalf("compiling %s: %v", tc.schema, err)
			}
			var v any
			if err := json.Unmarshal([]byte(tc.doc), &v); err != nil {
				t.Fatal(err)
			}
			err = sch.Validate(v)
			if (err == nil) != tc.valid {
				t.Fatalf("valid = %v, want %v (error: %v)", err == nil, tc.valid, err)
			}
		})
	}
}

// TestSchemasDescribeEveryProperty keeps the library schemas readable for
// people writing prompts against them.
func TestSchemasDescribeEveryProperty(t *testing.T) {
	err := fs.WalkDir(templates.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(path, ".schema.json") {
			return err
		}
		data, err := fs.ReadFile(templates.FS(), path)
		if err != nil {
			return err
		}
		var doc struct {
			Schema     string                    `json:"$schema"`
			Properties map[string]map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		if doc.Schema != "https://json-schema.org/draft/2020-12/schema" {
			t.Errorf("%s: $schema is %q, want draft 2020-12", path, doc.Schema)
		}
		for name, p := range doc.Properties {
			if s, _ := p["description"].(string); s == "" {
				t.Errorf("%s: property %q has no description", path, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
