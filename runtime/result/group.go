package result

import (
	"cmp"
	"maps"
	"slices"

	"github.com/debate-runner/runner/spec/value"
)

// This file is the one definition of a debate's dynamics: result.json's
// `dynamics`, which a sweep adds up in summary.json (runtime/sweep), a
// spec test asserts on and `runner dynamics` prints (runtime/dynamics).
// docs/experiments.md (Debate dynamics) repeats the definitions:
//   - A thread is the messages of one node on one goal (the node alone in
//     a spec without goals). Its participants are the authors of its
//     messages other than private notes, interjections, watcher posts and
//     summaries. A thread is listed when one of them gives a verdict or
//     whispers.
//   - An agent's verdict stands from the message that gives it until its
//     next verdict in the thread (withdrawing keeps it). A change is a
//     verdict that differs from the one standing; a first verdict is not.
//   - Consensus: at the end every participant has a verdict standing and
//     all are the same. It formed at the message from which that held.
//   - Agreement is the share of the agents holding a verdict that hold the
//     most common one: once every agent that gives one has given its first,
//     and at the end. The plurality is the verdict more agents hold than
//     any other (none on a tie).
//   - A message addressed to one participant (whispered, or in public) is
//     followed when the addressee gives a verdict after it; it changed the
//     addressee when that verdict differs from the one standing at the
//     message, and was adopted when it is the sender's (the message's own
//     verdict, else the sender's standing one). Public messages to one
//     agent are the baseline a whisper's effect is read against.
//
// The types below are result.json's format, apart from spec/value on
// purpose though AgentDynamics looks like value.Participant: that is a
// converse node's standing as its expressions see it while it goes; these
// are read from every node's messages after the run, by the definitions
// above, and a change to spec/value must not change result.json's bytes.

// GoalDynamics is how the verdicts of one thread (a node on a goal) moved
// over a run.
type GoalDynamics struct {
	Node string `json:"node,omitempty" doc:"the node"`
	Goal string `json:"goal,omitempty" doc:"the goal (absent outside goals)"`
	// Messages are the participants' messages in the thread.
	Messages int `json:"messages" doc:"the participants' messages in the thread (private notes, interjections, watcher posts and summaries left out)"`
	// Verdicts are the messages that gave a verdict, Changes those that
	// gave another verdict than their author's standing one.
	Verdicts int            `json:"verdicts" doc:"messages that gave a verdict"`
	Changes  int            `json:"changes" doc:"verdicts that differ from their author's standing verdict (its first verdict is no change)"`
	ByAgent  map[string]int `json:"changes_by_agent,omitempty" doc:"changes per agent id"`
	// Participants are each agent's messages, final verdict and changes.
	Participants []AgentDynamics `json:"participants" doc:"each participant in the order it first spoke: messages, verdicts, final verdict, and each change with its turn"`
	// Consensus is the verdict every participant holds at the end, ""
	// when they do not all hold the same one; FormedAt is the number
	// (1-based, among the thread's messages) and FormedTurn the turn of
	// the message from which it held.
	Consensus  string `json:"consensus,omitempty" doc:"the verdict every participant holds at the end (absent when they do not all hold the same one)"`
	FormedAt   int    `json:"formed_at,omitempty" doc:"the number (1-based, among the thread's messages) of the message from which the consensus held"`
	FormedTurn int    `json:"formed_turn,omitempty" doc:"the turn of that message"`
	// Forced counts verdicts the conversation forced.
	Forced int `json:"forced,omitempty" doc:"verdicts given because the conversation forced them"`
	// Majority is the plurality verdict at the end.
	Majority       string  `json:"majority,omitempty" doc:"the verdict more agents hold at the end than any other (absent on a tie)"`
	FirstAgreement float64 `json:"first_agreement" doc:"share of the agents holding the most common verdict once every agent that gives a verdict in the thread has given its first"`
	FinalAgreement float64 `json:"final_agreement" doc:"share of the agents holding the most common verdict at the end"`
	// MajorityChanges counts the times the plurality became another
	// verdict; SettledAt is the number of verdicts given when the final
	// plurality became the plurality for good (0: none at the end).
	MajorityChanges int `json:"majority_changes" doc:"times the plurality verdict became another verdict"`
	SettledAt       int `json:"settled_at,omitempty" doc:"the number of verdicts given when the final plurality verdict became the plurality for good (absent when the end had no plurality)"`
	// Whispers and Public are the messages addressed to one participant,
	// whispered and in public, per sender and addressee.
	Whispers []Influence `json:"whispers,omitempty" doc:"per sender and addressee of whispers, what the addressee's next verdict did"`
	Public   []Influence `json:"public,omitempty" doc:"the same for messages addressed to one agent in public (the baseline of the whispers' effect)"`
}

// AgentDynamics is one participant's verdicts in a thread.
type AgentDynamics struct {
	Agent       string       `json:"agent" doc:"the agent id"`
	Messages    int          `json:"messages" doc:"its messages in the thread"`
	Verdicts    int          `json:"verdicts" doc:"its messages with a verdict"`
	Final       string       `json:"final,omitempty" doc:"its verdict standing at the end"`
	Changes     int          `json:"changes" doc:"its changes of verdict"`
	Transitions []Transition `json:"transitions,omitempty" doc:"each change: from, to, the turn, and whether the conversation forced it"`
}

// Transition is one change of an agent's verdict.
type Transition struct {
	From   string `json:"from" doc:"the verdict standing before"`
	To     string `json:"to" doc:"the verdict given"`
	Turn   int    `json:"turn" doc:"the message's turn"`
	Forced bool   `json:"forced,omitempty" doc:"the conversation made its author give it"`
}

// Influence is what the messages from one agent addressed to another did
// to the addressee's next verdict in the thread.
type Influence struct {
	From  string `json:"from" doc:"the sender's agent id"`
	To    string `json:"to" doc:"the addressee's agent id"`
	Count int    `json:"count" doc:"how many messages"`
	// WithVerdict: the sender had a verdict (given in the message or
	// standing). Followed: the addressee gave a verdict after the message;
	// Changed: it differed from the addressee's standing one; Adopted: it
	// was the sender's, which the addressee had not held.
	WithVerdict int `json:"with_verdict" doc:"messages whose sender had a verdict (given with the message, or standing)"`
	Followed    int `json:"followed" doc:"messages after which the addressee gave a verdict"`
	Changed     int `json:"changed" doc:"messages after which the addressee's next verdict differed from its verdict standing at the message"`
	Adopted     int `json:"adopted" doc:"messages after which the addressee's next verdict was the sender's and had not been the addressee's"`
}

// Add adds b's counts to a's.
func (a *Influence) Add(b Influence) {
	a.Count += b.Count
	a.WithVerdict += b.WithVerdict
	a.Followed += b.Followed
	a.Changed += b.Changed
	a.Adopted += b.Adopted
}

// Speech reports whether a message is a participant's speech: not a
// private note, an interjection, a watcher's post or a summary.
func Speech(m value.Message) bool {
	return m.From != "" && !m.Private && m.Record != "interjection" && m.Record != "watch" && m.Record != "summary"
}

// Addressed reports whether a message is addressed to one other agent.
func Addressed(m value.Message) bool { return m.To != "" && m.To != m.From }

// Dynamics reads the dynamics of every thread with a verdict or a whisper,
// in the order threads first appear.
func Dynamics(msgs []value.Message) []GoalDynamics {
	type key struct{ node, goal string }
	var order []key
	// A thread's messages are pointed at, not copied: a copy of every
	// message at the end of a long run was most of the memory its result
	// took to make.
	threads := map[key][]*value.Message{}
	listed := map[key]bool{}
	for i := range msgs {
		m := &msgs[i]
		if !Speech(*m) {
			continue
		}
		k := key{m.Node, m.Goal}
		if _, ok := threads[k]; !ok {
			order = append(order, k)
		}
		threads[k] = append(threads[k], m)
		listed[k] = listed[k] || m.Verdict != "" || (m.Whisper && Addressed(*m))
	}
	var out []GoalDynamics
	for _, k := range order {
		if listed[k] {
			out = append(out, thread(k.node, k.goal, threads[k]))
		}
	}
	return out
}

// pending is a message addressed to an agent, waiting for its next verdict.
type pending struct {
	edge           *Influence
	before, sender string
}

// thread reads one thread's messages, in order.
func thread(node, goal string, ms []*value.Message) GoalDynamics {
	d := GoalDynamics{Node: node, Goal: goal, Messages: len(ms)}
	idx := map[string]int{}
	voters := map[string]bool{}
	for _, m := range ms {
		if _, ok := idx[m.From]; !ok {
			idx[m.From] = len(d.Participants)
			d.Participants = append(d.Participants, AgentDynamics{Agent: m.From})
		}
		if m.Verdict != "" {
			voters[m.From] = true
		}
	}
	cur := map[string]string{}
	whispers, public := map[[2]string]*Influence{}, map[[2]string]*Influence{}
	waiting := map[string][]pending{}
	agreedFrom := 0 // the message number from which all have agreed, 0 while not
	firstSeen, majority, last, settled := false, "", "", 0
	for i, m := range ms {
		a := &d.Participants[idx[m.From]]
		a.Messages++
		if Addressed(*m) {
			edges := public
			if m.Whisper {
				edges = whispers
			}
			k := [2]string{m.From, m.To}
			if edges[k] == nil {
				edges[k] = &Influence{From: m.From, To: m.To}
			}
			e := edges[k]
			e.Count++
			sender := m.Verdict
			if sender == "" {
				sender = cur[m.From]
			}
			if sender != "" {
				e.WithVerdict++
			}
			waiting[m.To] = append(waiting[m.To], pending{edge: e, before: cur[m.To], sender: sender})
		}
		if m.Verdict == "" {
			continue
		}
		next := m.Verdict
		d.Verdicts++
		a.Verdicts++
		if m.Forced {
			d.Forced++
		}
		if prev := cur[m.From]; prev != "" && prev != next {
			d.Changes++
			a.Changes++
			a.Transitions = append(a.Transitions, Transition{From: prev, To: next, Turn: m.Turn, Forced: m.Forced})
			if d.ByAgent == nil {
				d.ByAgent = map[string]int{}
			}
			d.ByAgent[m.From]++
		}
		for _, p := range waiting[m.From] {
			p.edge.Followed++
			if next != p.before {
				p.edge.Changed++
				if next == p.sender {
					p.edge.Adopted++
				}
			}
		}
		delete(waiting, m.From)
		cur[m.From] = next
		if allHold(cur, d.Participants) {
			if agreedFrom == 0 {
				agreedFrom = i + 1
			}
		} else {
			agreedFrom = 0
		}
		if !firstSeen && holdAll(cur, voters) {
			firstSeen = true
			d.FirstAgreement = agreementOf(cur)
		}
		if p := plurality(cur); p != majority {
			if p != "" {
				if last != "" && p != last {
					d.MajorityChanges++
				}
				last, settled = p, d.Verdicts
			}
			majority = p
		}
	}
	for i := range d.Participants {
		d.Participants[i].Final = cur[d.Participants[i].Agent]
	}
	if agreedFrom > 0 {
		d.Consensus, d.FormedAt, d.FormedTurn = cur[d.Participants[0].Agent], agreedFrom, ms[agreedFrom-1].Turn
	}
	d.FinalAgreement = agreementOf(cur)
	if majority != "" {
		d.Majority, d.SettledAt = majority, settled
	}
	d.Whispers, d.Public = sortedEdges(whispers), sortedEdges(public)
	return d
}

// allHold reports whether every participant holds a verdict, the same.
func allHold(cur map[string]string, ps []AgentDynamics) bool {
	first := cur[ps[0].Agent]
	for _, p := range ps {
		if v := cur[p.Agent]; v == "" || v != first {
			return false
		}
	}
	return true
}

func sortedEdges(m map[[2]string]*Influence) []Influence {
	var out []Influence
	for _, e := range m {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b Influence) int { return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To)) })
	return out
}

func holdAll(cur map[string]string, voters map[string]bool) bool {
	for a := range voters {
		if cur[a] == "" {
			return false
		}
	}
	return len(voters) > 0
}

// counts are the agents per verdict held.
func counts(cur map[string]string) (map[string]int, int) {
	c, n := map[string]int{}, 0
	for _, v := range cur {
		if v != "" {
			c[v]++
			n++
		}
	}
	return c, n
}

// agreementOf is the share of the agents holding a verdict that hold the
// most common one (0 when none holds any).
func agreementOf(cur map[string]string) float64 {
	c, n := counts(cur)
	if n == 0 {
		return 0
	}
	top := 0
	for _, x := range c {
		top = max(top, x)
	}
	return float64(top) / float64(n)
}

// plurality is the verdict more agents hold than any other, "" on a tie
// or when none is held.
func plurality(cur map[string]string) string {
	c, _ := counts(cur)
	best, top, tie := "", 0, false
	for _, v := range slices.Sorted(maps.Keys(c)) {
		switch {
		case c[v] > top:
			best, top, tie = v, c[v], false
		case c[v] == top:
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}
