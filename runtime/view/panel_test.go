package view_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/view"
)

const panelViewSpec = `version: 1
name: panel-view
vars:
  panel: [m-a, m-b]
models: {default: {model: m-default}}
agents:
  p: {replicas: {from: vars.panel}}
nodes:
  ask: {kind: ask, agents: [p], template: t}
templates:
  define:
    t: hello
flow: [ask]
`

// TestViewShowsThePanelAsRun: a run that set its panel (--set) shows the
// agents it ran, each with its model, not the spec's default panel.
func TestViewShowsThePanelAsRun(t *testing.T) {
	root := t.TempDir()
	srv := llmtest.New(t, func(llmtest.Request) llmtest.Reply { return llmtest.Reply{Content: "hi"} })
	plan := runtest.LoadPlan(t, runtest.WriteSpec(t, t.TempDir(), panelViewSpec))
	opts := options(root, srv)
	opts.Sets = []string{"panel=m-x,m-y,m-z"}
	r, res := execute(t, plan, opts)
	if res.Status != result.StatusCompleted {
		t.Fatalf("run: %s %s", res.Status, res.Error)
	}
	ts := serve(t, root)
	resp, err := http.Get(ts.URL + "/api/run?id=" + filepath.Base(r.Dir))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Agents []view.AgentInfo `json:"agents"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range out.Agents {
		got = append(got, a.ID+"="+a.Model)
	}
	if !slices.Equal(got, []string{"p_1=m-x", "p_2=m-y", "p_3=m-z"}) {
		t.Errorf("agents %v, want p_1=m-x p_2=m-y p_3=m-z", got)
	}
}
