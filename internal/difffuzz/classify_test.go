package difffuzz

import (
	"math/rand"
	"testing"
)

// TestWarnedNeedsItsWarning: a failure under some profiles only is
// accepted-warned only when a warning at a position names its node and its
// failure as depending on the replies; a warning about another node, about
// something else, without a position, or a failure under every profile
// stays a violation. Random verdicts, from parts that match or not.
func TestWarnedNeedsItsWarning(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	failure := `node "select": value (sortBy(x, .score)): invalid operation: float64 < bool (1:27)`
	for trial := 0; trial < 500; trial++ {
		node, what, pos, dep := rng.Intn(2) == 0, rng.Intn(2) == 0, rng.Intn(2) == 0, rng.Intn(2) == 0
		w := ""
		if pos {
			w = "spec.yaml:92:5: "
		}
		w += "warning: "
		if node {
			w += `node "select": `
		} else {
			w += `node "value": `
		}
		if what {
			w += "value (...): invalid operation: float64 < bool (1:27) (in round 1)"
		} else {
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
