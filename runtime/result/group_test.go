package result

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/debate-runner/runner/spec/value"
)

// randomDebate is a message list of a goal-chained debate: agents give
// verdicts, withdraw from the conversation (keeping them), whisper (with or without a verdict), and talk
// without one, over one or two goals.
func randomDebate(rng *rand.Rand) []value.Message {
	agents := []string{"a", "b", "c", "d"}[:2+rng.IntN(3)]
	verdicts := []string{"YES", "NO", "MAYBE"}[:1+rng.IntN(3)]
	goals := []string{"g1", "g2"}[:1+rng.IntN(2)]
	var msgs []value.Message
	for range rng.IntN(40) {
		m := value.Message{Goal: goals[rng.IntN(len(goals))], From: agents[rng.IntN(len(agents))]}
		switch rng.IntN(6) {
		case 0:
			// Withdrawing from the conversation keeps the verdict.
			m.Withdrawn = true
			m.Verdict = verdicts[rng.IntN(len(verdicts))]
		case 1, 2:
			m.Verdict = verdicts[rng.IntN(len(verdicts))]
		case 3:
			m.Whisper = true
			for m.To = m.From; m.To == m.From; {
				m.To = agents[rng.IntN(len(agents))]
			}
			if rng.IntN(2) == 0 {
				m.Verdict = verdicts[rng.IntN(len(verdicts))]
			}
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// verdictAt is an agent's verdict on a goal after the messages before
// position i (by a backward scan: its last verdict).
func verdictAt(msgs []value.Message, goal, agent string, i int) string {
	for j := i - 1; j >= 0; j-- {
		m := msgs[j]
		if m.Goal != goal || m.From != agent {
			continue
		}
		if m.Verdict != "" {
			return m.Verdict
		}
	}
	return ""
}

// TestDynamicsByScanning checks the dynamics of generated debates against
// a second reading of the messages: each agent's changes from its own
// messages alone, the final agreement from each agent's last verdict, each
// whisper's effect by scanning back for the verdicts held and forward for
// the addressee's next one, and the plurality's changes by recounting the
// verdicts held after every message.
func TestDynamicsByScanning(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 6))
	for n := range 1500 {
		msgs := randomDebate(rng)
		for _, d := range Dynamics(msgs) {
			g := d.Goal
			agents := map[string]bool{}
			verdicts, changes := 0, map[string]int{}
			for _, m := range msgs {
				if m.Goal == g {
					agents[m.From] = true
				}
			}
			for a := range agents {
				prev := ""
				for _, m := range msgs {
					if m.Goal != g || m.From != a {
						continue
					}
					if m.Verdict != "" {
						verdicts++
						if prev != "" && prev != m.Verdict {
							changes[a]++
						}
						prev = m.Verdict
					}
				}
			}
			total := 0
			for a, c := range changes {
				total += c
				if d.ByAgent[a] != c {
					t.Fatalf("case %d goal %s: agent %s changed %d times, dynamics say %d", n, g, a, c, d.ByAgent[a])
				}
			}
			if d.Verdicts != verdicts || d.Changes != total {
				t.Fatalf("case %d goal %s: %d verdicts, %d changes; dynamics %+v", n, g, verdicts, total, d)
			}

			held := map[string]int{}
			holders := 0
			for a := range agents {
				if v := verdictAt(msgs, g, a, len(msgs)); v != "" {
					held[v]++
					holders++
				}
			}
			top := 0
			for _, c := range held {
				top = max(top, c)
			}
			want := 0.0
			if holders > 0 {
				want = float64(top) / float64(holders)
			}
			if math.Abs(d.FinalAgreement-want) > 1e-12 {
				t.Fatalf("case %d goal %s: final agreement %v, want %v", n, g, d.FinalAgreement, want)
			}

			type eff struct{ count, followed, changed, adopted int }
			effects := map[[2]string]*eff{}
			for i, m := range msgs {
				if m.Goal != g || !m.Whisper {
					continue
				}
				k := [2]string{m.From, m.To}
				if effects[k] == nil {
					effects[k] = &eff{}
				}
				e := effects[k]
				e.count++
				before := verdictAt(msgs, g, m.To, i)
				sender := m.Verdict
				if sender == "" {
					sender = verdictAt(msgs, g, m.From, i)
				}
				for _, later := range msgs[i+1:] {
					if later.Goal != g || later.From != m.To || later.Verdict == "" {
						continue
					}
					e.followed++
					if later.Verdict != before {
						e.changed++
						if later.Verdict == sender {
							e.adopted++
						}
					}
					break
				}
			}
			if len(effects) != len(d.Whispers) {
				t.Fatalf("case %d goal %s: %d whisper edges, dynamics %+v", n, g, len(effects), d.Whispers)
			}
			for _, w := range d.Whispers {
				e := effects[[2]string{w.From, w.To}]
				if e == nil || e.count != w.Count || e.followed != w.Followed || e.changed != w.Changed || e.adopted != w.Adopted {
					t.Fatalf("case %d goal %s: whispers %s→%s %+v, by scanning %+v", n, g, w.From, w.To, w, e)
				}
			}

			// The plurality after every message of the goal, ties and
			// nothing held left out; its changes are between neighbours.
			var seq []string
			for i, m := range msgs {
				if m.Goal != g {
					continue
				}
				c := map[string]int{}
				for a := range agents {
					if v := verdictAt(msgs, g, a, i+1); v != "" {
						c[v]++
					}
				}
				best, top, tie := "", 0, false
				for v, x := range c {
					if x > top {
						best, top, tie = v, x, false
					} else if x == top {
						tie = true
					}
				}
				if best != "" && !tie && (len(seq) == 0 || seq[len(seq)-1] != best) {
					seq = append(seq, best)
				}
			}
			if max(len(seq)-1, 0) != d.MajorityChanges {
				t.Fatalf("case %d goal %s: plurality went %v, dynamics count %d changes", n, g, seq, d.MajorityChanges)
			}
		}
	}
}

func ExampleDynamics() {
	msgs := []value.Message{
		{Goal: "hire", From: "a", Verdict: "YES"},
		{Goal: "hire", From: "b", Verdict: "NO"},
		{Goal: "hire", From: "a", To: "b", Whisper: true},
		{Goal: "hire", From: "b", Verdict: "YES"},
	}
	d := Dynamics(msgs)[0]
	fmt.Println(d.Changes, d.FinalAgreement, d.Whispers[0].Adopted)
	// Output: 1 1 1
}
