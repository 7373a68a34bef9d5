package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/result"
)

// A compute node that divides by zero and an output that does: each makes a
// value JSON cannot hold (NaN, +Inf).
const nanSpec = `version: 1
name: nan
inputs:
  x: {default: "0"}
agents:
  a: {name: A}
nodes:
  c:
    kind: compute
    value: %s
flow: [c]
outputs:
  first: nodes.c.output
  ratio: %s
`

// TestNonFiniteFailsTheRunWithItsRecords: a NaN or an infinity, in a
// compute node's value or in an output, fails the run with an error naming
// the expression's FILE:LINE:COL; the run still writes its records (an
// error event in the journal, result.json with status failed, the
// reports), and a resume with a fixed spec completes it. Before, the
// journal's encoder or result.json's failed on the NaN, leaving no
// result.json, no error event, and a run no resume could finish.
func TestNonFiniteFailsTheRunWithItsRecords(t *testing.T) {
	cases := []struct {
		name, value, output, want, fixValue, fixOutput string
	}{
		{"compute node NaN", "float(inputs.x) / float(inputs.x)", "1", `:10:12: node "c": value (float(inputs.x) / float(inputs.x)) gave NaN`,
			`"inputs.x == \"0\" ? 0 : 1"`, "1"},
		{"output +Inf", "float(inputs.x)", "1 / nodes.c.output", `:14:10: output "ratio" (1 / nodes.c.output) gave +Inf`,
			"float(inputs.x)", `"nodes.c.output == 0 ? 0 : 1 / nodes.c.output"`},
		{"output -Inf inside a list", "float(inputs.x)", `"[1, -1 / nodes.c.output]"`, `:14:10: output "ratio" ([1, -1 / nodes.c.output]) gave -Inf at [1]`,
			"float(inputs.x)", `"[1]"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeSpec(t, dir, fmt.Sprintf(nanSpec, tc.value, tc.output))
			r, res, err := execute(t, loadPlan(t, path), Options{})
			if err == nil || !strings.Contains(err.Error(), path+tc.want) {
				t.Fatalf("err = %v; want one containing %q", err, path+tc.want)
			}
			if res == nil || res.Status != result.StatusFailed {
				t.Fatalf("result = %+v; want status failed", res)
			}
			data, rerr := os.ReadFile(filepath.Join(r.Dir, "result.json"))
			if rerr != nil || !strings.Contains(string(data), `"status": "failed"`) {
				t.Fatalf("result.json: %v\n%s", rerr, data)
			}
			for _, name := range []string{"report.md", "report.html"} {
				if _, err := os.Stat(filepath.Join(r.Dir, name)); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
			evs := readEvents(t, r.Dir)
			if errs := eventsOf(evs, "error"); len(errs) != 1 || !containsJSON(errs[0].Data, "gave ") {
				t.Errorf("journal error events = %v; want one naming the value", errs)
			}
			if fin := eventsOf(evs, "run_finished"); len(fin) != 1 || !containsJSON(fin[0].Data, `"status":"failed"`) {
				t.Errorf("run_finished = %v; want one, failed", fin)
			}

			fixed := filepath.Join(t.TempDir(), "fixed.yaml")
			if err := os.WriteFile(fixed, []byte(fmt.Sprintf(nanSpec, tc.fixValue, tc.fixOutput)), 0o644); err != nil {
				t.Fatal(err)
			}
			resumed, err := Resume(r.Dir, nodes.Registry(), Options{Resuming: Resuming{Spec: fixed}})
			if err != nil {
				t.Fatalf("resume with the fixed spec: %v", err)
			}
			res, err = resumed.Execute(t.Context())
			if err != nil || res.Status != result.StatusCompleted {
				t.Fatalf("resumed: err = %v, status %s", err, res.Status)
			}
		})
	}
}
