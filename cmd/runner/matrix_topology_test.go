package main

import (
	"strings"
	"testing"
)

// TestMatrixOverTopologies: a topology from a var (topology: {from: ...})
// is swept by --matrix: each run's agents hear the neighbours of its own
// shape; a value that is no topology is refused before any call.
func TestMatrixOverTopologies(t *testing.T) {
	text := `version: 1
name: shapes
vars: {shape: ring}
templates:
  define:
    ask: "{{.Agent.ID}} hears{{range .Agent.Neighbours}} {{.}}{{end}}: What is 12+7?"
agents:
  solver: {replicas: 4, topology: {from: vars.shape}}
nodes:
  answer:
    kind: ask
    agents: [solver]
    template: ask
    output: {format: regex, pattern: '\\boxed\{([^}]*)\}'}
flow: [answer]
`
	srv, spec, heard := sweepAsks(t, text, "shape=ring,star", asker)
	want := []string{
		"solver_1 hears solver_2 solver_3 solver_4", // star
		"solver_1 hears solver_4 solver_2",          // ring
		"solver_2 hears solver_1",
		"solver_2 hears solver_1 solver_3",
		"solver_3 hears solver_1",
		"solver_3 hears solver_2 solver_4",
		"solver_4 hears solver_1",
		"solver_4 hears solver_3 solver_1",
	}
	if got := strings.Join(heard, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("calls:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	before := srv.Count()
	code, _, stderr := invoke(t, live(srv), "run", spec, "--runs-dir", t.TempDir(), "--set", "shape=hexagon", "--no-cache")
	if code != 2 || !strings.Contains(stderr, `unknown topology "hexagon"`) || srv.Count() != before {
		t.Errorf("--set shape=hexagon: exit %d, %d calls:\n%s", code, srv.Count()-before, stderr)
	}
}
