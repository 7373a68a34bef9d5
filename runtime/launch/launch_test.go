package launch

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/result"
)

const listSpec = `version: 1
name: lists
inputs:
  question: {required: true}
vars:
  stages: [1, 2]
  rounds: 2
defaults: {seed: 7}
budget: {max_calls: 50}
templates:
  define: {q: "{{.Inputs.question}}"}
agents:
  a: {name: A}
nodes:
  answer: {kind: ask, agents: [a], template: q, record: answer}
flow:
  - foreach: {as: n, in: vars.stages, do: [{loop: {as: round, max: n, do: [answer]}}]}
outputs:
  last: latest("answer")
`

func TestPrepare(t *testing.T) {
	plan := runtest.LoadPlan(t, runtest.WriteSpec(t, t.TempDir(), listSpec))
	v, err := Prepare(plan, Given{
		Inputs: []string{"question=Why?"}, Sets: []string{"stages=3,4"},
		VarValues: map[string]any{"rounds": 5.0, "stages": []any{9.0}}, Budget: []string{"calls=10"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"stages": []any{3, 4}, "rounds": 5}
	if !reflect.DeepEqual(v.Vars, want) || v.Inputs["question"] != "Why?" {
		t.Errorf("values = %#v, %#v; want vars %#v", v.Inputs, v.Vars, want)
	}
	if v.Seed != 7 || v.Plan == nil || v.Budget == nil || *v.Budget.MaxCalls != 10 {
		t.Errorf("seed %d, plan %v, budget %+v; want the spec's seed 7 and calls=10", v.Seed, v.Plan, v.Budget)
	}
	seed := int64(3)
	if v, err := Prepare(plan, Given{Inputs: []string{"question=q"}, Seed: &seed}); err != nil || v.Seed != 3 || *v.Budget.MaxCalls != 50 {
		t.Errorf("given seed: %+v, %v; want seed 3 and the spec's budget", v, err)
	}
	for _, c := range []struct {
		given Given
		flag  string
	}{
		{Given{}, "--input"},
		{Given{Inputs: []string{"question=q"}, Sets: []string{"stages=1,x"}}, "--set stages"},
		{Given{Inputs: []string{"question=q"}, Budget: []string{"cost=lots"}}, "--budget"},
		{Given{Inputs: []string{"question=q"}, Models: map[string]string{"nope": "m"}}, "--model"},
	} {
		_, err := Prepare(plan, c.given)
		var fe *args.FlagError
		if !errors.As(err, &fe) || !strings.HasPrefix(fe.Flag, c.flag) {
			t.Errorf("Prepare(%+v) = %v; want an error naming %s", c.given, err, c.flag)
		}
	}
}

// A Preparer specialises the plan once per combination of vars and models.
func TestPreparerReusesPlans(t *testing.T) {
	plan := runtest.LoadPlan(t, runtest.WriteSpec(t, t.TempDir(), listSpec))
	var p Preparer
	models := map[string]string{"default": "other-model"}
	a, err := p.Prepare(plan, Given{Inputs: []string{"question=1"}, Models: models})
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Prepare(plan, Given{InputValues: map[string]any{"question": "2"}, Models: models})
	if err != nil {
		t.Fatal(err)
	}
	if a.Plan == plan || a.Plan != b.Plan || a.Plan.Models["default"].Model != "other-model" {
		t.Errorf("plans %p %p (spec's %p); want one specialised plan for both", a.Plan, b.Plan, plan)
	}
	if b.Inputs["question"] != "2" {
		t.Errorf("inputs = %v", b.Inputs)
	}
}

// A replay takes the recording's values for those not given: inputs given
// as flags win, --set flags apply over the recorded vars, and a given seed
// or model stays.
func TestDefaultTo(t *testing.T) {
	plan := runtest.LoadPlan(t, runtest.WriteSpec(t, t.TempDir(), listSpec))
	m := result.Manifest{
		Inputs: map[string]any{"question": "recorded?", "gone": "x"}, Vars: map[string]any{"stages": []any{2.0, 2.0}, "rounds": 3.0},
		Seed: 42, ModelOverrides: map[string]string{"default": "recorded-model"},
	}
	g := Given{Sets: []string{"rounds=4"}}
	g.DefaultTo(plan, m)
	v, err := Prepare(plan, g)
	if err != nil {
		t.Fatal(err)
	}
	if v.Inputs["question"] != "recorded?" || v.Seed != 42 || v.Models["default"] != "recorded-model" {
		t.Errorf("values = %+v; want the recording's input, seed and model", v)
	}
	if want := map[string]any{"stages": []any{2, 2}, "rounds": 4}; !reflect.DeepEqual(v.Vars, want) {
		t.Errorf("vars = %#v; want %#v (recorded, typed, --set over them)", v.Vars, want)
	}
	seed := int64(5)
	g = Given{Inputs: []string{"question=mine"}, Seed: &seed}
	g.DefaultTo(plan, m)
	if _, ok := g.InputValues["question"]; ok || *g.Seed != 5 {
		t.Errorf("given = %+v; the flag's input and the given seed must win", g)
	}
}
