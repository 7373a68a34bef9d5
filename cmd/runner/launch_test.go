package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/dryrun"
)

// stagesSpec runs its ask node once per round of each stage, as many
// rounds as the stage's item of the list var says; the prompt compares the
// round with the stage's rounds, which only integers can be compared with.
const stagesSpec = `version: 1
name: stages
inputs:
  question: {required: true}
vars:
  stages: [1, 1]
  width: 1
templates:
  define:
    answer: "{{.Inputs.question}} (round {{.Round}}{{if lt .Round (index .Vars.stages 0)}}, more to come{{end}}, width {{.Vars.width}})"
agents:
  a: {name: A}
  b: {name: B}
  c: {name: C}
nodes:
  answer:
    kind: ask
    agents: [a, b, c]
    template: answer
flow:
  - foreach:
      as: n
      in: vars.stages
      do:
        - loop: {as: round, max: n, do: [answer]}
outputs:
  answers: map(latest("answer"), {.output})
`

// A --set list of integers stays a list of integers in the run and in the
// dry run, which plan the same calls: 3 agents, 3+3 rounds, 18 calls.
func TestSetListOfIntsRunAndDryRunAgree(t *testing.T) {
	specFile := writeSpecFile(t, "stages.yaml", stagesSpec)
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply { return llmtest.Reply{Content: "ok"} })
	stdout, _ := mustRun(t, live(srv), "run", specFile, "-i", "question=Why?", "--set", "stages=3,3", "--dry-run", "--json")
	var rep dryrun.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("--dry-run --json: %v\n%s", err, stdout)
	}
	if rep.Calls != 18 {
		t.Errorf("the dry run plans %d calls, want 18 (3 agents, 3+3 rounds)", rep.Calls)
	}
	runs := t.TempDir()
	mustRun(t, live(srv), "run", specFile, "-i", "question=Why?", "--set", "stages=3,3", "--no-cache", "--runs-dir", runs, "-q")
	if srv.Count() != rep.Calls {
		t.Errorf("the run made %d calls, the dry run planned %d", srv.Count(), rep.Calls)
	}
	m := readManifests(t, runs)
	if len(m) != 1 || jsonText(t, m[0]["vars"]) != `{"stages":[3,3],"width":1}` {
		t.Errorf("run.json vars = %v; want stages [3,3]", m)
	}
	for _, r := range srv.Requests() {
		if strings.Contains(r.LastUser(), "round 1,") && !strings.Contains(r.LastUser(), "more to come") {
			t.Errorf("round 1 of 3 was not compared as a number: %q", r.LastUser())
		}
	}
}

// Every way of launching a run gets its values from the one preparation:
// a run, a dry run, a sweep and a dataset sweep given the same values (as
// flags, a matrix axis or a dataset line) run with the same inputs and
// typed vars.
func TestLaunchFormsPrepareTheSameValues(t *testing.T) {
	specFile := writeSpecFile(t, "stages.yaml", stagesSpec)
	dataset := filepath.Join(t.TempDir(), "lines.csv")
	if err := os.WriteFile(dataset, []byte("question\nWhy?\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply { return llmtest.Reply{Content: "ok"} })
	const wantInputs, wantVars = `{"question":"Why?"}`, `{"stages":[2,1],"width":2}`
	forms := []struct {
		name string
		args []string
	}{
		{"run", []string{"-i", "question=Why?", "--set", "stages=2,1", "--set", "width=2"}},
		{"dry run", []string{"-i", "question=Why?", "--set", "stages=2,1", "--set", "width=2", "--dry-run", "--json"}},
		{"sweep", []string{"-i", "question=Why?", "--set", "stages=2,1", "--matrix", "width=2"}},
		{"repeated", []string{"-i", "question=Why?", "--set", "stages=2,1", "--set", "width=2", "--repeat", "2"}},
		{"dataset sweep", []string{"--dataset", dataset, "--set", "stages=2,1", "--set", "width=2"}},
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			runs := t.TempDir()
			args := append([]string{"run", specFile, "--runs-dir", runs, "-q"}, f.args...)
			stdout, _ := mustRun(t, live(srv), args...)
			var got []map[string]any
			if f.name == "dry run" {
				var rep dryrun.Report
				if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
					t.Fatalf("--json: %v\n%s", err, stdout)
				}
				got = []map[string]any{{"inputs": rep.Inputs, "vars": rep.Vars}}
				if rep.Calls != 9 {
					t.Errorf("the dry run plans %d calls, want 9 (3 agents, 2+1 rounds)", rep.Calls)
				}
			} else {
				got = readManifests(t, runs)
			}
			if len(got) == 0 {
				t.Fatal("no run")
			}
			for _, m := range got {
				if in, vars := jsonText(t, m["inputs"]), jsonText(t, m["vars"]); in != wantInputs || vars != wantVars {
					t.Errorf("inputs %s, vars %s; want %s, %s", in, vars, wantInputs, wantVars)
				}
			}
		})
	}
}

// readManifests reads run.json of every run under runs (sweeps' too).
func readManifests(t *testing.T, runs string) []map[string]any {
	t.Helper()
	var out []map[string]any
	err := filepath.WalkDir(runs, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.Name() != "run.json" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			return err
		}
		out = append(out, m)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
