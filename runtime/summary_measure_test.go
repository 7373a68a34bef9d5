package runtime

import (
	"fmt"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/value"
)

// The reply every round-1 call gets: 10 characters, 20 UTF-8 bytes.
const measureReply = "éééééééééé"

// TestSummaryMeasureEdge runs a two-round debate whose round-1 reply is 10
// characters (20 bytes) and checks at the threshold's edge whether the
// round-2 prompt shows a summary: measure chars counts the content's
// characters and summarises from over_chars on (as the original tool);
// measure bytes (the default) counts the bytes of the history with its
// headers and summarises only past over_chars.
func TestSummaryMeasureEdge(t *testing.T) {
	headed := len(formatMessages([]value.Message{{From: "a", Record: "answer", Round: 1, Content: measureReply}}))
	for _, tc := range []struct {
		measure string
		over    int
		want    bool
	}{
		{"chars", 10, true},
		{"chars", 11, false},
		{"", headed - 1, true},
		{"bytes", headed - 1, true},
		{"bytes", headed, false},
	} {
		t.Run(fmt.Sprintf("%s_%d", tc.measure, tc.over), func(t *testing.T) {
			measure := ""
			if tc.measure != "" {
				measure = ", measure: " + tc.measure
			}
			plan := loadPlan(t, writeSpec(t, t.TempDir(), fmt.Sprintf(`version: 1
name: measure
agents:
  a: {name: Alice}
templates:
  define:
    ask: "KEY=a/r{{.Round}} SUMMARY=[{{.Summary}}]"
    condense: "SUMMARIZE {{.Agent.ID}}: {{.Text}}"
history:
  summarize: {over_chars: %d, max_chars: 5, template: condense%s}
nodes:
  answer: {kind: ask, agents: [a], template: ask, record: answer}
flow:
  - loop: {as: round, max: 2, do: [answer]}
`, tc.over, measure)))
			if want := map[string]string{"": spec.MeasureBytes}[tc.measure]; want != "" && plan.Summarize.Measure != want {
				t.Fatalf("default measure %q, want %q", plan.Summarize.Measure, want)
			}
			var summaries int
			var round2 string
			srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
				user := r.LastUser()
				switch {
				case strings.HasPrefix(user, "SUMMARIZE"):
					summaries++
					return llmtest.Reply{Content: "SUM"}
				case strings.HasPrefix(user, "KEY=a/r2"):
					round2 = user
				}
				return llmtest.Reply{Content: measureReply}
			})
			if _, _, err := execute(t, plan, Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}}); err != nil {
				t.Fatal(err)
			}
			got := strings.Contains(round2, "SUMMARY=[SUM]")
			if got != tc.want || summaries != map[bool]int{true: 1, false: 0}[tc.want] {
				t.Errorf("round-2 prompt %q after %d summary calls: summarised = %v, want %v (history: 10 chars, %d bytes with headers)", round2, summaries, got, tc.want, headed)
			}
		})
	}
}
