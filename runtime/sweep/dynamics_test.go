package sweep

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec/value"
)

// TestDynamicsAddUp: a sweep's dynamics are its runs' added up goal by
// goal and edge by edge, and its agreements their means, on generated
// runs.
func TestDynamicsAddUp(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 37))
	for range 300 {
		var runs []Run
		for range rng.IntN(6) {
			var msgs []value.Message
			for range rng.IntN(30) {
				m := value.Message{Goal: []string{"g1", "g2", ""}[rng.IntN(3)], From: []string{"a", "b", "c"}[rng.IntN(3)]}
				if rng.IntN(3) == 0 {
					m.Whisper, m.To = true, []string{"a", "b", "c"}[rng.IntN(3)]
				}
				if rng.IntN(2) == 0 {
					m.Verdict = []string{"Y", "N"}[rng.IntN(2)]
				}
				msgs = append(msgs, m)
			}
			runs = append(runs, Run{Dynamics: result.Dynamics(msgs)})
		}
		sum := summarizeDynamics(runs)
		for _, g := range sum {
			var n, verdicts, changes, majority, count, followed, changed, adopted, sc, sf, sch, sa int
			first, final := 0.0, 0.0
			for _, r := range runs {
				for _, d := range r.Dynamics {
					if d.Goal != g.Goal {
						continue
					}
					n++
					verdicts += d.Verdicts
					changes += d.Changes
					majority += d.MajorityChanges
					first += d.FirstAgreement
					final += d.FinalAgreement
					for _, w := range d.Whispers {
						count, followed, changed, adopted = count+w.Count, followed+w.Followed, changed+w.Changed, adopted+w.Adopted
					}
				}
			}
			for _, w := range g.Whispers {
				sc, sf, sch, sa = sc+w.Count, sf+w.Followed, sch+w.Changed, sa+w.Adopted
			}
			if g.Runs != n || g.Verdicts != verdicts || g.Changes != changes || g.MajorityChanges != majority ||
				math.Abs(g.MeanFirstAgreement-first/float64(n)) > 1e-12 || math.Abs(g.MeanFinalAgreement-final/float64(n)) > 1e-12 ||
				sc != count || sf != followed || sch != changed || sa != adopted {
				t.Fatalf("goal %q: summary %+v; runs add up to %d runs, %d verdicts, %d changes, whispers %d/%d/%d/%d", g.Goal, g, n, verdicts, changes, count, followed, changed, adopted)
			}
		}
	}
}
