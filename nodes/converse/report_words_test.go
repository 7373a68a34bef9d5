package converse_test

import (
	"fmt"
	"testing"

	"github.com/debate-runner/runner/internal/mdtext"
)

// TestReportsKeepEveryWord replays every goal-chained recording through a
// converse node, as TestRecordedDebatesReplay does, and renders its
// report.md with CommonMark and GFM renderers (and report.html as it is):
// every word of every public message must be shown, in order, and no
// private thought. The hiring-panel run adds the time keeper's messages,
// which quote the tags (<Verdict>) a renderer would take for HTML.
func TestReportsKeepEveryWord(t *testing.T) {
	for _, r := range loadRecordings(t) {
		if len(r.Convs) == 0 || len(r.Convs[0].Goals) == 0 {
			continue
		}
		t.Run(slug(r.File), func(t *testing.T) {
			t.Parallel()
			c := r.Convs[0]
			plan := replaySpec(t, r)
			byTurn := map[string]*recMessage{}
			perGoal := map[string]int{}
			for _, m := range c.Messages {
				perGoal[m.Goal]++
				byTurn[fmt.Sprintf("%s/%d", m.Goal, perGoal[m.Goal])] = m
			}
			o := execute(t, plan, scripted(t, plan, func(call call) string {
				if m := byTurn[fmt.Sprintf("%s/%d", call.Goal, call.Turn)]; m != nil {
					return addressed(m)
				}
				t.Errorf("unexpected call: goal %s turn %d", call.Goal, call.Turn)
				return "<Content>?</Content>"
			}), flags{Seed: 1}).must(t)
			st := mdtext.CheckReport(t, o.run.Dir, o.res)
			t.Logf("report.md %d bytes, report.html %d bytes: every word of %d messages (%d words) shown", st.MarkdownBytes, st.HTMLBytes, st.Messages, st.Words)
		})
	}
	t.Run("hiring-panel", func(t *testing.T) {
		t.Parallel()
		o := runHiringPanel(t, 7)
		interjections := 0
		for _, m := range o.res.Messages {
			if m.Record == "interjection" {
				interjections++
			}
		}
		if interjections == 0 {
			t.Fatal("the run has no time keeper messages to check")
		}
		st := mdtext.CheckReport(t, o.run.Dir, o.res)
		t.Logf("report.md %d bytes, report.html %d bytes: every word of %d messages (%d time keeper's) shown", st.MarkdownBytes, st.HTMLBytes, st.Messages, interjections)
	})
}
