package dryrun

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/scripted"
)

// boundCases are flows of every bounded construct, each with the formula of
// its worst-case calls written out. A conversation without verdicts or
// until runs to max_turns, so a run answered by stand-ins makes exactly
// its worst case too.
var boundCases = []struct {
	name string
	body string
	// want is the formula's value; small is the same flow at small sizes
	// (vars given with --set), and wantSmall its formula's value.
	want      int
	small     []string
	wantSmall int
	// cap is the simulated-call cap that cuts the walk (0: 500).
	cap int
}{
	{
		name: "loop",
		body: `nodes:
  answer: {kind: ask, agents: [a, b, c], template: p, record: answer}
flow:
  - loop: {as: round, max: vars.n, do: [answer]}`,
		want: 3 * 400, small: []string{"n=2"}, wantSmall: 3 * 2,
	},
	{
		name: "foreach over goals",
		body: `nodes:
  answer: {kind: ask, agents: [a, b], template: p, record: answer}
flow:
  - foreach: {in: goals, as: goal, do: [{loop: {as: round, max: vars.n, do: [answer]}}]}`,
		want: 2 * 400 * 2, small: []string{"n=3"}, wantSmall: 2 * 3 * 2,
	},
	{
		name: "nested foreach",
		body: `nodes:
  answer: {kind: ask, agents: [a, b, c], template: p, record: answer}
flow:
  - foreach: {in: 'map(1..vars.n, {#})', as: outer, do: [{foreach: {in: 'map(1..vars.n, {#})', as: inner, do: [answer]}}]}`,
		want: 400 * 400 * 3, small: []string{"n=3"}, wantSmall: 3 * 3 * 3,
	},
	{
		name: "concurrent foreach",
		body: `nodes:
  expand: {kind: ask, agents: [a, b], template: p, record: thought}
  score: {kind: ask, agents: [c], template: p, record: score}
flow:
  - foreach: {in: 'map(1..vars.n, {#})', as: branch, concurrency: 4, do: [expand, score]}`,
		want: 400 * 3, small: []string{"n=5"}, wantSmall: 5 * 3,
	},
	{
		name: "conversation in a concurrent foreach",
		body: `nodes:
  talk: {kind: converse, agents: [a, b], message: {template: talk}, max_turns: 30}
flow:
  - foreach: {in: 'map(1..vars.n, {#})', as: branch, concurrency: 3, do: [talk]}`,
		want: 400 * 30, small: []string{"n=2"}, wantSmall: 2 * 30, cap: 45,
	},
	{
		name: "conversation per goal",
		body: `nodes:
  talk: {kind: converse, agents: [a, b, c], message: {template: talk}, max_turns: 40}
flow:
  - foreach: {in: goals, as: goal, do: [talk]}`,
		want: 2 * 40, small: nil, wantSmall: 2 * 40, cap: 25,
	},
	{
		name: "conversation in a loop in a foreach",
		body: `nodes:
  talk: {kind: converse, agents: [a, b], message: {template: talk}, max_turns: 20}
  answer: {kind: ask, agents: [a, b, c], template: p, record: answer}
flow:
  - foreach: {in: goals, as: goal, do: [{loop: {as: round, max: vars.n, do: [talk, answer]}}]}`,
		want: 2 * 400 * (20 + 3), small: []string{"n=2"}, wantSmall: 2 * 2 * (20 + 3),
	},
}

// TestDryRunExtrapolatesEveryBound: when the simulated-call cap stops a dry
// run inside a loop, a foreach (nested or not) or a conversation, the worst
// case it reports is the construct's formula, the same as when nothing is
// cut; at small sizes it is also the number of calls a run answered by
// stand-ins makes.
func TestDryRunExtrapolatesEveryBound(t *testing.T) {
	for _, tc := range boundCases {
		t.Run(tc.name, func(t *testing.T) {
			spec := writeSpec(t, t.TempDir(), strings.Replace(dryBase, "vars:\n", "vars:\n  n: 400\n", 1)+tc.body+"\noutputs: {n: len(messages)}\n")
			plan := loadPlan(t, spec)
			given := launch.Given{Inputs: []string{"question=q"}}
			limit := tc.cap
			if limit == 0 {
				limit = 500
			}
			rep, err := Run(plan, Options{Given: given, CallBudget: limit})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Calls != tc.want {
				t.Errorf("cut at %d simulated calls: worst case %d (%d extrapolated), want %d", limit, rep.Calls, rep.Extrapolated, tc.want)
			}
			if rep.Extrapolated == 0 {
				t.Errorf("nothing was extrapolated: the cap of %d calls did not cut the walk", limit)
			}
			if rep.UpperBound < rep.Calls {
				t.Errorf("upper bound %d below the worst case %d", rep.UpperBound, rep.Calls)
			}

			small := given
			small.Sets = tc.small
			rep, err = Run(plan, Options{Given: small})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Calls != tc.wantSmall || rep.Extrapolated != 0 {
				t.Errorf("small: worst case %d (%d extrapolated), want %d simulated", rep.Calls, rep.Extrapolated, tc.wantSmall)
			}
			if got := scriptedCalls(t, spec, small); got != tc.wantSmall {
				t.Errorf("small: a run answered by stand-ins made %d calls, the dry run's worst case is %d", got, tc.wantSmall)
			}
		})
	}
}

// scriptedCalls runs a spec against stand-in replies (runtime/scripted, as
// runner test does) and counts the calls it sent.
func scriptedCalls(t *testing.T, spec string, given launch.Given) int {
	t.Helper()
	tr := scripted.New(scripted.Script{})
	r, err := runtime.Start(runtest.LoadPlan(t, spec), runtime.Options{
		Launch:   launch.Launch{Given: given},
		Settings: runtime.Settings{RunsDir: t.TempDir(), Getenv: runtest.Env("http://runner-test.invalid", "k")},
		Seams:    runtime.Seams{HTTPClient: &http.Client{Transport: tr}, Sleep: runtest.NoSleep},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	return len(tr.Attempts())
}
