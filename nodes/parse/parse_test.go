package parse

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

func mustSchema(t *testing.T, src string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem:///s.json", strings.NewReader(src)); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem:///s.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParse(t *testing.T) {
	confidence := mustSchema(t, `{"type":"object","required":["confidence"],"properties":{"confidence":{"type":"integer","minimum":0,"maximum":100}}}`)
	tests := []struct {
		name    string
		spec    Spec
		reply   string
		want    any
		wantErr string
	}{
		{"text trims", Spec{}, "  hello \n", "hello", ""},
		{"text empty", Spec{Format: "text"}, " \n ", nil, "the reply is empty"},
		{"json plain", Spec{Format: "json"}, `{"a": 1}`, map[string]any{"a": 1.0}, ""},
		{"json fenced", Spec{Format: "json"}, "Here:\n```json\n{\"a\": [1, 2]}\n```\nDone.", map[string]any{"a": []any{1.0, 2.0}}, ""},
		{"json embedded in prose", Spec{Format: "json"}, `My rating is {"confidence": 80} overall.`, map[string]any{"confidence": 80.0}, ""},
		{"json list", Spec{Format: "json"}, `[1, "x"]`, []any{1.0, "x"}, ""},
		{"json invalid", Spec{Format: "json"}, `{"a": }`, nil, "not valid JSON"},
		{"json no json", Spec{Format: "json"}, `I cannot rate this.`, nil, "not valid JSON"},
		{"json schema ok", Spec{Format: "json", Schema: confidence}, `{"confidence": 85}`, map[string]any{"confidence": 85.0}, ""},
		{"json schema violated", Spec{Format: "json", Schema: confidence}, `{"confidence": 150}`, nil, "/confidence"},
		{"json schema missing field", Spec{Format: "json", Schema: confidence}, `{"score": 1}`, nil, "confidence"},
		{"tags", Spec{Format: "tags", Fields: []string{"Verdict", "Reason"}}, "<verdict>YES</verdict>\n<Reason>because</Reason>", map[string]any{"verdict": "YES", "reason": "because"}, ""},
		{"tags missing", Spec{Format: "tags", Fields: []string{"Verdict", "Reason"}}, "<Verdict>YES</Verdict>", nil, "<Reason>"},
		{"regex last match wins", Spec{Format: "regex", Pattern: regexp.MustCompile(`\\boxed\{([^}]*)\}`)}, `first \boxed{3}, then corrected: \boxed{42}`, "42", ""},
		{"regex named groups", Spec{Format: "regex", Pattern: regexp.MustCompile(`(?P<verdict>YES|NO) \((?P<score>\d+)\)`)}, "NO (3)", map[string]any{"verdict": "NO", "score": "3"}, ""},
		{"regex no group", Spec{Format: "regex", Pattern: regexp.MustCompile(`\d+`)}, "a 12 b", "12", ""},
		{"regex no match", Spec{Format: "regex", Pattern: regexp.MustCompile(`\\boxed\{([^}]*)\}`)}, "the answer is 4", nil, "required form"},
		{"unknown format", Spec{Format: "yaml"}, "x", nil, "unknown output format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.spec.Parse(tt.reply)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(out.Value, tt.want) {
				t.Errorf("value = %#v, want %#v", out.Value, tt.want)
			}
		})
	}
}

func TestRepairPrompt(t *testing.T) {
	got := RepairPrompt("json", errors.New("the reply is not valid JSON (x)"))
	for _, want := range []string{"could not be used", "not valid JSON (x)", "only the corrected JSON"} {
		if !strings.Contains(got, want) {
			t.Errorf("repair prompt %q lacks %q", got, want)
		}
	}
	if !strings.Contains(RepairPrompt("text", errors.New("e")), "Reply again.") {
		t.Error("text repair prompt")
	}
}
