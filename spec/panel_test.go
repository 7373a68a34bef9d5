package spec_test

import (
	"slices"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

const panelSpec = `version: 1
name: panel
vars:
  panel:
    - gpt-4o
    - {model: judge, name: Llama, vars: {style: terse}}
    - {model: claude-3-5-sonnet, persona: {title: Critic}}
    - small
models:
  default: {model: gpt-4o-mini, temperature: 0.7}
  judge: {model: llama-3-70b}
  small: {model: qwen-7b}
agents:
  p: {replicas: {from: vars.panel}, topology: ring, vars: {style: long, lang: en}}
  s: {replicas: 4, topology: star}
  t: {replicas: 5, topology: tree}
  c: {replicas: 3, topology: {c_1: [c_2], c_3: [c_1, c_2]}}
nodes:
  ask: {kind: ask, agents: [p, s, t, c], template: t}
templates:
  define:
    t: "{{.Agent.Index}} {{.Agent.Group}} {{range .Agent.Neighbours}}{{.}} {{end}}"
flow: [ask]
`

// TestPanelFromList: a panel's members get their models (a declared one,
// or a model id put in place of the declaration's, keeping its settings),
// names, personas and vars merged over the declaration's; topologies give
// each agent its neighbours.
func TestPanelFromList(t *testing.T) {
	plan, diags := spec.Compile("panel.yaml", []byte(panelSpec), nodes.Registry())
	if diags.HasErrors() {
		t.Fatal(diags.Format())
	}
	p := plan.Groups["p"]
	if len(p) != 4 {
		t.Fatalf("panel p has %d agents, want 4", len(p))
	}
	models := []string{}
	for _, a := range p {
		models = append(models, a.Model.Model)
	}
	if !slices.Equal(models, []string{"gpt-4o", "llama-3-70b", "claude-3-5-sonnet", "qwen-7b"}) {
		t.Errorf("models %v", models)
	}
	if m := p[0].Model; m.Name != "gpt-4o" || m.Temperature == nil || *m.Temperature != 0.7 {
		t.Errorf("a model id keeps the declaration's settings under its own name: %+v", m)
	}
	if plan.Models["gpt-4o"] == nil {
		t.Error("a panel's model id is not among the plan's models (usage would not count it apart)")
	}
	if p[1].Name != "Llama" || p[1].Vars["style"] != "terse" || p[1].Vars["lang"] != "en" || p[0].Vars["style"] != "long" {
		t.Errorf("names/vars: %q %v %v", p[1].Name, p[1].Vars, p[0].Vars)
	}
	if p[2].Persona.Title != "Critic" || p[2].Index != 3 || p[2].Group != "p" || p[2].ID != "p_3" {
		t.Errorf("member 3: %+v", p[2])
	}
	want := map[string][]string{
		"p_1": {"p_4", "p_2"}, "p_2": {"p_1", "p_3"}, "p_4": {"p_3", "p_1"},
		"s_1": {"s_2", "s_3", "s_4"}, "s_3": {"s_1"},
		"t_1": {"t_2", "t_3"}, "t_2": {"t_1", "t_4", "t_5"}, "t_3": {"t_1"}, "t_5": {"t_2"},
		"c_1": {"c_2"}, "c_2": {}, "c_3": {"c_1", "c_2"},
	}
	for id, w := range want {
		got := plan.AgentByID[id].View().Neighbours
		if !slices.Equal(got, w) && !(len(got) == 0 && len(w) == 0) {
			t.Errorf("%s hears %v, want %v", id, got, w)
		}
	}
	// A run that sets the panel compiles it again with the new members.
	sp, err := plan.Specialize(map[string]any{"panel": []any{"a", "b"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := sp.Groups["p"]; len(g) != 2 || g[1].Model.Model != "b" || !slices.Equal(g[0].Neighbours, []string{"p_2"}) {
		t.Errorf("specialized panel: %d agents", len(g))
	}
}
