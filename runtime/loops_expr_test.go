package runtime

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestLoopsInExpressions: expressions read every enclosing loop's counter
// as loops.NAME, as templates read .Loops.NAME. The property, on nested
// loops of generated depth and bounds whose innermost body is a compute
// step: the step last sees every counter at its loop's max, its history
// holds one value per iteration, each the counters it ran under (so
// loops.NAME is the enclosing loop's counter, not the innermost's), and
// a compute step after the loops sees none of them.
func TestLoopsInExpressions(t *testing.T) {
	for seed := uint64(0); seed < 12; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		depth := 1 + r.IntN(3)
		maxes := make([]int, depth)
		var terms []string
		flow := "[step]"
		for d := depth - 1; d >= 0; d-- {
			maxes[d] = 1 + r.IntN(3)
			terms = append(terms, fmt.Sprintf("loops.l%d * %d", d, pow10(d)))
			flow = fmt.Sprintf("[{loop: {as: l%d, max: %d, do: %s}}]", d, maxes[d], flow)
		}
		src := fmt.Sprintf(`version: 1
name: loops
agents: {a: {}}
nodes:
  step: {kind: compute, set: {now: '%s', seen: 'concat(nodes.step?.output?.seen ?? [], [set.now])'}}
  after: {kind: compute, value: len(loops)}
flow:
  - %s
  - after
outputs:
  last: nodes.step.output.now
  seen: nodes.step.output.seen
  after: nodes.after.output
`, strings.Join(terms, " + "), strings.TrimSuffix(strings.TrimPrefix(flow, "["), "]"))
		plan := loadPlan(t, writeSpec(t, t.TempDir(), src))
		_, res, err := execute(t, plan, Options{Settings: Settings{Getenv: envFor("http://127.0.0.1:1/v1")}})
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, src)
		}
		// Every combination of counters, outermost slowest.
		var want []int
		var walk func(d, acc int)
		walk = func(d, acc int) {
			if d == depth {
				want = append(want, acc)
				return
			}
			for i := 1; i <= maxes[d]; i++ {
				walk(d+1, acc+i*pow10(d))
			}
		}
		walk(0, 0)
		if got := fmt.Sprint(res.Outputs["seen"]); got != fmt.Sprint(want) {
			t.Fatalf("seed %d: the step saw %s, want %v\n%s", seed, got, want, src)
		}
		if got := fmt.Sprint(res.Outputs["last"]); got != fmt.Sprint(want[len(want)-1]) {
			t.Errorf("seed %d: last %s, want %d", seed, got, want[len(want)-1])
		}
		if got := fmt.Sprint(res.Outputs["after"]); got != "0" {
			t.Errorf("seed %d: after the loops, len(loops) is %s", seed, got)
		}
	}
}

func pow10(n int) int {
	p := 1
	for range n {
		p *= 10
	}
	return p
}
