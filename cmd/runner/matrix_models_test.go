package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
)

// sweepDirOf reads the sweep directory from a sweep's stderr.
func sweepDirOf(t *testing.T, stderr string) string {
	t.Helper()
	for _, l := range strings.Split(stderr, "\n") {
		if s, ok := strings.CutPrefix(l, "sweep: "); ok && !strings.Contains(s, " runs in ") {
			return s
		}
	}
	t.Fatalf("no sweep directory in stderr:\n%s", stderr)
	return ""
}

// TestMatrixOverModels: --matrix model=A,B runs the spec once per model,
// sends each run's calls to its model, and records the override in run.json.
func TestMatrixOverModels(t *testing.T) {
	var mu sync.Mutex
	models := map[string]int{}
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		mu.Lock()
		models[r.Model]++
		mu.Unlock()
		return solver(r)
	})
	runs := t.TempDir()
	env := live(srv, "RUNNER_CACHE_DIR", t.TempDir())
	_, stderr := mustRun(t, env, "run", debateSpec, "-i", "question=What is 12+7?", "--runs-dir", runs,
		"--matrix", "model=alpha-1,beta-2", "--set", "rounds=1")
	if want := map[string]int{"alpha-1": 3, "beta-2": 3}; len(models) != 2 || models["alpha-1"] != 3 || models["beta-2"] != 3 {
		t.Errorf("calls per model %v, want %v", models, want)
	}
	dir := sweepDirOf(t, stderr)
	members, _ := filepath.Glob(filepath.Join(dir, "*", "run.json"))
	var got []string
	for _, m := range members {
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		var man struct {
			ModelOverrides map[string]string `json:"model_overrides"`
		}
		if err := json.Unmarshal(data, &man); err != nil {
			t.Fatal(err)
		}
		got = append(got, man.ModelOverrides["default"])
	}
	sort.Strings(got)
	if strings.Join(got, ",") != "alpha-1,beta-2" {
		t.Errorf("run.json model overrides %v, want alpha-1 and beta-2", got)
	}
	summary, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(summary), "alpha-1") || !strings.Contains(string(summary), "beta-2") {
		t.Errorf("summary.md does not name the models:\n%s", summary)
	}
}

// TestMatrixOverReplicas: an agent declared with replicas: vars.n is n
// agents, so --matrix n=2,4 sweeps the number of debaters.
func TestMatrixOverReplicas(t *testing.T) {
	text := `version: 1
name: replicas
vars: {n: 3}
templates:
  define:
    ask: "{{.Agent.ID}}: What is 12+7?"
agents:
  solver: {replicas: vars.n}
nodes:
  answer:
    kind: ask
    agents: [solver]
    template: ask
    output: {format: regex, pattern: '\\boxed\{([^}]*)\}'}
flow: [answer]
`
	_, _, who := sweepAsks(t, text, "n=2,4", asker)
	if got := strings.Join(who, " "); got != "solver_1 solver_1 solver_2 solver_2 solver_3 solver_4" {
		t.Errorf("calls from %s, want solver_1..2 and solver_1..4", got)
	}
}

// TestMatrixOverPanels: a panel from a list var (replicas: {from: ...})
// is swept by naming panels: each run calls its panel's models, one agent
// per model, and the sweep's usage counts each model apart.
func TestMatrixOverPanels(t *testing.T) {
	text := `version: 1
name: panels
vars:
  panel: two
  panels:
    two: [m-a, m-b]
    three: [m-c, m-c, {model: m-d, name: Dee}]
templates:
  define:
    ask: "{{.Agent.ID}} {{.Agent.Index}} {{.Agent.Name}}: What is 12+7?"
agents:
  solver: {replicas: {from: 'vars.panels[vars.panel]'}}
nodes:
  answer:
    kind: ask
    agents: [solver]
    template: ask
    output: {format: regex, pattern: '\\boxed\{([^}]*)\}'}
flow: [answer]
`
	_, _, who := sweepAsks(t, text, "panel=two,three", func(r llmtest.Request) string { return r.Model + "=" + asker(r) })
	want := "m-a=solver_1 1 solver_1 m-b=solver_2 2 solver_2 m-c=solver_1 1 solver_1 m-c=solver_2 2 solver_2 m-d=solver_3 3 Dee"
	if got := strings.Join(who, " "); got != want {
		t.Errorf("calls %s, want %s", got, want)
	}
}

// sweepAsks writes text as a spec, sweeps it with --matrix matrix against
// a server answering solver's way, and gives the server, the spec's path,
// and what who says of each request the sweep made, sorted.
func sweepAsks(t *testing.T, text, matrix string, who func(llmtest.Request) string) (*llmtest.Server, string, []string) {
	t.Helper()
	srv := llmtest.New(t, solver)
	spec := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _ = mustRun(t, live(srv), "run", spec, "--runs-dir", t.TempDir(), "--matrix", matrix, "--no-cache")
	var asks []string
	for _, r := range srv.Requests() {
		asks = append(asks, who(r))
	}
	sort.Strings(asks)
	return srv, spec, asks
}

// asker is the part of a request's last message before its first colon:
// the asking agent, as the sweeps' prompts begin.
func asker(r llmtest.Request) string { return strings.SplitN(r.LastUser(), ":", 2)[0] }
