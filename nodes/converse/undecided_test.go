package converse_test

import (
	"strings"
	"testing"

	"github.com/debate-runner/runner/runtime/result"
)

// TestUndecidedAfterFinalCallIsRecorded: a participant who still gives no
// verdict after the final call (its repairs spent) no longer fails the run:
// its message is recorded without a verdict, with a warning, and the
// conversation goes on to its end.
func TestUndecidedAfterFinalCallIsRecorded(t *testing.T) {
	plan := loadPlan(t, "testdata/timekeeper.yaml")
	o := execute(t, plan, scripted(t, plan, func(c call) string {
		switch {
		case c.Speaker == "ana" && c.Turn == 4:
			return turn{Content: "yes from me", Verdict: "YES", Reasoning: "solid"}.String()
		case c.Speaker == "cy" && strings.Contains(c.User, "final call"):
			return turn{Content: "maybe", Verdict: "MAYBE", Reasoning: "unsure"}.String()
		}
		return silent(c) // bo never decides
	}), flags{Seed: 1})
	if o.err != nil || o.res.Status != result.StatusCompleted {
		t.Fatalf("status %s, err %v", o.res.Status, o.err)
	}
	warned := false
	for _, w := range o.res.Warnings {
		warned = warned || strings.Contains(w, "bo gave no verdict when it had to")
	}
	if !warned {
		t.Errorf("no warning about bo: %q", o.res.Warnings)
	}
	if n := len(o.eventsOf("no_verdict")); n != 1 {
		t.Errorf("%d no_verdict events, want 1", n)
	}
	for _, p := range o.res.GoalVerdicts {
		if p.Counts["YES"] != 1 || p.Counts["MAYBE"] != 1 || len(p.Verdicts) != 2 {
			t.Errorf("verdicts %+v", p)
		}
	}
}

// TestUndecidedFailWhenTheSpecSaysSo: verdict.undecided: fail keeps the
// strict behaviour.
func TestUndecidedFailWhenTheSpecSaysSo(t *testing.T) {
	plan := variant(t, "testdata/timekeeper.yaml", "verdict: {options: verdicts.vote, repair: 1}", "verdict: {options: verdicts.vote, repair: 1, undecided: fail}")
	o := execute(t, plan, scripted(t, plan, func(c call) string { return silent(c) }), flags{Seed: 1})
	if o.err == nil || o.res.Status != result.StatusFailed || !strings.Contains(o.err.Error(), "you must give your verdict now") {
		t.Fatalf("status %s, err %v", o.res.Status, o.err)
	}
}

// TestVerdictInsideContentIsRead: verdict tags written inside <Content>
// are the speaker's verdict, and leave the text the others read.
func TestVerdictInsideContentIsRead(t *testing.T) {
	plan := loadPlan(t, "testdata/timekeeper.yaml")
	o := execute(t, plan, scripted(t, plan, func(c call) string {
		if c.Turn <= 3 {
			return "<SpeakingTo>All</SpeakingTo>\n<Content>I have heard enough.\n<Verdict>NO</Verdict>\n<VerdictReasoning>too costly</VerdictReasoning></Content>"
		}
		return silent(c)
	}), flags{Seed: 1, Sets: nil})
	if o.err != nil {
		t.Fatal(o.err)
	}
	for _, p := range o.res.GoalVerdicts {
		if p.Counts["NO"] != 3 {
			t.Errorf("verdicts %+v, want three NO", p)
		}
	}
	for _, m := range o.res.Messages {
		if m.Record == "message" && strings.Contains(m.Content, "<Verdict>") {
			t.Errorf("message %s keeps the verdict tag: %q", m.ID, m.Content)
		}
	}
	// A verdict inside <Content> that is no option is rejected with the
	// reasons, not dropped.
	plan2 := loadPlan(t, "testdata/timekeeper.yaml")
	o2 := execute(t, plan2, scripted(t, plan2, func(c call) string {
		if c.Turn == 1 && !c.Repair {
			return "<Content>ok <Verdict>PERHAPS</Verdict><VerdictReasoning>x</VerdictReasoning></Content>"
		}
		return silent(c)
	}), flags{Seed: 1})
	if len(o2.res.Rejections) == 0 || !strings.Contains(o2.res.Rejections[0].Reasons, `"PERHAPS" is not a valid verdict`) {
		t.Errorf("rejections %+v", o2.res.Rejections)
	}
}
