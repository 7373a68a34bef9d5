package spec

import (
	"reflect"
	"testing"

	"github.com/debate-runner/runner/spec/value"

	"github.com/expr-lang/expr"
)

func TestEnvMapEmpty(t *testing.T) {
	m := (&Env{}).Map()
	// Every name exists even when nothing ran yet, with an empty value of
	// the type the runtime fills in: expressions compiled against this
	// shape must find the same names at run time.
	want := map[string]any{
		"inputs":   map[string]any{},
		"vars":     map[string]any{},
		"nodes":    map[string]value.NodeResult{},
		"goals":    []value.GoalView{},
		"verdicts": map[string][]string{},
		"messages": []value.Message{},
		"round":    0,
		"goal":     value.GoalView{},
		"loop":     map[string]any{},
	}
	for k, v := range want {
		got, ok := m[k]
		if !ok {
			t.Errorf("name %q missing", k)
			continue
		}
		if !reflect.DeepEqual(got, v) {
			t.Errorf("%s = %#v, want %#v", k, got, v)
		}
		if rv := reflect.ValueOf(got); (rv.Kind() == reflect.Map || rv.Kind() == reflect.Slice) && rv.IsNil() {
			t.Errorf("%s is nil; expressions would see nil instead of an empty value", k)
		}
	}
	if _, ok := m["latest"].(func(string) []value.Message); !ok {
		t.Errorf("latest is %T", m["latest"])
	}
}

func TestEnvMapLoopAndExtra(t *testing.T) {
	e := &Env{
		Round: 2,
		Goal:  value.GoalView{ID: "cost"},
		Loop:  map[string]any{"round": 2, "goal": "ignored", "item": "apple", "step": 3},
		Extra: map[string]any{"turn": 4, "participants": []value.Participant{{ID: "a"}}},
	}
	m := e.Map()
	if m["item"] != "apple" || m["step"] != 3 {
		t.Errorf("loop names not visible at top level: item=%v step=%v", m["item"], m["step"])
	}
	if g, ok := m["goal"].(value.GoalView); !ok || g.ID != "cost" {
		t.Errorf("a loop name must not shadow a built-in name: goal = %#v", m["goal"])
	}
	if m["loop"].(map[string]any)["goal"] != "ignored" {
		t.Errorf("loop map lost an entry: %#v", m["loop"])
	}
	if m["turn"] != 4 || len(m["participants"].([]value.Participant)) != 1 {
		t.Errorf("extra names missing: %#v", m)
	}
}

// evalExpr compiles src against env's map, with the spec's functions, and
// runs it.
func evalExpr(t *testing.T, env *Env, src string) any {
	t.Helper()
	m := env.Map()
	prog, err := expr.Compile(src, append([]expr.Option{expr.Env(m)}, exprFunctions...)...)
	if err != nil {
		t.Fatalf("compile %q: %v", src, err)
	}
	out, err := expr.Run(prog, m)
	if err != nil {
		t.Fatalf("run %q: %v", src, err)
	}
	return out
}

func TestEnvExpressions(t *testing.T) {
	env := &Env{
		Inputs:   map[string]any{"question": "2+2?"},
		Vars:     map[string]any{"rounds": 3, "labels": []string{"x", "y", "x"}},
		Nodes:    map[string]value.NodeResult{"evaluate": {Output: map[string]any{"confidence": 90}, Calls: 2}},
		Goals:    []value.GoalView{{ID: "cost", Index: 1, Count: 2}, {ID: "risk", Index: 2, Count: 2}},
		Verdicts: map[string][]string{"hiring": {"HIRE", "REJECT"}},
		Messages: []value.Message{
			{From: "a", Record: "answer", Round: 1, Output: "4"},
			{From: "b", Record: "answer", Round: 1, Output: "5"},
			{From: "a", Record: "critique", Round: 1, Output: "b is wrong"},
			{From: "c", Record: "answer", Round: 1, Output: "4"},
			{From: "b", Record: "answer", Round: 2, Output: "4"},
		},
		Round: 2,
		Goal:  value.GoalView{ID: "risk", Index: 2},
	}
	tests := []struct {
		src  string
		want any
	}{
		{`inputs.question`, "2+2?"},
		{`vars.rounds + 1`, 4},
		{`nodes.evaluate.output.confidence >= 85`, true},
		{`nodes.evaluate.calls`, 2},
		{`goals[1].id`, "risk"},
		{`goal.index == len(goals)`, true},
		{`"HIRE" in verdicts.hiring`, true},
		{`len(messages)`, 5},
		{`round`, 2},
		// latest keeps each author's last message of a record, in the
		// order authors first appear
		{`map(latest("answer"), .from + ":" + .output)`, []any{"a:4", "b:4", "c:4"}},
		{`len(latest("critique"))`, 1},
		{`len(latest("nothing"))`, 0},
		{`mode(map(latest("answer"), .output))`, "4"},
		{`mode(map(messages, .output))`, "4"},
		{`counts(map(latest("answer"), .output))`, map[string]any{"4": 3}},
		{`counts(map(messages, .from))`, map[string]any{"a": 2, "b": 2, "c": 1}},
		// a list typed "any" at compile time may be a []string at run time
		{`mode(vars.labels)`, "x"},
		{`counts(vars.labels)`, map[string]any{"x": 2, "y": 1}},
	}
	for _, tc := range tests {
		if got := evalExpr(t, env, tc.src); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s = %#v, want %#v", tc.src, got, tc.want)
		}
	}
}

func TestModeAndCountsRejectNonLists(t *testing.T) {
	env := &Env{Vars: map[string]any{"n": 3}}
	m := env.Map()
	for _, src := range []string{`mode(vars.n)`, `counts(vars.n)`} {
		prog, err := expr.Compile(src, append([]expr.Option{expr.Env(m)}, exprFunctions...)...)
		if err != nil {
			t.Fatalf("compile %q: %v", src, err)
		}
		if _, err := expr.Run(prog, m); err == nil {
			t.Errorf("%s: no error for a number", src)
		}
	}
}
