package runtime

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/launch"
)

// countExpr is a random count expression over vars a and b: its source
// and its value for a and b, computed here independently of expr.
type countExpr struct {
	src string
	val func(a, b int) int
}

func randCountExpr(r *rand.Rand, depth int) countExpr {
	if depth == 0 || r.IntN(3) == 0 {
		switch r.IntN(3) {
		case 0:
			return countExpr{"vars.a", func(a, _ int) int { return a }}
		case 1:
			return countExpr{"vars.b", func(_, b int) int { return b }}
		}
		k := r.IntN(4)
		return countExpr{fmt.Sprint(k), func(int, int) int { return k }}
	}
	x, y := randCountExpr(r, depth-1), randCountExpr(r, depth-1)
	switch r.IntN(6) {
	case 0:
		return countExpr{"(" + x.src + " + " + y.src + ")", func(a, b int) int { return x.val(a, b) + y.val(a, b) }}
	case 1:
		return countExpr{"(" + x.src + " * " + y.src + ")", func(a, b int) int { return x.val(a, b) * y.val(a, b) }}
	case 2:
		return countExpr{"(" + x.src + " - " + y.src + ")", func(a, b int) int { return x.val(a, b) - y.val(a, b) }}
	case 3:
		return countExpr{"min(" + x.src + ", " + y.src + ")", func(a, b int) int { return min(x.val(a, b), y.val(a, b)) }}
	case 4:
		return countExpr{"max(" + x.src + ", " + y.src + ")", func(a, b int) int { return max(x.val(a, b), y.val(a, b)) }}
	}
	return countExpr{"(vars.a > vars.b ? " + x.src + " : " + y.src + ")", func(a, b int) int {
		if a > b {
			return x.val(a, b)
		}
		return y.val(a, b)
	}}
}

// The property, for counts written as expressions: a conversation whose
// max_turns and an ask node whose samples are random expressions over two
// vars with random domains, run with random values set in those domains,
// makes exactly the calls the expressions give (no until holds); the dry
// run of the same values plans that many calls; the value never passes
// the maximum validate derived from the domains. A spec whose count can
// fall below 1 in the domains is refused by validate or by the run's
// values, never run with a count below 1.
func TestCountExpressionsProperty(t *testing.T) {
	srv := llmtest.New(t, keyed(answerOf))
	var refused, below, ran int
	defer func() {
		t.Logf("%d specs refused by validate, %d runs refused for a count below 1, %d run and planned", refused, below, ran)
	}()
	for seed := uint64(0); seed < 30; seed++ {
		r := rand.New(rand.NewPCG(seed, 38))
		turns, samples := randCountExpr(r, 2), randCountExpr(r, 2)
		if r.IntN(4) > 0 {
			t0, s0 := turns, samples
			turns = countExpr{"max(1, " + t0.src + ")", func(a, b int) int { return max(1, t0.val(a, b)) }}
			samples = countExpr{"max(1, " + s0.src + ")", func(a, b int) int { return max(1, s0.val(a, b)) }}
		}
		amax, bmax := 1+r.IntN(5), 1+r.IntN(5)
		a, b := r.IntN(amax+1), r.IntN(bmax+1)
		src := fmt.Sprintf(`version: 1
name: counts
vars:
  a: {default: %d, minimum: 0, maximum: %d}
  b: {default: %d, minimum: 0, maximum: %d}
agents: {x: {}, y: {}}
templates:
  define: {m: "say something"}
nodes:
  talk: {kind: converse, agents: [x, y], message: {template: m}, until: 'turn > 1000', max_turns: '%s'}
  poll: {kind: ask, agents: [x], template: m, samples: '%s'}
flow: [talk, poll]
`, r.IntN(amax+1), amax, r.IntN(bmax+1), bmax, turns.src, samples.src)
		path := writeSpec(t, t.TempDir(), src)
		plan, diags := Load(path, nodes.Registry())
		sets := []string{fmt.Sprintf("a=%d", a), fmt.Sprintf("b=%d", b)}
		wantTurns, wantSamples := turns.val(a, b), samples.val(a, b)
		if diags.HasErrors() {
			// Refused: only when some values of the domains give a count
			// outside its field's range.
			if !countLeavesRange(turns, amax, bmax, 1, 1<<31-1) && !countLeavesRange(samples, amax, bmax, 1, 1000) {
				t.Fatalf("seed %d: refused though every value in the domains is a count:\n%s\n%s", seed, diags.Format(), src)
			}
			refused++
			continue
		}
		opts := Options{Settings: Settings{Getenv: envFor(srv.URL)}, Launch: launch.Launch{Given: launch.Given{Sets: sets}}}
		before := len(srv.Requests())
		_, res, err := execute(t, plan, opts)
		if wantTurns < 1 || wantSamples < 1 {
			if err == nil {
				t.Fatalf("seed %d: ran with a count below 1 (turns %d, samples %d)\n%s", seed, wantTurns, wantSamples, src)
			}
			below++
			continue
		}
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, src)
		}
		want := wantTurns + wantSamples
		if got := len(srv.Requests()) - before; got != want || res.Usage.Total.Calls != want {
			t.Fatalf("seed %d: %d calls sent (result says %d), want %d turns + %d samples (a=%d b=%d)\n%s", seed, got, res.Usage.Total.Calls, wantTurns, wantSamples, a, b, src)
		}
		dry, err := NewDry(plan, Options{Launch: launch.Launch{Given: launch.Given{Sets: sets}}}, Dry{Stage: &calls.Placeholders{}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dry.Execute(context.Background()); err != nil {
			t.Fatalf("seed %d: dry run: %v", seed, err)
		}
		if got := int(dry.dry.calls.Load() + dry.dry.extrapolated.Load()); got != want {
			t.Fatalf("seed %d: the dry run planned %d calls, the run made %d\n%s", seed, got, want, src)
		}
		ran++
	}
}

// countLeavesRange reports whether some values of a and b in their domains
// give a count outside lo..hi.
func countLeavesRange(e countExpr, amax, bmax, lo, hi int) bool {
	for a := 0; a <= amax; a++ {
		for b := 0; b <= bmax; b++ {
			if v := e.val(a, b); v < lo || v > hi {
				return true
			}
		}
	}
	return false
}

// A count's maximum is what validate plans: a spec whose count reads an
// input not given yet is planned at the maximum, and a run given the input
// makes the count it gives.
func TestCountFromInputPlannedAtMaximum(t *testing.T) {
	src := `version: 1
name: counts
inputs:
  depth: {default: 2, minimum: 1, maximum: 6}
  topic: {required: true}
agents: {x: {}, y: {}}
templates:
  define: {m: "say something on {{.Inputs.topic}}"}
nodes:
  talk: {kind: converse, agents: [x, y], message: {template: m}, until: 'turn > 1000', max_turns: 'inputs.depth * 2'}
flow: [talk]
`
	plan := loadPlan(t, writeSpec(t, t.TempDir(), src))
	if got := plan.Nodes["talk"].Config.(interface{ TurnBound() int }).TurnBound(); got != 4 {
		t.Fatalf("validated with the default depth 2: max_turns %d, want 4", got)
	}
	srv := llmtest.New(t, keyed(answerOf))
	opts := Options{Settings: Settings{Getenv: envFor(srv.URL)}, Launch: launch.Launch{Given: launch.Given{Inputs: []string{"depth=5", "topic=t"}}}}
	if _, res, err := execute(t, plan, opts); err != nil || res.Usage.Total.Calls != 10 {
		t.Fatalf("run with depth 5: err %v, calls %v, want 10", err, res)
	}
	opts.Given.Inputs = []string{"depth=9", "topic=t"}
	if _, _, err := execute(t, plan, opts); err == nil || !strings.Contains(err.Error(), "maximum") {
		t.Fatalf("depth 9 is above the input's maximum: err %v", err)
	}
}
