package kit

import (
	"strings"
	"testing"

	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/value"
)

func TestCheckOutput(t *testing.T) {
	obj := spec.ObjectOf(
		spec.Field{Name: "score", Type: spec.TypeInt},
		spec.Field{Name: "tags", Type: spec.ListOf(spec.TypeString)},
		spec.Field{Name: "ok", Type: spec.TypeBool},
	)
	for _, tc := range []struct {
		name      string
		out, per  *spec.Type
		res       value.NodeResult
		wantError string // "" passes
	}{
		{name: "any takes anything", res: value.NodeResult{Output: struct{}{}}},
		{name: "object as declared", out: obj, res: value.NodeResult{Output: map[string]any{"score": 3.0, "tags": []any{"a"}, "ok": true, "extra": 1}}},
		{name: "missing property passes", out: obj, res: value.NodeResult{Output: map[string]any{"score": 3}}},
		{name: "fractional integer", out: obj, res: value.NodeResult{Output: map[string]any{"score": 2.5}}, wantError: "output.score is float64, declared integer"},
		{name: "list element", out: obj, res: value.NodeResult{Output: map[string]any{"tags": []any{"a", 1}}}, wantError: "output.tags[1] is int, declared string"},
		{name: "text for an object", out: obj, res: value.NodeResult{Output: "hello"}, wantError: "output is string, declared object"},
		{name: "per agent", out: spec.MapOf(spec.TypeString), per: spec.TypeFloat,
			res: value.NodeResult{Output: map[string]any{"a": "x"}, Outputs: map[string]any{"a": "x"}}, wantError: "outputs.a is string, declared number"},
		{name: "per agent defaults to output", out: spec.TypeBool, res: value.NodeResult{Output: true, Outputs: map[string]any{"a": 1}}, wantError: "outputs.a is int, declared boolean"},
	} {
		err := CheckOutput(&spec.NodePlan{ID: "n", Kind: "k", Output: tc.out, Outputs: tc.per}, tc.res)
		switch {
		case tc.wantError == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantError != "" && (err == nil || !strings.Contains(err.Error(), tc.wantError)):
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.wantError)
		}
	}
}
