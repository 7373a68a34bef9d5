package dynamics

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/debate-runner/runner/spec/value"
)

// genRecord is a random record of a debate: nodes, goals, agents who speak
// in public, whisper, address one another, give and change verdicts (some
// forced), write private notes, and a time keeper's interjections.
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
		}
		if r.IntN(2) == 0 {
			m.Verdict = verdicts[r.IntN(len(verdicts))]
			m.Forced = r.IntN(8) == 0
		}
		ms = append(ms, m)
	}
	return ms
}

// TestDynamicsProperties checks the definitions over generated records by
// replaying each thread message by message.
func TestDynamicsProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		ms := genRecord(r)
		run := Of(ms)
		speech := 0
		whispers, public := 0, 0
		for _, m := range ms {
			if m.Private || excluded[m.Record] || m.From == "" {
				continue
			}
			speech++
			if m.To != "" && m.To != m.From {
				if m.Whisper {
					whispers++
				} else {
					public++
				}
			}
		}
		total := 0
		for _, th := range run.Threads {
			total += th.Messages
			var msgs []value.Message
			for _, m := range ms {
				if m.Node == th.Node && m.Goal == th.Goal && !m.Private && !excluded[m.Record] && m.From != "" {
					msgs = append(msgs, m)
				}
			}
			if len(msgs) != th.Messages {
				t.Fatalf("case %d: thread %s/%s has %d messages, counted %d", i, th.Node, th.Goal, th.Messages, len(msgs))
			}
			// Replay: standing verdicts after each message.
			standing := map[string]string{}
			changes := map[string]int{}
			var states []map[string]string
			for _, m := range msgs {
				if m.Verdict != "" {
					if p := standing[m.From]; p != "" && p != m.Verdict {
						changes[m.From]++
					}
					standing[m.From] = m.Verdict
				}
				c := map[string]string{}
				for k, v := range standing {
					c[k] = v
				}
				states = append(states, c)
			}
			agreed := func(s map[string]string) bool {
				first := ""
				for _, a := range th.Participants {
					v := s[a.Agent]
					if v == "" || (first != "" && v != first) {
						return false
					}
					first = v
				}
				return len(th.Participants) > 0
			}
			for _, a := range th.Participants {
				if a.Changes != changes[a.Agent] || a.Changes != len(a.Transitions) || a.Final != standing[a.Agent] {
					t.Fatalf("case %d: %s in %s/%s: %+v, replay gives %d changes, final %q", i, a.Agent, th.Node, th.Goal, a, changes[a.Agent], standing[a.Agent])
				}
				if a.Verdicts > 0 && a.Changes > a.Verdicts-1 {
					t.Fatalf("case %d: %d changes from %d verdicts", i, a.Changes, a.Verdicts)
				}
			}
			end := len(states) - 1
			if th.Consensus == "" {
				if end >= 0 && agreed(states[end]) {
					t.Fatalf("case %d: %s/%s ends agreed but has no consensus", i, th.Node, th.Goal)
				}
				continue
			}
			if !agreed(states[end]) || states[end][th.Participants[0].Agent] != th.Consensus {
				t.Fatalf("case %d: consensus %s but the end is %v", i, th.Consensus, states[end])
			}
			for j := th.FormedAt; j <= end; j++ {
				if !agreed(states[j]) {
					t.Fatalf("case %d: consensus formed at %d but not held at %d", i, th.FormedAt, j)
				}
			}
			if th.FormedAt > 0 && agreed(states[th.FormedAt-1]) {
				t.Fatalf("case %d: consensus held already before %d", i, th.FormedAt)
			}
			if th.MajorityShare != 1 || th.Majority != th.Consensus {
				t.Fatalf("case %d: consensus %s with majority %s at %v", i, th.Consensus, th.Majority, th.MajorityShare)
			}
		}
		if total != speech {
			t.Fatalf("case %d: threads hold %d messages of %d", i, total, speech)
		}
		tot := Sum(run)
		if tot.Whispers.Messages != whispers || tot.Public.Messages != public {
			t.Fatalf("case %d: %d whispers and %d public counted, %d and %d sent", i, tot.Whispers.Messages, tot.Public.Messages, whispers, public)
		}
		for _, in := range []Influence{tot.Whispers, tot.Public} {
			if in.Adopted > in.WithVerdict || in.Adopted > in.Changed || in.Changed > in.Messages || in.WithVerdict > in.Messages {
				t.Fatalf("case %d: impossible counts %+v", i, in)
			}
		}
		// Summing a run k times multiplies every count by k.
		k := 1 + r.IntN(4)
		runs := make([]*Run, k)
		for j := range runs {
			runs[j] = run
		}
		many := Sum(runs...)
		if many.Changes != k*tot.Changes || many.Consensus != k*tot.Consensus || many.Whispers.Adopted != k*tot.Whispers.Adopted || many.Threads != k*tot.Threads {
			t.Fatalf("case %d: %d copies sum to %+v, one is %+v", i, k, many, tot)
		}
		// Renaming the agents renames the result and changes no count.
		renamed := make([]value.Message, len(ms))
		for j, m := range ms {
			m.From = rename(m.From)
			m.To = rename(m.To)
			renamed[j] = m
		}
		again := Sum(Of(renamed))
		again.ChangesByAgent, tot.ChangesByAgent = nil, nil
		if !reflect.DeepEqual(again, tot) {
			t.Fatalf("case %d: renamed agents give %+v, not %+v", i, again, tot)
		}
	}
}

func rename(id string) string {
	if id == "" || id == "timekeeper" {
		return id
	}
	return "agent-" + strings.ToUpper(id)
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
	run := Of(ms)
	want := []Edge{
		{From: "a", To: "b", Influence: Influence{Messages: 1, WithVerdict: 1, Changed: 1, Adopted: 1}},
		{From: "b", To: "a", Influence: Influence{Messages: 1, WithVerdict: 1}},
	}
	if !reflect.DeepEqual(run.Whispers, want) {
		t.Errorf("whispers %+v, want %+v", run.Whispers, want)
	}
	th := run.Threads[0]
	if th.Consensus != "YES" || th.FormedAt != 3 || th.FormedTurn != 4 {
		t.Errorf("consensus %q formed at %d (turn %d), want YES at 3 (turn 4)", th.Consensus, th.FormedAt, th.FormedTurn)
	}
	var b strings.Builder
	rep := &Report{Dir: "runs/x", Runs: map[string]*Run{"x": run}, Totals: Sum(run)}
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"consensus: YES, all 2, from turn 4", "b: 3 messages, final YES, 1 change (NO -> YES at turn 4)", "a -> b: 1, 1 changed, 1 adopted"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, b.String())
		}
	}
}
