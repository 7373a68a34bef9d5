package runtime

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/launch"
)

// The property, for a conversation's while and break: with max_turns M,
// while: turn < L, and a time keeper every E turns whose post the break
// ends the conversation on, the engine takes exactly the turns this loop
// takes (while checked before each turn, the time keeper after a turn
// that is not the last allowed, break after each post), ended by what
// ended it here; the dry run plans all M turns.
func TestConverseWhileBreakProperty(t *testing.T) {
	srv := llmtest.New(t, keyed(answerOf))
	for seed := uint64(0); seed < 15; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		m, l, e := 1+r.IntN(6), r.IntN(8), 1+r.IntN(5)
		useWhile, useBreak := r.IntN(3) > 0, r.IntN(3) > 0
		turns, by := 0, "max_turns"
		for {
			if turns >= m {
				break
			}
			if useWhile && turns >= l {
				by = "while"
				break
			}
			turns++
			if turns >= m {
				break
			}
			if useBreak && turns%e == 0 {
				by = "break"
				break
			}
		}
		extra := ""
		if useWhile {
			extra += "\n    while: turn < vars.l"
		}
		if useBreak {
			extra += "\n    break: 'transcript[-1].from == \"timekeeper\"'"
		}
		src := fmt.Sprintf(`version: 1
name: wb
vars: {l: 0}
agents: {a: {}, b: {}}
templates:
  define: {m: "go", tk: "time"}
nodes:
  talk:
    kind: converse
    agents: [a, b]
    message: {template: m}
    max_turns: %d
    interject: [{every: %d, template: tk}]%s
flow: [talk]
outputs:
  turns: nodes.talk.output.turns
  by: nodes.talk.output.ended_by
`, m, e, extra)
		plan := loadPlan(t, writeSpec(t, t.TempDir(), src))
		given := launch.Given{Sets: []string{fmt.Sprintf("l=%d", l)}}
		_, res, err := execute(t, plan, Options{Settings: Settings{Getenv: envFor(srv.URL)}, Launch: launch.Launch{Given: given}})
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, src)
		}
		if got := fmt.Sprint(res.Outputs["turns"], " ", res.Outputs["by"]); got != fmt.Sprint(turns, " ", by) || res.Usage.Total.Calls != turns {
			t.Fatalf("seed %d (l=%d): %s in %d calls, want %d %s\n%s", seed, l, got, res.Usage.Total.Calls, turns, by, src)
		}
		dry, err := NewDry(plan, Options{Launch: launch.Launch{Given: given}}, Dry{Stage: &calls.Placeholders{}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dry.Execute(context.Background()); err != nil {
			t.Fatalf("seed %d: dry run: %v", seed, err)
		}
		if got := int(dry.dry.calls.Load() + dry.dry.extrapolated.Load()); got != m {
			t.Fatalf("seed %d: the dry run planned %d calls, want max_turns %d\n%s", seed, got, m, src)
		}
	}
}
