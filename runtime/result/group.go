package result

import (
	"maps"
	"slices"

	"github.com/debate-runner/runner/spec/value"
)

// GoalDynamics is how the verdicts on one goal moved over a run: how
// often agents changed them, how consensus formed, and what whispers did
// to their addressees' verdicts. Verdicts are read from the messages in
// order: a message with a verdict sets its author's current verdict on
// the message's goal (an agent that withdraws from the conversation keeps
// its verdict).
type GoalDynamics struct {
	Goal string `json:"goal,omitempty" doc:"the goal (absent outside goals)"`
	// Verdicts are the messages that gave a verdict, Changes those that
	// gave another verdict than their author's current one.
	Verdicts int            `json:"verdicts" doc:"messages that gave a verdict on the goal"`
	Changes  int            `json:"changes" doc:"verdicts that differ from their author's previous verdict on the goal (its first verdict is no change)"`
	ByAgent  map[string]int `json:"changes_by_agent,omitempty" doc:"changes per agent id"`
	// Agreement is the share of the agents holding a verdict that hold
	// the most common one: once every agent that ever gives one has
	// given its first (FirstAgreement), and at the end (FinalAgreement).
	FirstAgreement float64 `json:"first_agreement" doc:"share of the agents holding the most common verdict once every agent that gives a verdict on the goal has given its first"`
	FinalAgreement float64 `json:"final_agreement" doc:"share of the agents holding the most common verdict at the end"`
	// MajorityChanges counts the times the most common verdict (a
	// strict plurality) became another one; SettledAt is the number of
	// verdicts given when the final one became the strict plurality for
	// good (0: there was none at the end).
	MajorityChanges int `json:"majority_changes" doc:"times the strict plurality verdict became another verdict"`
	SettledAt       int `json:"settled_at,omitempty" doc:"the number of verdicts given when the final plurality verdict became the plurality for good (absent when the end had no strict plurality)"`
	// Whispers are the whisper edges of the goal with their effect.
	Whispers []WhisperInfluence `json:"whispers,omitempty" doc:"each sender and addressee of whispers on the goal, and what the addressee's next verdict did"`
}

// WhisperInfluence is what whispers from one agent to another did to the
// addressee's next verdict on the goal after each whisper.
type WhisperInfluence struct {
	From  string `json:"from" doc:"the sender's agent id"`
	To    string `json:"to" doc:"the addressee's agent id"`
	Count int    `json:"count" doc:"how many whispers"`
	// Followed are the whispers after which the addressee gave another
	// verdict; Changed those where it differed from the addressee's
	// verdict before the whisper; Adopted those where it became the
	// sender's verdict (as the sender held it when whispering) and was
	// not the addressee's before.
	Followed int `json:"followed" doc:"whispers after which the addressee gave a verdict on the goal"`
	Changed  int `json:"changed" doc:"whispers after which the addressee's next verdict differed from its verdict before the whisper"`
	Adopted  int `json:"adopted" doc:"whispers after which the addressee's next verdict was the sender's (as the sender held it when whispering) and had not been the addressee's"`
}

// Dynamics reads the verdict dynamics of every goal (and of the run
// outside goals) that has a verdict or a whisper, in the order goals
// first appear.
func Dynamics(msgs []value.Message) []GoalDynamics {
	var order []string
	byGoal := map[string][]int{}
	for i, m := range msgs {
		if m.Verdict == "" && !m.Whisper {
			continue
		}
		if _, ok := byGoal[m.Goal]; !ok {
			order = append(order, m.Goal)
		}
		byGoal[m.Goal] = append(byGoal[m.Goal], i)
	}
	var out []GoalDynamics
	for _, g := range order {
		out = append(out, goalDynamics(g, msgs, byGoal[g]))
	}
	return out
}

func goalDynamics(goal string, msgs []value.Message, idx []int) GoalDynamics {
	d := GoalDynamics{Goal: goal}
	// Who gives a verdict at all: first agreement waits for all of them.
	voters := map[string]bool{}
	for _, i := range idx {
		if msgs[i].Verdict != "" {
			voters[msgs[i].From] = true
		}
	}
	cur := map[string]string{}
	edge := map[[2]string]int{}
	// pending are whispers waiting for their addressee's next verdict.
	type pending struct {
		edge           int
		before, sender string
	}
	waiting := map[string][]pending{}
	firstSeen, majority, last, settled := false, "", "", 0
	for _, i := range idx {
		m := msgs[i]
		if m.Whisper {
			k := [2]string{m.From, m.To}
			e, ok := edge[k]
			if !ok {
				e = len(d.Whispers)
				edge[k] = e
				d.Whispers = append(d.Whispers, WhisperInfluence{From: m.From, To: m.To})
			}
			d.Whispers[e].Count++
			waiting[m.To] = append(waiting[m.To], pending{edge: e, before: cur[m.To], sender: senderVerdict(m, cur)})
		}
		if m.Verdict == "" {
			continue
		}
		next := m.Verdict
		d.Verdicts++
		if prev := cur[m.From]; prev != "" && prev != next {
			d.Changes++
			if d.ByAgent == nil {
				d.ByAgent = map[string]int{}
			}
			d.ByAgent[m.From]++
		}
		for _, p := range waiting[m.From] {
			w := &d.Whispers[p.edge]
			w.Followed++
			if next != p.before {
				w.Changed++
				if next == p.sender {
					w.Adopted++
				}
			}
		}
		delete(waiting, m.From)
		cur[m.From] = next
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
	d.FinalAgreement = agreementOf(cur)
	if majority != "" {
		d.SettledAt = settled
	}
	return d
}

// senderVerdict is the verdict a whisper's sender holds as it whispers:
// the whisper's own, else its current one.
func senderVerdict(m value.Message, cur map[string]string) string {
	if m.Verdict != "" {
		return m.Verdict
	}
	return cur[m.From]
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
