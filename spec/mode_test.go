package spec

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/expr-lang/expr"
)

// randomVotes is a list of votes: values from a small pool (numbers and
// text, some printing alike), some nil, in random order.
func randomVotes(r *rand.Rand) []any {
	pool := []any{"42", "17", "x", 3, 3.5, true, "3"}
	out := make([]any, r.IntN(9))
	for i := range out {
		if r.IntN(6) == 0 {
			continue // nil: no vote
		}
		out[i] = pool[r.IntN(len(pool))]
	}
	return out
}

// tally counts the votes by printed form and gives the most frequent forms
// in the order first seen.
func tally(votes []any) (top []string, counts map[string]int) {
	counts = map[string]int{}
	var order []string
	for _, v := range votes {
		if v == nil {
			continue
		}
		k := fmt.Sprint(v)
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	most := 0
	for _, k := range order {
		most = max(most, counts[k])
	}
	for _, k := range order {
		if counts[k] == most {
			top = append(top, k)
		}
	}
	return top, counts
}

// TestModeTieRulesProperty checks each tie rule on random vote lists: a
// single most frequent value wins under every rule; on a tie "none" gives
// nil, "first" the tied value seen first, and "random" one of the tied
// values, the same whatever the order of the list.
func TestModeTieRulesProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 3))
	for i := 0; i < 3000; i++ {
		votes := randomVotes(r)
		seed := r.Int64N(1000)
		top, _ := tally(votes)
		for _, tie := range TieRules {
			got := Mode(votes, tie, seed)
			switch {
			case len(top) == 0:
				if got != nil {
					t.Fatalf("Mode(%v, %s) = %v, want nil for no votes", votes, tie, got)
				}
			case len(top) == 1 || tie == TieFirst:
				if got == nil || fmt.Sprint(got) != top[0] {
					t.Fatalf("Mode(%v, %s) = %v, want %s", votes, tie, got, top[0])
				}
			case tie == TieNone:
				if got != nil {
					t.Fatalf("Mode(%v, none) = %v on a tie of %v, want nil", votes, got, top)
				}
			case tie == TieRandom:
				if got == nil || !containsStr(top, fmt.Sprint(got)) {
					t.Fatalf("Mode(%v, random) = %v, not one of the tied %v", votes, got, top)
				}
				shuffled := append([]any(nil), votes...)
				r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
				// The printed form decides: "3" and 3 are one value, so
				// compare what they print.
				if again := Mode(shuffled, TieRandom, seed); fmt.Sprint(again) != fmt.Sprint(got) {
					t.Fatalf("Mode(random, seed %d) gave %v for %v and %v for the same votes as %v", seed, got, votes, again, shuffled)
				}
			}
		}
	}
}

func containsStr(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestModeRandomTieHasNoFavourite draws three-way ties of random answers
// with random seeds: "random" must pick the first agent's answer about a
// third of the time (the old rule picked it always), and over seeds every
// tied value wins sometimes.
func TestModeRandomTieHasNoFavourite(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 4))
	const n = 900
	firsts := 0
	for i := 0; i < n; i++ {
		a, b, c := r.IntN(1000), 1000+r.IntN(1000), 2000+r.IntN(1000)
		votes := []any{a, b, c}
		if Mode(votes, TieRandom, r.Int64()) == a {
			firsts++
		}
	}
	// A binomial(900, 1/3) lies within 0.25..0.42 but for odds far below 1e-6.
	if f := float64(firsts) / n; f < 0.25 || f > 0.42 {
		t.Errorf("random tie picked the first value %d of %d times (%.2f), want about a third", firsts, n, f)
	}
	seen := map[any]bool{}
	for seed := int64(0); seed < 200; seed++ {
		seen[Mode([]any{"x", "y", "z", "w"}, TieRandom, seed)] = true
	}
	if len(seen) != 4 {
		t.Errorf("over 200 seeds a four-way tie gave only %v", seen)
	}
}

// A spec expression's mode(list, "random") draws with the run's seed (the
// environment's), without the spec naming it; "none" is the default.
func TestModeInSpecExpressions(t *testing.T) {
	votes := []string{"a", "b", "c"}
	got := map[any]bool{}
	for seed := int64(1); seed <= 40; seed++ {
		env := (&Env{Vars: map[string]any{"v": votes}, Seed: seed}).Map()
		prog, err := expr.Compile(`mode(vars.v, "random")`, exprOptions(env, AnyResult)...)
		if err != nil {
			t.Fatal(err)
		}
		out, err := expr.Run(prog, env)
		if err != nil {
			t.Fatal(err)
		}
		if again := Mode([]any{"c", "a", "b"}, TieRandom, seed); out != again {
			t.Fatalf("seed %d: the expression gave %v, Mode with the run's seed %v", seed, out, again)
		}
		got[out] = true
	}
	if len(got) < 2 {
		t.Errorf("forty seeds gave one answer: %v", got)
	}
	env := (&Env{Vars: map[string]any{"v": votes}}).Map()
	for src, want := range map[string]any{`mode(vars.v)`: nil, `mode(vars.v, "first")`: "a", `mode(vars.v, "none")`: nil} {
		prog, err := expr.Compile(src, exprOptions(env, AnyResult)...)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := expr.Run(prog, env); err != nil || !reflect.DeepEqual(out, want) {
			t.Errorf("%s = %v, %v; want %v", src, out, err, want)
		}
	}
	// A tie rule computed at run time that is none of the rules fails with
	// the rules named.
	env = (&Env{Vars: map[string]any{"v": votes, "rule": "fist"}}).Map()
	prog, err := expr.Compile(`mode(vars.v, vars.rule)`, exprOptions(env, AnyResult)...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := expr.Run(prog, env); err == nil || !strings.Contains(err.Error(), `tie rule "fist" is not one of none, first, random`) {
		t.Errorf("run-time bad rule: %v", err)
	}
}
