package args

import (
	"reflect"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/spec"
)

func TestResolveValues(t *testing.T) {
	plan := runtest.RoundsPlan(t, "0.7")
	in, err := Inputs(plan, nil, map[string]any{"question": "@not-a-file"})
	if err != nil || in["question"] != "@not-a-file" {
		t.Errorf("a value starting with @ = %v, %v; want it kept as text", in, err)
	}
	if _, err := Inputs(plan, []string{"question=x"}, map[string]any{"question": "y"}); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("flag and value for one input: %v", err)
	}
	vars, err := Vars(plan, []string{"max_rounds=4"}, map[string]any{"max_rounds": 3.0})
	if err != nil || vars["max_rounds"] != 4 {
		t.Errorf("--set over a value: %v, %v", vars, err)
	}
	vars, err = Vars(plan, nil, map[string]any{"max_rounds": 3.0, "gone": 1})
	if err != nil || vars["max_rounds"] != 3 {
		t.Errorf("recorded value: %#v, %v; want int 3", vars, err)
	}
}

// A list var's --set items, and its recorded (JSON-decoded) items, have the
// type of the default's items: a list of integers stays one.
func TestListVarsKeepTheirItemType(t *testing.T) {
	plan := &spec.Plan{Vars: []*spec.VarPlan{
		{Name: "sizes", Default: []any{1, 2}},
		{Name: "temps", Default: []any{0.5, 1}},
		{Name: "flags", Default: []any{true}},
		{Name: "names", Default: []any{"a", 1}},
		{Name: "empty", Default: []any{}},
	}}
	vars, err := Vars(plan, []string{"sizes=3, 3,4", "temps=1,0.25", "flags=false,true", "names=x,2", "empty=p,q"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"sizes": []any{3, 3, 4}, "temps": []any{1.0, 0.25}, "flags": []any{false, true},
		"names": []any{"x", "2"}, "empty": []any{"p", "q"},
	}
	if !reflect.DeepEqual(vars, want) {
		t.Errorf("--set lists = %#v\nwant %#v", vars, want)
	}
	if _, err := Vars(plan, []string{"sizes=3,x"}, nil); err == nil || !strings.Contains(err.Error(), `--set sizes: item 2: "x" is not an integer`) {
		t.Errorf("a list item of the wrong type: %v", err)
	}
	vars, err = Vars(plan, nil, map[string]any{"sizes": []any{3.0, 4.0}})
	if err != nil || !reflect.DeepEqual(vars["sizes"], []any{3, 4}) {
		t.Errorf("recorded list = %#v, %v; want ints", vars["sizes"], err)
	}
}

// Inputs are text unless their default says otherwise: then a dataset's
// value (a CSV's text, a JSON number) and a flag's are of the default's type.
func TestInputsOfTheDefaultsType(t *testing.T) {
	plan := &spec.Plan{Inputs: []*spec.InputPlan{
		{Name: "n", Default: 0, HasDefault: true},
		{Name: "question", Required: true},
	}}
	in, err := Inputs(plan, []string{"question=3"}, map[string]any{"n": "4"})
	if err != nil || in["n"] != 4 || in["question"] != "3" {
		t.Errorf("CSV value = %#v, %v; want n the integer 4, question the text 3", in, err)
	}
	in, err = Inputs(plan, []string{"question=q"}, map[string]any{"n": 5.0})
	if err != nil || in["n"] != 5 {
		t.Errorf("JSON value = %#v, %v; want the integer 5", in, err)
	}
	in, err = ResolveInputs(plan, []string{"question=q", "n=6"})
	if err != nil || in["n"] != 6 {
		t.Errorf("flag = %#v, %v; want the integer 6", in, err)
	}
	if _, err := Inputs(plan, []string{"question=q"}, map[string]any{"n": "six"}); err == nil || !strings.Contains(err.Error(), "input n") {
		t.Errorf("a value of the wrong type: %v", err)
	}
}
