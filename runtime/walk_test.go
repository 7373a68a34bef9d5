package runtime

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/result"
)

// TestWalkerHasNoDryChecks: the flow walker (flow.go, fanout.go) knows no
// kind of run; a dry run observes it through walkObserver. Any reference
// to the dry run's state in the walker's source fails.
func TestWalkerHasNoDryChecks(t *testing.T) {
	banned := map[string]bool{"dry": true, "dryState": true, "dryTurns": true, "errBudget": true, "extrapolate": true}
	for _, file := range []string{"flow.go", "fanout.go"} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && banned[id.Name] {
				t.Errorf("%s: the flow walker refers to %s; give walkObserver a hook instead", fset.Position(id.Pos()), id.Name)
			}
			return true
		})
	}
}

// runawaySpec is a loop whose iterations call no model: with nodes that
// compute (until never holds), or with none at all (an if that skips its
// only node). max is far more than a run could walk in the test's time.
const runawaySpec = `version: 1
name: runaway
agents:
  a: {name: A}
nodes:
  c:
    kind: compute
    value: round
flow:
  - loop:
      max: 1000000000
      until: %s
      do: [%s]
outputs:
  last: round
budget: {max_evaluations: %d}
`

// TestLoopsWithoutCallsStopOnBudget: a loop of nodes that call no model,
// or of no node at all, stops at budget.max_evaluations as a spent budget
// does (status budget_exceeded, exit 6), in a run and in a dry run,
// whatever its max; never a hang.
func TestLoopsWithoutCallsStopOnBudget(t *testing.T) {
	for _, tc := range []struct{ name, until, do string }{
		{"compute nodes", "false", "c"},
		{"no node", "false", `{if: "round < 0", then: [c]}`},
		{"no until", "round < 0", `{if: "round < 0 && round > 5", then: [c]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit := 500 + len(tc.name)
			src := fmt.Sprintf(runawaySpec, tc.until, tc.do, limit)
			if tc.name == "no until" {
				src = strings.Replace(src, "      until: round < 0\n", "", 1)
			}
			plan := loadPlan(t, writeSpec(t, t.TempDir(), src))
			began := time.Now()
			_, res, err := execute(t, plan, Options{})
			if err == nil || exitcode.Of(err) != exitcode.Budget || res.Status != result.StatusBudget {
				t.Fatalf("run: err %v (exit %d), status %v", err, exitcode.Of(err), res)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("executed %d ", limit)) {
				t.Errorf("run: the error does not name the bound: %v", err)
			}
			dry, err := NewDry(plan, Options{}, Dry{Stage: &calls.Placeholders{}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dry.Execute(context.Background()); err != nil {
				t.Fatalf("dry run: %v", err)
			}
			if stop := dry.StoppedBy(); !strings.Contains(stop, fmt.Sprintf("executed %d ", limit)) {
				t.Errorf("dry run: stopped by %q", stop)
			}
			if d := time.Since(began); d > 20*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}
