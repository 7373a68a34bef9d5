// Package dynamics reads how a debate moved from a run's record of
// messages: who changed verdict and when, whether and when the group
// agreed, and who whispered to whom with what effect on the addressee's
// next verdict. Of one run (result.json) or summed over a sweep's runs.
//
// Definitions, which docs/experiments.md repeats for readers:
//   - A thread is the messages of one node on one goal (the node alone in
//     a spec without goals). Its participants are the authors of its
//     messages other than private notes, interjections, watcher posts and
//     summaries.
//   - An agent's verdict stands from the message that gives it until the
//     agent's next verdict in the thread. A change is a verdict that
//     differs from the one standing; a first verdict is not a change.
//   - The thread reached consensus when, at its end, every participant has
//     a verdict standing and all are the same. It formed at the message
//     from which that held to the end (its turn is that message's turn).
//   - A whisper influences when the addressee's next verdict after it
//     differs from the addressee's verdict standing at the whisper (a
//     change) and, more strongly, when that next verdict is the verdict the
//     sender had standing at the whisper (an adoption). Messages addressed
//     to one agent in public are counted the same way, as the baseline a
//     whisper's effect is read against.
package dynamics

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/debate-runner/runner/spec/value"
)

// Transition is one change of an agent's verdict.
type Transition struct {
	From string `json:"from"`
	To   string `json:"to"`
	Turn int    `json:"turn"`
	// Forced marks a verdict the conversation made its author give.
	Forced bool `json:"forced,omitempty"`
}

// AgentThread is one agent's verdicts in a thread.
type AgentThread struct {
	Agent       string       `json:"agent"`
	Messages    int          `json:"messages"`
	Verdicts    int          `json:"verdicts"`
	Final       string       `json:"final,omitempty"`
	Changes     int          `json:"changes"`
	Transitions []Transition `json:"transitions,omitempty"`
}

// Thread is the dynamics of one node on one goal.
type Thread struct {
	Node         string        `json:"node"`
	Goal         string        `json:"goal,omitempty"`
	Messages     int           `json:"messages"`
	Participants []AgentThread `json:"participants"`
	// Consensus is the verdict every participant holds at the end, "" when
	// they do not all hold the same one.
	Consensus string `json:"consensus,omitempty"`
	// FormedAt is the index (0-based, among the thread's messages) and
	// FormedTurn the turn of the message from which the consensus held.
	FormedAt   int `json:"formed_at"`
	FormedTurn int `json:"formed_turn,omitempty"`
	// Majority is the most common final verdict (ties: the first given)
	// and MajorityShare the share of the participants holding it.
	Majority      string  `json:"majority,omitempty"`
	MajorityShare float64 `json:"majority_share"`
	// Forced counts verdicts given because the conversation forced them:
	// a consensus reached with them is marked in the text.
	Forced int `json:"forced,omitempty"`
}

// Influence counts the messages addressed to one agent and what followed.
type Influence struct {
	Messages int `json:"messages"`
	// WithVerdict: the sender had a verdict standing.
	WithVerdict int `json:"with_verdict"`
	// Changed: the addressee's next verdict differed from its standing one.
	Changed int `json:"changed"`
	// Adopted: the addressee's next verdict was the sender's standing one,
	// which the addressee did not hold before.
	Adopted int `json:"adopted"`
}

func (a *Influence) add(b Influence) {
	a.Messages += b.Messages
	a.WithVerdict += b.WithVerdict
	a.Changed += b.Changed
	a.Adopted += b.Adopted
}

// Edge is the influence of one sender on one addressee.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
	Influence
}

// Run is the dynamics of one run's record.
type Run struct {
	Threads []Thread `json:"threads"`
	// Whispers are whispered messages, by sender and addressee; Public
	// are messages addressed to one agent in front of everyone.
	Whispers []Edge `json:"whispers"`
	Public   []Edge `json:"public"`
}

// excluded records are not a participant's speech.
var excluded = map[string]bool{"interjection": true, "watch": true, "summary": true}

// Of reads the dynamics of a run's messages, in the order recorded.
func Of(msgs []value.Message) *Run {
	type key struct{ node, goal string }
	var order []key
	byThread := map[key][]value.Message{}
	for _, m := range msgs {
		if m.Private || excluded[m.Record] || m.From == "" {
			continue
		}
		k := key{m.Node, m.Goal}
		if _, ok := byThread[k]; !ok {
			order = append(order, k)
		}
		byThread[k] = append(byThread[k], m)
	}
	r := &Run{Threads: []Thread{}, Whispers: []Edge{}, Public: []Edge{}}
	whispers, public := map[[2]string]*Influence{}, map[[2]string]*Influence{}
	for _, k := range order {
		th, w, p := thread(k.node, k.goal, byThread[k])
		r.Threads = append(r.Threads, th)
		for e, in := range w {
			if whispers[e] == nil {
				whispers[e] = &Influence{}
			}
			whispers[e].add(in)
		}
		for e, in := range p {
			if public[e] == nil {
				public[e] = &Influence{}
			}
			public[e].add(in)
		}
	}
	r.Whispers, r.Public = edges(whispers), edges(public)
	return r
}

func edges(m map[[2]string]*Influence) []Edge {
	out := []Edge{}
	for e, in := range m {
		out = append(out, Edge{From: e[0], To: e[1], Influence: *in})
	}
	slices.SortFunc(out, func(a, b Edge) int { return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To)) })
	return out
}

// thread reads one thread's messages.
func thread(node, goal string, ms []value.Message) (Thread, map[[2]string]Influence, map[[2]string]Influence) {
	th := Thread{Node: node, Goal: goal, Messages: len(ms), FormedAt: -1}
	idx := map[string]int{}
	for _, m := range ms {
		if _, ok := idx[m.From]; !ok {
			idx[m.From] = len(th.Participants)
			th.Participants = append(th.Participants, AgentThread{Agent: m.From})
		}
	}
	standing := make([]string, len(th.Participants))
	// agreedFrom is the message index from which every participant has
	// held the same verdict, -1 while they do not.
	agreedFrom := -1
	for i, m := range ms {
		a := &th.Participants[idx[m.From]]
		a.Messages++
		if m.Verdict == "" {
			continue
		}
		a.Verdicts++
		if m.Forced {
			th.Forced++
		}
		if prev := standing[idx[m.From]]; prev != "" && prev != m.Verdict {
			a.Changes++
			a.Transitions = append(a.Transitions, Transition{From: prev, To: m.Verdict, Turn: m.Turn, Forced: m.Forced})
		}
		standing[idx[m.From]] = m.Verdict
		if allSame(standing) {
			if agreedFrom < 0 {
				agreedFrom = i
			}
		} else {
			agreedFrom = -1
		}
	}
	for i := range th.Participants {
		th.Participants[i].Final = standing[i]
	}
	if agreedFrom >= 0 {
		th.Consensus, th.FormedAt, th.FormedTurn = standing[0], agreedFrom, ms[agreedFrom].Turn
	}
	th.Majority, th.MajorityShare = majority(standing)
	w, p := influence(ms)
	return th, w, p
}

// allSame reports whether every verdict is given and all are equal.
func allSame(vs []string) bool {
	for _, v := range vs {
		if v == "" || v != vs[0] {
			return false
		}
	}
	return len(vs) > 0
}

// majority is the most common non-empty verdict (the first to reach the
// count on a tie) and its share of all participants.
func majority(vs []string) (string, float64) {
	counts := map[string]int{}
	best, n := "", 0
	for _, v := range vs {
		if v == "" {
			continue
		}
		counts[v]++
		if counts[v] > n {
			best, n = v, counts[v]
		}
	}
	if len(vs) == 0 {
		return "", 0
	}
	return best, float64(n) / float64(len(vs))
}

// influence counts, for each message addressed to one participant, what
// the addressee's next verdict was: whispers and public messages apart.
func influence(ms []value.Message) (map[[2]string]Influence, map[[2]string]Influence) {
	w, p := map[[2]string]Influence{}, map[[2]string]Influence{}
	standing := map[string]string{}
	for i, m := range ms {
		if m.To != "" && m.To != m.From {
			e := [2]string{m.From, m.To}
			in := Influence{Messages: 1}
			sender := standing[m.From]
			if m.Verdict != "" {
				sender = m.Verdict // the message's own verdict stands with it
			}
			before := standing[m.To]
			if next, ok := nextVerdict(ms[i+1:], m.To); ok {
				if next != before {
					in.Changed = 1
				}
				if sender != "" && next == sender && before != sender {
					in.Adopted = 1
				}
			}
			if sender != "" {
				in.WithVerdict = 1
			}
			target := p
			if m.Whisper {
				target = w
			}
			old := target[e]
			old.add(in)
			target[e] = old
		}
		if m.Verdict != "" {
			standing[m.From] = m.Verdict
		}
	}
	return w, p
}

// nextVerdict is the first verdict agent gives in ms.
func nextVerdict(ms []value.Message, agent string) (string, bool) {
	for _, m := range ms {
		if m.From == agent && m.Verdict != "" {
			return m.Verdict, true
		}
	}
	return "", false
}

// Totals sums a run's (or several runs') dynamics.
type Totals struct {
	Runs    int `json:"runs"`
	Threads int `json:"threads"`
	// WithVerdicts are the threads in which some participant gave a
	// verdict; Consensus those that ended in one (ForcedConsensus of them
	// with a forced verdict in the thread).
	WithVerdicts    int `json:"with_verdicts"`
	Consensus       int `json:"consensus"`
	ForcedConsensus int `json:"forced_consensus"`
	Changes         int `json:"changes"`
	// ChangesByAgent are each agent's verdict changes, over all threads.
	ChangesByAgent map[string]int `json:"changes_by_agent"`
	Whispers       Influence      `json:"whispers"`
	Public         Influence      `json:"public"`
}

// Sum adds up runs.
func Sum(runs ...*Run) Totals {
	t := Totals{Runs: len(runs), ChangesByAgent: map[string]int{}}
	for _, r := range runs {
		for _, th := range r.Threads {
			t.Threads++
			given := false
			for _, a := range th.Participants {
				t.Changes += a.Changes
				t.ChangesByAgent[a.Agent] += a.Changes
				given = given || a.Verdicts > 0
			}
			if given {
				t.WithVerdicts++
			}
			if th.Consensus != "" {
				t.Consensus++
				if th.Forced > 0 {
					t.ForcedConsensus++
				}
			}
		}
		for _, e := range r.Whispers {
			t.Whispers.add(e.Influence)
		}
		for _, e := range r.Public {
			t.Public.add(e.Influence)
		}
	}
	return t
}

// Share is n of d as a percentage for text, "-" when d is 0.
func Share(n, d int) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f %%", 100*float64(n)/float64(d))
}
