package result

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/debate-runner/runner/spec/value"
)

// genRecord is a random record of a debate: two nodes, goals or none,
// agents who speak in public, whisper, address one another in public, give,
// keep and change verdicts (some forced), withdraw (keeping theirs), write
// private notes, and a time keeper's interjections.
func genRecord(r *rand.Rand) []value.Message {
	agents := []string{"a", "b", "c", "d"}[:1+r.IntN(4)]
	verdicts := []string{"YES", "NO", "MAYBE"}[:1+r.IntN(3)]
	goals := []string{"", "g1", "g2"}[:1+r.IntN(3)]
	var ms []value.Message
	turn := 0
	for n := r.IntN(40); n > 0; n-- {
		turn++
		m := value.Message{Node: []string{"panel", "mods"}[r.IntN(2)], Goal: goals[r.IntN(len(goals))], Turn: turn, From: agents[r.IntN(len(agents))], Record: "message", Content: "x"}
		switch r.IntN(10) {
		case 0:
			m.Record, m.From = "interjection", "timekeeper"
		case 1:
			m.Private, m.Record = true, "private"
		case 2, 3:
			m.To, m.Whisper = agents[r.IntN(len(agents))], true
		case 4:
			m.To = agents[r.IntN(len(agents))]
		case 5:
			m.Withdrawn = true
		}
		if r.IntN(2) == 0 {
			m.Verdict = verdicts[r.IntN(len(verdicts))]
			m.Forced = r.IntN(8) == 0
		}
		ms = append(ms, m)
	}
	return ms
}

// standingAt is an agent's verdict in a thread's messages before position
// i, by scanning back for its last verdict.
func standingAt(ms []value.Message, agent string, i int) string {
	for j := i - 1; j >= 0; j-- {
		if ms[j].From == agent && ms[j].Verdict != "" {
			return ms[j].Verdict
		}
	}
	return ""
}

// TestDynamicsProperties checks the one definition of a debate's dynamics
// (result.json's, which summary.json adds up and runner dynamics prints)
// over generated records against a second reading of each thread: its
// messages picked again from the record, each agent's changes and final
// verdict from its own messages alone, the consensus and the message it
// formed at by testing every prefix, agreement and the plurality's changes
// by recounting the verdicts standing after every message, and each
// addressed message's effect by scanning back for the verdicts standing
// and forward for the addressee's next one. Renaming the agents renames
// the result and changes no count.
func TestDynamicsProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 37))
	for n := range 2000 {
		ms := genRecord(r)
		ds := Dynamics(ms)
		listed := map[[2]string]bool{}
		for _, d := range ds {
			checkThread(t, n, ms, d)
			listed[[2]string{d.Node, d.Goal}] = true
		}
		// Every thread with a verdict or a whisper is listed, and no other.
		for _, m := range ms {
			if !Speech(m) {
				continue
			}
			if (m.Verdict != "" || (m.Whisper && Addressed(m))) && !listed[[2]string{m.Node, m.Goal}] {
				t.Fatalf("case %d: thread %s/%s has a verdict or whisper and is not listed", n, m.Node, m.Goal)
			}
		}
		for _, d := range ds {
			if d.Verdicts == 0 && len(d.Whispers) == 0 {
				t.Fatalf("case %d: thread %s/%s listed with neither verdicts nor whispers", n, d.Node, d.Goal)
			}
		}
		renamed := make([]value.Message, len(ms))
		for j, m := range ms {
			m.From, m.To = rename(m.From), rename(m.To)
			if m.Verdict != "" {
				m.Verdict = "v-" + m.Verdict
			}
			renamed[j] = m
		}
		again := Dynamics(renamed)
		if len(again) != len(ds) {
			t.Fatalf("case %d: renaming gives %d threads, not %d", n, len(again), len(ds))
		}
		for i := range ds {
			a, b := again[i], ds[i]
			if a.Changes != b.Changes || a.Verdicts != b.Verdicts || a.MajorityChanges != b.MajorityChanges || a.FinalAgreement != b.FinalAgreement ||
				a.FirstAgreement != b.FirstAgreement || a.FormedAt != b.FormedAt || (a.Consensus == "") != (b.Consensus == "") || len(a.Whispers) != len(b.Whispers) || len(a.Public) != len(b.Public) {
				t.Fatalf("case %d: renamed agents give %+v, not %+v", n, a, b)
			}
		}
	}
}

func rename(id string) string {
	if id == "" || id == "timekeeper" {
		return id
	}
	return "agent-" + strings.ToUpper(id)
}

func checkThread(t *testing.T, n int, record []value.Message, d GoalDynamics) {
	t.Helper()
	var ms []value.Message
	for _, m := range record {
		if m.Node == d.Node && m.Goal == d.Goal && m.From != "" && !m.Private && m.Record != "interjection" {
			ms = append(ms, m)
		}
	}
	if len(ms) != d.Messages {
		t.Fatalf("case %d: thread %s/%s has %d messages, counted %d", n, d.Node, d.Goal, len(ms), d.Messages)
	}
	fail := func(format string, a ...any) {
		t.Fatalf("case %d thread %s/%s: %s\n%+v", n, d.Node, d.Goal, fmt.Sprintf(format, a...), d)
	}
	// Each agent alone.
	agents := map[string]bool{}
	verdicts, changes, total := 0, map[string]int{}, 0
	for _, m := range ms {
		agents[m.From] = true
	}
	if len(agents) != len(d.Participants) {
		fail("%d participants, listed %d", len(agents), len(d.Participants))
	}
	for _, p := range d.Participants {
		prev, mine, given, forced := "", 0, 0, 0
		for _, m := range ms {
			if m.From != p.Agent {
				continue
			}
			mine++
			if m.Verdict == "" {
				continue
			}
			given++
			verdicts++
			if prev != "" && prev != m.Verdict {
				changes[p.Agent]++
				total++
				tr := p.Transitions[changes[p.Agent]-1]
				if tr.From != prev || tr.To != m.Verdict || tr.Turn != m.Turn || tr.Forced != m.Forced {
					fail("%s's change %d is %+v, the record %s -> %s at %d", p.Agent, changes[p.Agent], tr, prev, m.Verdict, m.Turn)
				}
			}
			if m.Forced {
				forced++
			}
			prev = m.Verdict
		}
		if p.Messages != mine || p.Verdicts != given || p.Changes != changes[p.Agent] || len(p.Transitions) != p.Changes || p.Final != prev || d.ByAgent[p.Agent] != changes[p.Agent] {
			fail("%s: %+v; its messages give %d messages, %d verdicts, %d changes, final %q", p.Agent, p, mine, given, changes[p.Agent], prev)
		}
	}
	if d.Verdicts != verdicts || d.Changes != total {
		fail("%d verdicts and %d changes by agent", verdicts, total)
	}
	// The verdicts standing after each message, recounted.
	holders := func(i int) (map[string]int, int, bool) {
		held, k, all := map[string]int{}, 0, true
		first := ""
		for _, p := range d.Participants {
			v := standingAt(ms, p.Agent, i)
			if v == "" || (first != "" && v != first) {
				all = false
			}
			if first == "" {
				first = v
			}
			if v != "" {
				held[v]++
				k++
			}
		}
		return held, k, all
	}
	agreement := func(held map[string]int, k int) float64 {
		top := 0
		for _, c := range held {
			top = max(top, c)
		}
		if k == 0 {
			return 0
		}
		return float64(top) / float64(k)
	}
	held, k, agreedAtEnd := holders(len(ms))
	if math.Abs(d.FinalAgreement-agreement(held, k)) > 1e-12 {
		fail("final agreement, recounted %v", agreement(held, k))
	}
	if !agreedAtEnd {
		if d.Consensus != "" || d.FormedAt != 0 {
			fail("no consensus at the end, recounted")
		}
	} else {
		formed := len(ms)
		for formed > 1 {
			if _, _, ok := holders(formed - 1); !ok {
				break
			}
			formed--
		}
		if d.Consensus != standingAt(ms, d.Participants[0].Agent, len(ms)) || d.FormedAt != formed || d.FormedTurn != ms[formed-1].Turn {
			fail("consensus recounted formed at message %d", formed)
		}
	}
	// The plurality after every verdict, ties left out; first agreement
	// when every agent that ever gives a verdict has one standing.
	voters := map[string]bool{}
	for _, m := range ms {
		if m.Verdict != "" {
			voters[m.From] = true
		}
	}
	var seq []string
	firstDone := false
	for i, m := range ms {
		if m.Verdict == "" {
			continue
		}
		held, k, _ := holders(i + 1)
		if !firstDone {
			all := true
			for a := range voters {
				all = all && standingAt(ms, a, i+1) != ""
			}
			if all {
				firstDone = true
				if math.Abs(d.FirstAgreement-agreement(held, k)) > 1e-12 {
					fail("first agreement, recounted %v", agreement(held, k))
				}
			}
		}
		best, top, tie := "", 0, false
		for v, x := range held {
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
		fail("the plurality went %v", seq)
	}
	// Each addressed message, by scanning.
	type eff struct{ count, with, followed, changed, adopted int }
	for _, whisper := range []bool{true, false} {
		effects := map[[2]string]*eff{}
		for i, m := range ms {
			if m.To == "" || m.To == m.From || m.Whisper != whisper {
				continue
			}
			key := [2]string{m.From, m.To}
			if effects[key] == nil {
				effects[key] = &eff{}
			}
			e := effects[key]
			e.count++
			before := standingAt(ms, m.To, i)
			sender := m.Verdict
			if sender == "" {
				sender = standingAt(ms, m.From, i)
			}
			if sender != "" {
				e.with++
			}
			for _, later := range ms[i+1:] {
				if later.From != m.To || later.Verdict == "" {
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
		edges := d.Public
		if whisper {
			edges = d.Whispers
		}
		if len(effects) != len(edges) {
			fail("%d edges (whispers %v), listed %d", len(effects), whisper, len(edges))
		}
		for _, w := range edges {
			e := effects[[2]string{w.From, w.To}]
			if e == nil || !reflect.DeepEqual(*e, eff{w.Count, w.WithVerdict, w.Followed, w.Changed, w.Adopted}) {
				fail("%s→%s (whispers %v) %+v, by scanning %+v", w.From, w.To, whisper, w, e)
			}
		}
	}
}

// TestAdoptionIsTheAddresseesNextVerdict: a whisper followed by the
// addressee taking the sender's verdict is an adoption; one whose
// addressee next gives its own verdict again is neither.
func TestAdoptionIsTheAddresseesNextVerdict(t *testing.T) {
	ms := []value.Message{
		{Node: "p", Turn: 1, From: "a", Verdict: "YES"},
		{Node: "p", Turn: 2, From: "b", Verdict: "NO"},
		{Node: "p", Turn: 3, From: "a", To: "b", Whisper: true},
		{Node: "p", Turn: 4, From: "b", Verdict: "YES"},
		{Node: "p", Turn: 5, From: "b", To: "a", Whisper: true, Verdict: "YES"},
		{Node: "p", Turn: 6, From: "a", Verdict: "YES"},
	}
	d := Dynamics(ms)[0]
	want := []Influence{
		{From: "a", To: "b", Count: 1, WithVerdict: 1, Followed: 1, Changed: 1, Adopted: 1},
		{From: "b", To: "a", Count: 1, WithVerdict: 1, Followed: 1},
	}
	if !reflect.DeepEqual(d.Whispers, want) {
		t.Errorf("whispers %+v, want %+v", d.Whispers, want)
	}
	if d.Consensus != "YES" || d.FormedAt != 4 || d.FormedTurn != 4 || d.Changes != 1 || d.MajorityChanges != 0 || d.FinalAgreement != 1 {
		t.Errorf("got %+v", d)
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
	fmt.Println(d.Changes, d.FinalAgreement, d.Consensus, d.Whispers[0].Adopted)
	// Output: 1 1 YES 1
}
