package dryrun

import (
	"strings"
	"testing"

	"github.com/debate-runner/runner/runtime/launch"
)

// TestDryRunStopsWhereTheRunWould: a template that fails to render (here
// an index past the history, which validate cannot know) fails the run
// after its calls; the dry run fails the same way, rather than noting it
// and reporting a worst case of 0 calls.
func TestDryRunStopsWhereTheRunWould(t *testing.T) {
	plan := loadPlan(t, writeSpec(t, t.TempDir(), dryBase+`    late: "Earlier: {{(index .History 5).Content}}"
nodes:
  answer: {kind: ask, agents: [a], template: p}
  recall: {kind: ask, agents: [b], template: late}
flow: [answer, recall]
outputs: {n: len(messages)}`))
	_, err := Run(plan, Options{Given: launch.Given{Inputs: []string{"question=q"}}})
	if err == nil || !strings.Contains(err.Error(), "index out of range") || !strings.Contains(err.Error(), `node "recall"`) {
		t.Fatalf("dry run of a spec whose run fails rendering: %v", err)
	}
}
