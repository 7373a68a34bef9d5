package args

import (
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/runtest"
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
