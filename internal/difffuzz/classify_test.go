package difffuzz

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// TestWarnedNeedsItsWarning: a failure under some profiles only is
// accepted-warned only when a warning at a position names its node and its
// failure as depending on the replies; a warning about another node, about
// something else, without a position, or a failure under every profile
// stays a violation. Random verdicts, from parts that match or not.
func TestWarnedNeedsItsWarning(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for trial := 0; trial < 500; trial++ {
		// the failing place is a node or one of the spec's outputs
		place, other := `node "select"`, `node "value"`
		if rng.Intn(2) == 0 {
			place, other = `output "weights"`, `output "score"`
		}
		if rng.Intn(4) == 0 {
			other = `node "weights"`
		}
		failure := place + ` value (sortBy(x, .score)): invalid operation: float64 < bool (1:27)`
		// or a loop's condition, which names no node
		loop := rng.Intn(3) == 0
		if loop {
			place, other = `loop until (x.score < y)`, `loop until (x.score > y)`
			if rng.Intn(2) == 0 {
				other = `node "select"`
			}
			failure = "spec.yaml:12:7: " + place + `: invalid operation: float64 < bool (1:27)`
		}
		node, what, pos, dep := rng.Intn(2) == 0, rng.Intn(2) == 0, rng.Intn(2) == 0, rng.Intn(2) == 0
		w := ""
		if pos {
			w = "spec.yaml:92:5: "
		}
		w += "warning: "
		if node {
			w += place + ": "
		} else {
			w += other + ": "
		}
		switch {
		case what && loop:
			w += "invalid operation: float64 < bool (1:27) (in round 1)"
		case what:
			w += "value (...): invalid operation: float64 < bool (1:27) (in round 1)"
		default:
			w += "reads .Nodes.x, but node x may not have run yet"
		}
		if dep {
			w += ": it depends only on the replies; guard it"
		}
		failing := 1 + rng.Intn(len(Profiles))
		v := Verdict{Warnings: []string{w}}
		for i, p := range Profiles {
			o := Outcome{Profile: p, Status: "completed"}
			if i < failing {
				o = Outcome{Profile: p, Status: "failed", Error: failure}
			}
			v.Runs = append(v.Runs, o)
		}
		got := v.Classify()
		want := ClassReplyFailure
		switch {
		case failing == len(Profiles):
			want = ClassSpecFailure
		case node && what && pos && dep:
			want = ClassWarned
		}
		if got != want {
			t.Fatalf("%q, %d of %d profiles failing: %s, want %s", w, failing, len(Profiles), got, want)
		}
	}
}

// TestSameFailureReadsOperandsAlike: a failure of one operator at one
// place reads alike whichever side holds which kind and whatever kind of
// number it is, and unlike one of another operator, place or pair of kinds.
func TestSameFailureReadsOperandsAlike(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	kinds := []string{"string", "int", "float64", "int64", "bool", "<nil>", "map"}
	ops := []string{"<", ">", "<=", ">=", "+", "-"}
	msg := func(a, op, b string, pos int) string {
		return fmt.Sprintf(`node "n": value (x): invalid operation: %s %s %s (1:%d)`, a, op, b, pos)
	}
	kind := func(k string) string {
		if strings.HasPrefix(k, "int") || strings.HasPrefix(k, "float") {
			return "number"
		}
		return k
	}
	pair := func(a, b string) [2]string {
		a, b = kind(a), kind(b)
		if b < a {
			a, b = b, a
		}
		return [2]string{a, b}
	}
	for trial := 0; trial < 3000; trial++ {
		a, b, op, pos := kinds[rng.Intn(len(kinds))], kinds[rng.Intn(len(kinds))], ops[rng.Intn(len(ops))], 1+rng.Intn(3)
		c, d, op2, pos2 := kinds[rng.Intn(len(kinds))], kinds[rng.Intn(len(kinds))], ops[rng.Intn(len(ops))], 1+rng.Intn(3)
		if sameFailure(msg(a, op, b, pos)) != sameFailure(msg(b, op, a, pos)) {
			t.Fatalf("%s and its operands swapped read differently", msg(a, op, b, pos))
		}
		want := pair(a, b) == pair(c, d) && op == op2 && pos == pos2
		if got := sameFailure(msg(a, op, b, pos)) == sameFailure(msg(c, op2, d, pos2)); got != want {
			t.Fatalf("%q and %q read alike: %v, want %v", msg(a, op, b, pos), msg(c, op2, d, pos2), got, want)
		}
	}
}
