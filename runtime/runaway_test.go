package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/result"
)

const evalSpec = `version: 1
name: evals
agents:
  a: {name: A}
nodes:
  c:
    kind: compute
    value: round
flow:
  - loop: {max: 1000, until: nodes.c.output >= 20, do: [c]}
outputs:
  last: nodes.c.output
budget: {max_evaluations: %d}
`

// TestMaxEvaluationsStopsAndResumes: a run that executes more nodes (or
// loop iterations) than budget.max_evaluations stops on its budget naming
// the bound, with its records written, and a resume with a spec that
// raises the bound finishes it.
func TestMaxEvaluationsStopsAndResumes(t *testing.T) {
	path := writeSpec(t, t.TempDir(), fmt.Sprintf(evalSpec, 10))
	r, res, err := execute(t, loadPlan(t, path), Options{})
	if err == nil || !strings.Contains(err.Error(), "executed 10 loop and foreach iterations, the most budget.max_evaluations allows") || exitcode.Of(err) != exitcode.Budget {
		t.Fatalf("err = %v", err)
	}
	if res.Status != result.StatusBudget {
		t.Fatalf("status %s", res.Status)
	}
	if errs := eventsOf(readEvents(t, r.Dir), "budget_exceeded"); len(errs) != 1 {
		t.Errorf("journal error events: %v", errs)
	}
	fixed := filepath.Join(t.TempDir(), "fixed.yaml")
	if err := os.WriteFile(fixed, []byte(fmt.Sprintf(evalSpec, 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	resumed, err := Resume(r.Dir, nodes.Registry(), Options{Resuming: Resuming{Spec: fixed}})
	if err != nil {
		t.Fatal(err)
	}
	res, err = resumed.Execute(t.Context())
	if err != nil || res.Status != result.StatusCompleted || fmt.Sprint(res.Outputs["last"]) != "20" {
		t.Fatalf("resumed: err %v, status %s, outputs %v", err, res.Status, res.Outputs)
	}
}
