package dryrun

import (
	"strings"
	"testing"

	"github.com/debate-runner/runner/runtime"
)

// TestDryRunJudges: a judged score's calls are in the plan, one per
// judge, with their prompt, and the run's stand-in outputs are what the
// judges read.
func TestDryRunJudges(t *testing.T) {
	src := `version: 1
name: judged
models:
  j1: {model: j1}
  j2: {model: j2}
templates:
  use: [judge@1]
  define: {answer: "Say something."}
agents: {a: {}}
nodes:
  answer: {kind: ask, agents: [a], template: answer}
flow: [answer]
outputs:
  answer: nodes.answer.output
score:
  judge:
    models: [j1, j2]
    criterion: It says something.
    levels: {no: nothing said, yes: something said}
`
	plan := loadPlan(t, writeSpec(t, t.TempDir(), src))
	rep, err := Run(plan, Options{AllPrompts: true})
	if err != nil {
		t.Fatal(err)
	}
	var judged *Node
	for _, n := range rep.Nodes {
		if n.ID == runtime.JudgeNode {
			judged = n
		}
	}
	if judged == nil || judged.Calls != 2 || judged.Runs != 1 || rep.Calls != 3 {
		t.Fatalf("nodes %+v, calls %d", rep.Nodes, rep.Calls)
	}
	n := 0
	for _, p := range rep.Prompts {
		if strings.HasPrefix(p.Key, runtime.JudgeNode+"/") {
			n++
			if !strings.Contains(p.User, "It says something.") || !strings.Contains(p.User, "<reply to answer/-/a>") {
				t.Errorf("judge prompt:\n%s", p.User)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d judge prompts, want 2", n)
	}
}
