package sweep

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec/value"
)

// TestDynamicsAddUp: a sweep's dynamics are its runs' added up thread by
// thread and edge by edge, its agreements their means and its consensus
// rate the share of the runs with verdicts that ended in consensus, on
// generated runs; a sweep of k copies of one run counts k times each.
func TestDynamicsAddUp(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 37))
	for range 300 {
		var runs []Run
		for range rng.IntN(6) {
			var msgs []value.Message
			for range rng.IntN(30) {
				m := value.Message{Node: "n", Goal: []string{"g1", "g2", ""}[rng.IntN(3)], From: []string{"a", "b", "c"}[rng.IntN(3)]}
				if rng.IntN(3) == 0 {
					m.Whisper, m.To = rng.IntN(2) == 0, []string{"a", "b", "c"}[rng.IntN(3)]
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
			var n, with, verdicts, changes, majority, consensus int
			var whispers, public, sw, sp result.Influence
			first, final := 0.0, 0.0
			for _, r := range runs {
				for _, d := range r.Dynamics {
					if d.Goal != g.Goal || d.Node != g.Node {
						continue
					}
					n++
					if d.Verdicts > 0 {
						with++
					}
					if d.Consensus != "" {
						consensus++
					}
					verdicts += d.Verdicts
					changes += d.Changes
					majority += d.MajorityChanges
					first += d.FirstAgreement
					final += d.FinalAgreement
					for _, w := range d.Whispers {
						whispers.Add(w)
					}
					for _, w := range d.Public {
						public.Add(w)
					}
				}
			}
			for _, w := range g.Whispers {
				sw.Add(w)
			}
			for _, w := range g.Public {
				sp.Add(w)
			}
			if g.Runs != n || g.WithVerdicts != with || g.Consensus != consensus || g.Verdicts != verdicts || g.Changes != changes || g.MajorityChanges != majority ||
				math.Abs(g.MeanFirstAgreement-first/float64(n)) > 1e-12 || math.Abs(g.MeanFinalAgreement-final/float64(n)) > 1e-12 ||
				sw != whispers || sp != public {
				t.Fatalf("goal %q: summary %+v; runs add up to %d runs, %d verdicts, %d changes, whispers %+v, public %+v", g.Goal, g, n, verdicts, changes, whispers, public)
			}
			if (g.ConsensusRate == nil) != (with == 0) || (with > 0 && (g.ConsensusRate.N != with || math.Abs(g.ConsensusRate.Mean-float64(consensus)/float64(with)) > 1e-12 || g.ConsensusRate.Low > g.ConsensusRate.Mean || g.ConsensusRate.High < g.ConsensusRate.Mean)) {
				t.Fatalf("goal %q: consensus rate %+v of %d in %d", g.Goal, g.ConsensusRate, consensus, with)
			}
		}
		if len(runs) == 0 {
			continue
		}
		k := 1 + rng.IntN(4)
		copies := make([][]result.GoalDynamics, k)
		for i := range copies {
			copies[i] = runs[0].Dynamics
		}
		one, many := SumDynamics(copies[:1]), SumDynamics(copies)
		for i := range one {
			a, b := one[i], many[i]
			if b.Runs != k*a.Runs || b.Changes != k*a.Changes || b.Consensus != k*a.Consensus || len(b.Whispers) != len(a.Whispers) {
				t.Fatalf("%d copies sum to %+v, one is %+v", k, b, a)
			}
			for j := range a.Whispers {
				if b.Whispers[j].Adopted != k*a.Whispers[j].Adopted || b.Whispers[j].Count != k*a.Whispers[j].Count {
					t.Fatalf("%d copies of whispers %+v give %+v", k, a.Whispers[j], b.Whispers[j])
				}
			}
		}
	}
}
