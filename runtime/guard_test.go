package runtime

import (
	"errors"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/tmplguard"
)

// guardSpec prints a compute node's value that is null for some inputs:
// validate cannot know, so only the run sees it.
const guardSpec = `version: 1
name: guard
inputs:
  x: {default: "0"}
agents:
  a: {}
templates:
  define:
    p: "KEY=p value: {{.Nodes.c.Output}}"
nodes:
  c:
    kind: compute
    value: 'inputs.x == "0" ? nil : "x"'
  p: {kind: ask, agents: [a], template: p}
flow: [c, p]
outputs:
  p: nodes.p.output
`

// TestNoValueIsNeverSent: a prompt that would read "<no value>" fails the
// run before the call, naming the template, the action and its place; no
// request reaches the endpoint; the failure is journaled, and a resume
// with a value present finishes the run.
func TestNoValueIsNeverSent(t *testing.T) {
	srv := llmtest.New(t, keyed(answerOf))
	plan := loadPlan(t, writeSpec(t, t.TempDir(), guardSpec))
	opts := Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}}
	r, res, err := execute(t, plan, opts)
	var missing *tmplguard.MissingError
	if !errors.As(err, &missing) {
		t.Fatalf("err = %v; want a missing-value error", err)
	}
	for _, want := range []string{`node "p": rendering template p: p:1:15: {{.Nodes.c.Output}} has no value here`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %q; want it to contain %q", err, want)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests reached the endpoint; want none", n)
	}
	if res == nil || res.Status != result.StatusFailed {
		t.Fatalf("result = %+v; want failed", res)
	}
	if errs := eventsOf(readEvents(t, r.Dir), "error"); len(errs) != 1 || !containsJSON(errs[0].Data, "has no value here") {
		t.Fatalf("journal error events = %v", errs)
	}
	fixed := writeSpec(t, t.TempDir(), strings.Replace(guardSpec, `nil : "x"`, `"none" : "x"`, 1))
	opts.Resuming = Resuming{Spec: fixed}
	resumed, err := Resume(r.Dir, nodes.Registry(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res, err = resumed.Execute(t.Context()); err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("resume with a fixed spec: %v (%+v)", err, res)
	}
	if reqs := srv.Requests(); len(reqs) != 1 || !strings.Contains(reqs[0].Messages[len(reqs[0].Messages)-1].Content, "value: none") {
		t.Fatalf("requests after the fix: %+v", reqs)
	}
}
