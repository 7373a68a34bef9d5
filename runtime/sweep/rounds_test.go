package sweep

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/debate-runner/runner/runtime/result"
)

// randomRoundRuns makes runs whose agents are right or wrong at random in
// each round, with round records as a run writes them: flips from the
// round before, an agent's answer changing while wrong at random.
func randomRoundRuns(r *rand.Rand, nRuns, nRounds, nAgents int) ([]Run, map[int]int) {
	var runs []Run
	changes := map[int]int{} // round -> runs whose majority changed
	for i := 0; i < nRuns; i++ {
		run := Run{Index: i, Status: []string{result.StatusCompleted, result.StatusInconclusive}[r.IntN(2)]}
		prev := map[string]float64{}
		for rd := 1; rd <= nRounds; rd++ {
			x := result.Round{Round: rd, Agents: map[string]float64{}}
			right := 0
			for a := 0; a < nAgents; a++ {
				id := fmt.Sprint("agent", a)
				s := float64(r.IntN(2))
				x.Agents[id] = s
				right += int(s)
				if p, ok := prev[id]; ok {
					switch {
					case p == 1 && s == 0:
						x.RightToWrong = append(x.RightToWrong, id)
					case p == 0 && s == 1:
						x.WrongToRight = append(x.WrongToRight, id)
					case s == 0 && r.IntN(2) == 0:
						x.ChangedWhileWrong = append(x.ChangedWhileWrong, id)
					}
				}
				prev[id] = s
			}
			sc := 0.0
			if 2*right > nAgents {
				sc = 1
			}
			x.Score = &sc
			x.Agreement = math.Max(float64(right), float64(nAgents-right)) / float64(nAgents)
			if rd > 1 && r.IntN(2) == 0 {
				x.MajorityChanged = true
				changes[rd]++
			}
			run.Rounds = append(run.Rounds, x)
		}
		runs = append(runs, run)
	}
	// A failed run's rounds (there are none in practice) are not counted.
	runs = append(runs, Run{Status: result.StatusFailed, Rounds: []result.Round{{Round: 1, MajorityChanged: true}}})
	return runs, changes
}

// TestRoundSummaryProperty: over random round records, each round counts
// every scored run; the right answers gained between rounds are the
// wrong→right flips less the right→wrong ones (no answer turns right or
// wrong unseen); the accuracy per round and per agent is the share of
// right answers; agreement stays within [1/2, 1] for right/wrong answers.
func TestRoundSummaryProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 5))
	for trial := 0; trial < 200; trial++ {
		nRuns, nRounds, nAgents := 1+r.IntN(8), 1+r.IntN(4), 1+r.IntN(4)
		runs, changes := randomRoundRuns(r, nRuns, nRounds, nAgents)
		s := &Summary{Runs: runs}
		s.tally()
		if len(s.Rounds) != nRounds {
			t.Fatalf("trial %d: %d rounds, want %d", trial, len(s.Rounds), nRounds)
		}
		rightIn := func(rd RoundSummary) float64 { return rd.AgentAccuracy.Mean * float64(rd.AgentAccuracy.N) }
		for i, rd := range s.Rounds {
			if rd.Round != i+1 || rd.Runs != nRuns || rd.Accuracy.N != nRuns || rd.AgentAccuracy.N != nRuns*nAgents {
				t.Fatalf("trial %d: round %+v, want round %d over %d runs of %d agents", trial, rd, i+1, nRuns, nAgents)
			}
			if i == 0 {
				if rd.RightToWrong+rd.WrongToRight+rd.ChangedWhileWrong != 0 {
					t.Fatalf("trial %d: flips in the first round: %+v", trial, rd)
				}
			} else if gained := rightIn(rd) - rightIn(s.Rounds[i-1]); math.Abs(gained-float64(rd.WrongToRight-rd.RightToWrong)) > 1e-9 {
				t.Fatalf("trial %d round %d: %v more right answers, but %d wrong→right and %d right→wrong", trial, rd.Round, gained, rd.WrongToRight, rd.RightToWrong)
			}
			n := 0.0
			for _, a := range rd.ByAgent {
				n += a.Mean * float64(a.N)
			}
			if math.Abs(n-rightIn(rd)) > 1e-9 {
				t.Fatalf("trial %d round %d: agents' right answers %v, all agents' %v", trial, rd.Round, n, rightIn(rd))
			}
			if rd.MajorityChanges != changes[rd.Round] {
				t.Fatalf("trial %d round %d: %d majority changes, want %d", trial, rd.Round, rd.MajorityChanges, changes[rd.Round])
			}
			if rd.Agreement < 0.5-1e-9 || rd.Agreement > 1+1e-9 {
				t.Fatalf("trial %d round %d: agreement %v", trial, rd.Round, rd.Agreement)
			}
		}
	}
}
