package runtime

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/launch"
)

// The property, for loop counters on messages: a node nested in 1 to 3
// random loops and foreach steps, of random sizes, records one message per
// innermost iteration, each carrying every enclosing counter (loops.NAME,
// 1-based), exactly the cartesian product of the iterations in the order
// the flow walks them; and a template filtering with inLoop on the outer
// loop sees, in every iteration, exactly the messages of the outer
// iteration it is in that were recorded before it.
func TestLoopCountersOnMessagesProperty(t *testing.T) {
	srv := llmtest.New(t, keyed(answerOf))
	for seed := uint64(0); seed < 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		depth := 1 + r.IntN(3)
		names := []string{"outer", "middle", "inner"}[3-depth:]
		sizes := make([]int, depth)
		flow := "[answer]"
		for d := depth - 1; d >= 0; d-- {
			sizes[d] = 1 + r.IntN(3)
			if r.IntN(2) == 0 {
				flow = fmt.Sprintf("[{loop: {as: %s, max: %d, do: %s}}]", names[d], sizes[d], flow)
			} else {
				items := make([]string, sizes[d])
				for i := range items {
					items[i] = fmt.Sprintf("%q", fmt.Sprintf("x%d", i))
				}
				flow = fmt.Sprintf("[{foreach: {as: %s, in: '[%s]', do: %s}}]", names[d], strings.Join(items, ", "), flow)
			}
		}
		// The template counts the messages of its outer iteration so far.
		src := fmt.Sprintf(`version: 1
name: loops
agents: {a: {}}
templates:
  define:
    t: 'seen {{len (inLoop "%s" .Loops.%s .History)}} at {{.Loops.%s}}'
nodes:
  answer: {kind: ask, agents: [a], template: t, record: answer}
flow: %s
`, names[0], names[0], names[depth-1], flow)
		before := len(srv.Requests())
		plan := loadPlan(t, writeSpec(t, t.TempDir(), src))
		run, _, err := execute(t, plan, Options{Settings: Settings{Getenv: envFor(srv.URL)}})
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, src)
		}
		var want []string
		var walk func(d int, at []int)
		walk = func(d int, at []int) {
			if d == depth {
				parts := make([]string, depth)
				for i, n := range at {
					parts[i] = fmt.Sprintf("%s:%d", names[i], n)
				}
				want = append(want, strings.Join(parts, " "))
				return
			}
			for i := 1; i <= sizes[d]; i++ {
				walk(d+1, append(slices.Clone(at), i))
			}
		}
		walk(0, nil)
		var got []string
		for _, m := range run.messages {
			if m.Record != "answer" {
				continue
			}
			parts := make([]string, 0, len(m.Loops))
			for _, n := range names {
				if v, ok := m.Loops[n]; ok {
					parts = append(parts, fmt.Sprintf("%s:%d", n, v))
				}
			}
			if len(parts) != len(m.Loops) {
				t.Fatalf("seed %d: message %s has counters %v, of loops that do not enclose it", seed, m.ID, m.Loops)
			}
			got = append(got, strings.Join(parts, " "))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: messages carry %q, want %q\n%s", seed, got, want, src)
		}
		// The k-th call of an outer iteration saw k messages of it.
		per := len(want) / sizes[0]
		for i, req := range srv.Requests()[before:] {
			inner := strings.Fields(want[i])[depth-1]
			prompt := fmt.Sprintf("seen %d at %s", i%per, inner[strings.Index(inner, ":")+1:])
			if last := req.Messages[len(req.Messages)-1].Content; !strings.Contains(last, prompt) {
				t.Fatalf("seed %d: call %d was asked %q, want %q\n%s", seed, i+1, last, prompt, src)
			}
		}
	}
}

// The property, for the "ran" test: of K nodes each run under its own if
// on a random var, exactly those whose var held have ran true, in
// expressions (nodes.ID?.ran) and in templates ((index .Nodes "ID").Ran),
// whereas index .Nodes gives every node a value.
func TestNodeRanProperty(t *testing.T) {
	srv := llmtest.New(t, keyed(answerOf))
	for seed := uint64(0); seed < 10; seed++ {
		r := rand.New(rand.NewPCG(seed, 11))
		k := 1 + r.IntN(4)
		var vars, nodes, flow, outs, sets, tmpl, want []string
		for i := 0; i < k; i++ {
			on := r.IntN(2) == 0
			vars = append(vars, fmt.Sprintf("  v%d: %v", i, r.IntN(2) == 0))
			sets = append(sets, fmt.Sprintf("v%d=%v", i, on))
			nodes = append(nodes, fmt.Sprintf("  n%d: {kind: compute, value: '%d'}", i, i))
			flow = append(flow, fmt.Sprintf("  - {if: vars.v%d, then: [n%d]}", i, i))
			outs = append(outs, fmt.Sprintf("  r%d: nodes.n%d?.ran ?? false", i, i))
			tmpl = append(tmpl, fmt.Sprintf(`n%d={{(index .Nodes "n%d").Ran}}`, i, i))
			want = append(want, fmt.Sprintf("n%d=%v", i, on))
		}
		src := fmt.Sprintf("version: 1\nname: ran\nvars:\n%s\nagents: {a: {}}\ntemplates:\n  define:\n    t: '%s'\nnodes:\n%s\n  report: {kind: ask, agents: [a], template: t}\nflow:\n%s\n  - report\noutputs:\n%s\n",
			strings.Join(vars, "\n"), strings.Join(tmpl, " "), strings.Join(nodes, "\n"), strings.Join(flow, "\n"), strings.Join(outs, "\n"))
		plan := loadPlan(t, writeSpec(t, t.TempDir(), src))
		before := len(srv.Requests())
		_, res, err := execute(t, plan, Options{Settings: Settings{Getenv: envFor(srv.URL)}, Launch: launch.Launch{Given: launch.Given{Sets: sets}}})
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, src)
		}
		for i := 0; i < k; i++ {
			if got, w := fmt.Sprint(res.Outputs[fmt.Sprintf("r%d", i)]), strings.TrimPrefix(want[i], fmt.Sprintf("n%d=", i)); got != w {
				t.Fatalf("seed %d: nodes.n%d?.ran is %s, want %s (%v)\n%s", seed, i, got, w, sets, src)
			}
		}
		reqs := srv.Requests()[before:]
		if got := reqs[0].Messages[len(reqs[0].Messages)-1].Content; got != strings.Join(want, " ") {
			t.Fatalf("seed %d: the template rendered %q, want %q", seed, got, strings.Join(want, " "))
		}
	}
}
