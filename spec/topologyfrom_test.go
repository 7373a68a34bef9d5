package spec_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

const topologyVarSpec = `version: 1
name: shapes
vars:
  shape: ring
  custom: {e_1: [e_2], e_2: [e_1, e_3]}
agents:
  d: {replicas: 4, topology: {from: vars.shape}}
  e: {replicas: 3, topology: {from: vars.custom}}
nodes:
  ask: {kind: ask, agents: [d], template: t}
templates:
  define:
    t: "{{range .Agent.Neighbours}}{{.}} {{end}}"
flow: [ask]
`

// TestTopologyFromVar: topology: {from: EXPR} takes its shape (or its
// adjacency list) from a var, so that a run's --set (and each run of a
// --matrix) compiles the spec again with its own topology; a value that is
// no topology is reported at the expression, and by the flag's run.
func TestTopologyFromVar(t *testing.T) {
	plan, diags := spec.Compile("shapes.yaml", []byte(topologyVarSpec), nodes.Registry())
	if diags.HasErrors() {
		t.Fatal(diags.Format())
	}
	neighbours := func(p *spec.Plan, group string) [][]string {
		var out [][]string
		for _, a := range p.Groups[group] {
			out = append(out, a.Neighbours)
		}
		return out
	}
	if got := neighbours(plan, "d"); !slices.Equal(got[0], []string{"d_4", "d_2"}) || !slices.Equal(got[2], []string{"d_2", "d_4"}) {
		t.Errorf("ring by default: %v", got)
	}
	if got := neighbours(plan, "e"); !slices.Equal(got[1], []string{"e_1", "e_3"}) || len(got[2]) != 0 {
		t.Errorf("adjacency from a var: %v", got)
	}
	if !slices.Contains(plan.ReplicaVars, "shape") || !slices.Contains(plan.ReplicaVars, "custom") {
		t.Errorf("the topology's vars are not among those that recompile the spec: %v", plan.ReplicaVars)
	}
	star, err := plan.Specialize(map[string]any{"shape": "star"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := neighbours(star, "d"); !slices.Equal(got[0], []string{"d_2", "d_3", "d_4"}) || !slices.Equal(got[3], []string{"d_1"}) {
		t.Errorf("--set shape=star: %v", got)
	}
	if _, err := plan.Specialize(map[string]any{"shape": "hexagon"}, nil); err == nil || !strings.Contains(err.Error(), `shapes.yaml:7:37: error: agent "d": unknown topology "hexagon"`) {
		t.Errorf("--set shape=hexagon: %v", err)
	}
	for _, tc := range []struct{ old, new, want string }{
		{"shape: ring", "shape: rnig", `shapes.yaml:7:37: error: agent "d": unknown topology "rnig" (one of complete, ring, star, tree, or a mapping of agent id to the ids it hears) (did you mean "ring"?)`},
		{"shape: ring", "shape: 3", `shapes.yaml:7:37: error: agent "d": topology from vars.shape gives 3 (int); it must give one of complete, ring, star, tree`},
		{"{from: vars.shape}", "{from: vars.shpe}", `shapes.yaml:7:37: error: agent "d": topology from vars.shpe: the spec has no var "shpe" (did you mean "shape"?)`},
		{"custom: {e_1: [e_2], e_2: [e_1, e_3]}", "custom: {e_1: [x_9]}", `shapes.yaml:8:37: error: agent "e": topology: "e_1" hears "x_9", which is not one of its agents`},
		{"custom: {e_1: [e_2], e_2: [e_1, e_3]}", "custom: {e_1: e_2}", `agent "e": topology from vars.custom: "e_1" hears e_2; give a list of agent ids`},
	} {
		_, diags := spec.Compile("shapes.yaml", []byte(strings.Replace(topologyVarSpec, tc.old, tc.new, 1)), nodes.Registry())
		if got := diags.Format(); !strings.Contains(got, tc.want) {
			t.Errorf("with %q, validate says:\n%s\nwant %q", tc.new, got, tc.want)
		}
	}
}
