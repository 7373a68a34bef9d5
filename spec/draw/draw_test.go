package draw_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/debate-runner/runner/spec/draw"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// TestGraphGolden draws a plan with a loop bounded by a number and a
// condition, a foreach over goals holding a loop bounded by an expression,
// an if with else and one without, and compares both renderings with
// testdata/graph (-update rewrites them).

// update rewrites the golden drawings: go test ./spec/draw -update
var update = flag.Bool("update", false, "rewrite the golden files")

func TestGraphGolden(t *testing.T) {
	plan, diags := spec.Load("../testdata/graph/flow.yaml", nodes.Registry())
	if diags.HasErrors() {
		t.Fatalf("graph spec does not load:\n%s", diags.Error())
	}
	for _, tc := range []struct {
		file string
		draw func(*spec.Plan) string
	}{
		{"../testdata/graph/flow.mmd", draw.Mermaid},
		{"../testdata/graph/flow.dot", draw.Dot},
	} {
		got := tc.draw(plan)
		if *update {
			if err := os.WriteFile(tc.file, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if got != string(want) {
			t.Errorf("%s differs\n--- got\n%s--- want\n%s", tc.file, got, want)
		}
		// Drawing the same plan twice gives the same text: ids come from a
		// counter, not from map order or addresses.
		if again := tc.draw(plan); again != got {
			t.Errorf("%s: drawing is not deterministic", tc.file)
		}
	}
}

// TestGraphShape checks the structure the goldens should show, so that a
// careless -update cannot bless a broken drawing.
func TestGraphShape(t *testing.T) {
	plan, diags := spec.Load("../testdata/graph/flow.yaml", nodes.Registry())
	if diags.HasErrors() {
		t.Fatalf("graph spec does not load:\n%s", diags.Error())
	}
	m := draw.Mermaid(plan)
	for _, want := range []string{
		"flowchart TD",
		`subgraph c1["loop round"]`,
		`h2{{"round = 1..4<br/>until nodes.evaluate.output.confidence >= 80"}}`,
		`subgraph c5["foreach goal in goals"]`,
		`{{"turn = 1..vars.rounds"}}`,
		`{"if vars.review"}`,
		`-->|"then"|`,
		`-->|"else"|`,
		`-->|"next"|`,
		"--> finish",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("mermaid lacks %q:\n%s", want, m)
		}
	}
	// Labels with quotes and pipes must not break Mermaid's syntax.
	if strings.Count(m, `"`)%2 != 0 {
		t.Errorf("unbalanced quotes in mermaid output:\n%s", m)
	}
	d := draw.Dot(plan)
	for _, want := range []string{
		`digraph "graph-flow" {`,
		"subgraph cluster_c1 {",
		`[shape=hexagon, label="round = 1..4\nuntil nodes.evaluate.output.confidence >= 80"]`,
		`[shape=diamond, label="if vars.review"]`,
		`[label="then"]`,
		`[label="else"]`,
		"-> finish;",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("dot lacks %q:\n%s", want, d)
		}
	}
	if strings.Count(d, "{") != strings.Count(d, "}") {
		t.Errorf("unbalanced braces in dot output:\n%s", d)
	}
}

// TestGraphWatchersAndInterjections: a conversation's watcher (a node no
// flow step names) and its time keeper's rules are drawn beside it, with
// dashed edges, in both renderings.
func TestGraphWatchersAndInterjections(t *testing.T) {
	plan, diags := spec.Load("../../examples/research-review/spec.yaml", nodes.Registry())
	if diags.HasErrors() {
		t.Fatalf("research-review does not load:\n%s", diags.Error())
	}
	m := draw.Mermaid(plan)
	for _, want := range []string{
		`w5["moderation (converse)<br/>adler, mensah"]`,
		`n3 -.->|"watches every 8 turns"| w5`,
		`k4>"posts without a model call:<br/>every 4 turns: remind<br/>every 4 turns, when turn >= 20 && len(undecided) > 0: insist<br/>every 4 turns, when turn >= 35: demand<br/>every 4 turns, when turn >= 50: force (forces verdicts)"]`,
		`n3 -.- k4`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("mermaid lacks %q:\n%s", want, m)
		}
	}
	d := draw.Dot(plan)
	for _, want := range []string{
		`w5 [label="moderation (converse)\nadler, mensah", style="rounded,dashed"];`,
		`n3 -> w5 [style=dashed, label="watches every 8 turns"];`,
		`k4 [shape=note, label="posts without a model call:\nevery 4 turns: remind`,
		`n3 -> k4 [style=dashed, arrowhead=none];`,
	} {
		if !strings.Contains(d, want) {
			t.Errorf("dot lacks %q:\n%s", want, d)
		}
	}
	// A spec without watchers or time keepers draws nothing more.
	plain, diags := spec.Load("../../examples/reasoning-debate/spec.yaml", nodes.Registry())
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if out := draw.Mermaid(plain); strings.Contains(out, "-.-") {
		t.Errorf("dashed edges in a plain flow:\n%s", out)
	}
}

// TestGraphPanelModels: a node whose agents call different models (a
// panel from a list var) shows each agent's model.
func TestGraphPanelModels(t *testing.T) {
	plan, diags := spec.Load("../../examples/protocols/poll-jury/spec.yaml", nodes.Registry())
	if diags.HasErrors() {
		t.Fatalf("poll-jury does not load:\n%s", diags.Error())
	}
	want := `judge_1 (command-r), judge_2 (gpt-3.5-turbo-0125), judge_3 (claude-3-haiku-20240307)`
	if m := draw.Mermaid(plan); !strings.Contains(m, want) {
		t.Errorf("mermaid lacks %q:\n%s", want, m)
	}
	if d := draw.Dot(plan); !strings.Contains(d, want) {
		t.Errorf("dot lacks %q:\n%s", want, d)
	}
}
