package runtime

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// The property, for a loop's break: a loop of max M whose body is K
// compute steps, with a break that first holds right after step J of
// iteration R, ends there: every step ran in iterations 1..R-1, steps
// 0..J in iteration R, none after; when R is past M the loop runs to M.
// Each step's output is round*10+step, so the outputs tell which
// iteration each step last ran in.
func TestLoopBreakProperty(t *testing.T) {
	for seed := uint64(0); seed < 25; seed++ {
		r := rand.New(rand.NewPCG(seed, 5))
		m, k := 1+r.IntN(4), 1+r.IntN(3)
		br, bj := 1+r.IntN(m+1), r.IntN(k)
		var nodes, steps, outs []string
		for j := 0; j < k; j++ {
			nodes = append(nodes, fmt.Sprintf("  s%d: {kind: compute, value: 'round * 10 + %d'}", j, j))
			steps = append(steps, fmt.Sprintf("s%d", j))
			outs = append(outs, fmt.Sprintf("  o%d: nodes.s%d?.output ?? -1", j, j))
		}
		src := fmt.Sprintf("version: 1\nname: b\nagents: {a: {}}\nnodes:\n%s\nflow:\n  - loop: {max: %d, break: 'nodes.s%d?.output == %d', do: [%s]}\noutputs:\n%s\n",
			strings.Join(nodes, "\n"), m, bj, br*10+bj, strings.Join(steps, ", "), strings.Join(outs, "\n"))
		plan := loadPlan(t, writeSpec(t, t.TempDir(), src))
		_, res, err := execute(t, plan, Options{Settings: Settings{Getenv: envFor("http://127.0.0.1:1/v1")}})
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, src)
		}
		for j := 0; j < k; j++ {
			last := m // the iteration step j last ran in
			if br <= m {
				last = br
				if j > bj {
					last = br - 1
				}
			}
			want := -1
			if last > 0 {
				want = last*10 + j
			}
			if got := res.Outputs[fmt.Sprintf("o%d", j)]; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d: step %d last gave %v, want %d (max %d, break after step %d of iteration %d)\n%s", seed, j, got, want, m, bj, br, src)
			}
		}
	}
}
