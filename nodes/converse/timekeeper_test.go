package converse_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/runtime/result"
)

// templateMark is a phrase only the named time keeper template writes.
var templateMark = map[string]string{
	"remind": "a reminder of how this works",
	"insist": "this goal has been discussed at length",
	"demand": "the panel is out of time",
	"force":  "final call",
}

// kindOf names the time keeper template that wrote an interjection.
func kindOf(m value.Message) string {
	for k, mark := range templateMark {
		if strings.Contains(m.Content, mark) {
			return k
		}
	}
	return "?"
}

// TestTimeKeeperEscalates runs testdata/timekeeper.yaml, whose thresholds
// are 2/4/6/8: each level is posted at its turn with its template's text,
// without a model call, and the final call makes the undecided give a
// verdict at once (a reply without one is rejected and repaired).
func TestTimeKeeperEscalates(t *testing.T) {
	plan := loadPlan(t, "testdata/timekeeper.yaml")
	o := execute(t, plan, scripted(t, plan, func(c call) string {
		switch {
		case c.Speaker == "ana" && c.Turn == 4:
			return turn{Content: "yes from me", Verdict: "YES", Reasoning: "solid"}.String()
		case c.Speaker == "bo" && c.Repair:
			return turn{Content: "fine, no", Verdict: "NO", Reasoning: "too risky"}.String()
		case c.Speaker == "cy" && strings.Contains(c.User, "final call"):
			return turn{Content: "maybe", Verdict: "MAYBE", Reasoning: "unsure"}.String()
		}
		return silent(c)
	}), flags{Seed: 1}).must(t)

	want := []struct {
		turn int
		kind string
		text []string
	}{
		{2, "remind", []string{"Time keeper, turn 2: a reminder of how this works.", "We are on goal 1 of 1, only: Decide the question.",
			"Give your verdict in a <Verdict> tag, using exactly one of: YES | NO | MAYBE, with your reasons in <VerdictReasoning>.",
			"Still without a verdict: Ana Lima, Bo Chen, Cy Marlowe Tate."}},
		{4, "insist", []string{"Time keeper, turn 4 of at most 12: this goal has been discussed at length.",
			"Bo Chen, Cy Marlowe Tate: the panel needs your verdict.", "Options: YES | NO | MAYBE."}},
		{6, "demand", []string{"Time keeper, turn 6 of at most 12: the panel is out of time on goal only.",
			"Bo Chen, Cy Marlowe Tate: your next message must contain a <Verdict> (YES | NO | MAYBE) and its <VerdictReasoning>."}},
		{8, "force", []string{"Time keeper, turn 8 of at most 12: final call on goal only.",
			"Bo Chen, Cy Marlowe Tate: you must give your verdict in your next message.", "This goal closes now."}},
	}
	got := o.byRecord("interjection")
	if len(got) != len(want) {
		for _, m := range got {
			t.Logf("turn %d: %s", m.Turn, m.Content)
		}
		t.Fatalf("%d interjections, want %d", len(got), len(want))
	}
	for i, w := range want {
		m := got[i]
		if m.Turn != w.turn || kindOf(m) != w.kind || m.From != "timekeeper" {
			t.Errorf("interjection %d: %s's %s at turn %d, want %s at turn %d", i, m.From, kindOf(m), m.Turn, w.kind, w.turn)
		}
		for _, line := range w.text {
			if !strings.Contains(m.Content, line) {
				t.Errorf("%s at turn %d lacks %q:\n%s", w.kind, w.turn, line, m.Content)
			}
		}
	}
	// The final call asks bo and cy at once, out of the round-robin order.
	if got, want := strings.Join(o.speakers("panel"), " "), "ana bo cy ana bo cy ana bo bo cy ana bo"; got != want {
		t.Errorf("speakers %q, want %q", got, want)
	}
	var forced []call
	for _, c := range o.calls() {
		if c.Turn == 9 || c.Turn == 10 {
			forced = append(forced, c)
		}
	}
	if len(forced) != 3 || !forced[1].Repair || !strings.Contains(forced[1].User, "you must give your verdict now: one of YES, NO, MAYBE") {
		t.Errorf("forced turns: %+v", forced)
	}
	// Interjections cost no call: 12 turns and bo's one repair.
	if n := o.srv.Count(); n != 13 {
		t.Errorf("%d model calls, want 13", n)
	}
	if n := len(o.eventsOf("interjection")); n != 4 {
		t.Errorf("%d interjection events, want 4", n)
	}
	// Every later prompt shows the time keeper's messages.
	for _, c := range o.calls() {
		if c.Turn > 8 && !strings.Contains(c.User, "[8] Time keeper to everyone:") {
			t.Errorf("prompt of turn %d does not show the final call", c.Turn)
		}
	}
	for _, p := range o.res.GoalVerdicts {
		if p.Counts["YES"] != 1 || p.Counts["NO"] != 1 || p.Counts["MAYBE"] != 1 {
			t.Errorf("verdicts %+v", p)
		}
	}
}

// TestHiringPanelTimeKeeper plays the real hiring panel with members who
// will not decide: the time keeper reminds every 4 turns, insists from 20,
// demands from 35 and at 52 forces the verdicts, which ends the goal.
func TestHiringPanelTimeKeeper(t *testing.T) {
	plan := loadPlan(t, hiringPanel)
	o := execute(t, plan, scripted(t, plan, func(c call) string {
		if c.Goal != "technical_assessment" || strings.Contains(c.User, "final call") {
			return turn{Content: "my verdict", Verdict: "ADEQUATE", Reasoning: "average", Withdrawn: "true"}.String()
		}
		return silent(c)
	}), flags{Seed: 5, Inputs: []string{"resume=Jane Doe"}}).must(t)

	var seq []string
	for _, m := range o.byRecord("interjection") {
		if m.Goal != "technical_assessment" {
			t.Errorf("interjection on goal %s at turn %d", m.Goal, m.Turn)
		}
		seq = append(seq, fmt.Sprintf("%d:%s", m.Turn, kindOf(m)))
	}
	want := "4:remind 8:remind 12:remind 16:remind 20:insist 24:insist 28:insist 32:insist 36:demand 40:demand 44:demand 48:demand 52:force"
	if got := strings.Join(seq, " "); got != want {
		t.Errorf("interjections\n%s\nwant\n%s", got, want)
	}
	ends := o.ends(t)
	if len(ends) != 3 || ends[0].Turns != 56 || ends[0].Reason != "everyone withdrew" {
		t.Errorf("conversations ended %+v, want the first after the 4 forced turns (56)", ends)
	}
	if n, want := o.srv.Count(), 56+4+4; n != want {
		t.Errorf("%d model calls, want %d", n, want)
	}
	// The verdicts of the first goal were forced: marked so, and the goal
	// is not concluded; the others were given freely.
	for _, m := range o.turns("panel") {
		if m.Verdict != "" && m.Forced != (m.Goal == "technical_assessment") {
			t.Errorf("goal %s, turn %d: forced %v", m.Goal, m.Turn, m.Forced)
		}
	}
	if c := o.res.Conclusion; o.res.Status != result.StatusInconclusive || c == nil || c.ForcedVerdicts != 4 ||
		len(c.InconclusiveGoals) != 1 || c.InconclusiveGoals[0] != "technical_assessment" {
		t.Errorf("status %s, conclusion %+v", o.res.Status, c)
	}
}
