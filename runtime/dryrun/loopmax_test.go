package dryrun

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/launch"
)

// loopMaxForm is a loop max expression over a compute node's output
// (what the run records) and a var, with its value given both, and its
// declared maximum: -1 when the expression has none (a read of the run
// without a cap, which validate refuses).
type loopMaxForm struct {
	src   func(k int) string
	value func(out, v, k int) int
	bound func(k, vmax int) int
}

var loopMaxForms = []loopMaxForm{
	{func(k int) string { return fmt.Sprintf("min(nodes.plan.output, %d)", k) },
		func(out, _, k int) int { return min(out, k) }, func(k, _ int) int { return k }},
	{func(k int) string { return fmt.Sprintf("max(min(nodes.plan.output + 1, %d), 1)", k) },
		func(out, _, k int) int { return max(min(out+1, k), 1) }, func(k, _ int) int { return max(k, 1) }},
	{func(k int) string { return fmt.Sprintf("min(nodes.plan.output, vars.v + %d)", k) },
		func(out, v, k int) int { return min(out, v+k) }, func(k, vmax int) int {
			if vmax < 0 {
				return -1
			}
			return vmax + k
		}},
	{func(int) string { return "nodes.plan.output" },
		func(out, _, _ int) int { return out }, func(int, int) int { return -1 }},
	// A conditional's maximum is the larger of its branches': a branch
	// without one leaves the whole without one.
	{func(k int) string { return fmt.Sprintf("(nodes.plan.output > %d ? %d : nodes.plan.output)", k, k) },
		func(out, _, k int) int { return min(out, k) }, func(int, int) int { return -1 }},
}

// TestLoopMaxDeclaredMaximum: a loop max that reads what the run records
// validates exactly when it has a declared maximum (a cap, or a var's
// maximum carried through min); the dry run then plans the loop to that
// maximum, and a run makes the iterations the expression gives, never
// more than the dry run planned.
func TestLoopMaxDeclaredMaximum(t *testing.T) {
	for seed := uint64(0); seed < 15; seed++ {
		r := rand.New(rand.NewPCG(seed, 38))
		form := loopMaxForms[int(seed)%len(loopMaxForms)] // each form three times
		k, v, add := 1+r.IntN(5), r.IntN(4), r.IntN(4)
		vmax := -1
		decl := fmt.Sprintf("v: %d", v)
		if r.IntN(2) == 0 {
			vmax = v + r.IntN(3)
			decl = fmt.Sprintf("v: {default: %d, minimum: 0, maximum: %d}", v, vmax)
		}
		src := fmt.Sprintf(`version: 1
name: loopmax
vars:
  %s
templates:
  define:
    p: "Round {{.Round}}"
agents:
  a: {name: A}
nodes:
  plan: {kind: compute, value: 'vars.v + %d'}
  answer: {kind: ask, agents: [a], template: p}
flow:
  - plan
  - loop: {max: '%s', do: [answer]}
`, decl, add, form.src(k))
		path := writeSpec(t, t.TempDir(), src)
		bound := form.bound(k, vmax)
		_, diags := runtime.Load(path, nodes.Registry())
		if bound < 0 {
			if !diags.HasErrors() || !strings.Contains(diags.Error(), "needs a declared maximum") {
				t.Fatalf("seed %d: a loop max without a declared maximum validated (%v):\n%s", seed, diags, src)
			}
			continue
		}
		if diags.HasErrors() {
			t.Fatalf("seed %d: %v\n%s", seed, diags, src)
		}
		plan := loadPlan(t, path)
		rep, err := Run(plan, Options{Given: launch.Given{}})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Calls != bound {
			t.Errorf("seed %d: the dry run plans %d calls, want the declared maximum %d\n%s", seed, rep.Calls, bound, src)
		}
		want := form.value(v+add, v, k)
		if got := scriptedCalls(t, path, launch.Given{}); got != want || got > rep.Calls {
			t.Errorf("seed %d: the run made %d calls, want %d (the dry run plans %d)\n%s", seed, got, want, rep.Calls, src)
		}
	}
}
