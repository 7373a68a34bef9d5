package converse_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes/kit"
)

// TestToolsAndSummaries runs testdata/extras.yaml: every speaker may search
// the history (one tool call per turn) and, once its history passes
// over_chars, its turns show a summary asked with its system prompt and cut
// to max_chars.
func TestToolsAndSummaries(t *testing.T) {
	plan := loadPlan(t, "testdata/extras.yaml")
	turnReply := scripted(t, plan, func(c call) string {
		return turn{Content: fmt.Sprintf("%s says a fairly long thing at turn %d", c.Speaker, c.Turn)}.String()
	})
	o := execute(t, plan, func(r llmtest.Request) llmtest.Reply {
		user := r.LastUser()
		if strings.HasPrefix(user, "SUMMARIZE") {
			return llmtest.Reply{Content: "SUMMARY-" + strings.Fields(user)[1] + " and words past the limit"}
		}
		last := r.Messages[len(r.Messages)-1]
		if len(r.Tools) > 0 && last.Role == "user" {
			return llmtest.Reply{ToolCalls: []kit.ToolCall{{ID: "c1", Name: "search_history", Arguments: `{"query":"fairly long"}`}}}
		}
		return turnReply(r)
	}, flags{Seed: 1}).must(t)

	var tools, answers, summaries int
	for _, r := range o.srv.Requests() {
		user := r.LastUser()
		system := r.Messages[0].Content
		switch last := r.Messages[len(r.Messages)-1]; {
		case strings.HasPrefix(user, "SUMMARIZE"):
			summaries++
			who := strings.Fields(user)[1]
			if system != "SYSTEM of "+who {
				t.Errorf("the summary of %s's history was asked with system prompt %q", who, system)
			}
		case last.Role == "tool":
			answers++
			if len(r.Tools) != 0 {
				t.Errorf("request %d offers tools after the limit of one tool call", r.N)
			}
			c := parseCall(plan, r)
			if c.Turn > 1 && !strings.Contains(last.Content, "fairly long thing") {
				t.Errorf("turn %d: search_history found nothing: %q", c.Turn, last.Content)
			}
		default:
			tools++
			if len(r.Tools) != 1 || r.Tools[0].Name != "search_history" {
				t.Errorf("request %d offers tools %v, want search_history", r.N, r.Tools)
			}
		}
	}
	if tools != 6 || answers != 6 {
		t.Errorf("%d turns offered tools and %d answered after a tool call, want 6 and 6", tools, answers)
	}
	if summaries != 2 {
		t.Errorf("%d summary calls, want 2 (one per agent once its history is long)", summaries)
	}
	var shown []string
	for _, r := range o.srv.Requests() {
		if c := parseCall(plan, r); c.Speaker != "" && r.Messages[len(r.Messages)-1].Role == "user" {
			i := strings.Index(c.User, "SUMMARY=")
			shown = append(shown, fmt.Sprintf("%s@%d%s", c.Speaker, c.Turn, c.User[i+len("SUMMARY="):]))
		}
	}
	want := "[ann@1[] ben@2[] ann@3[] ben@4[] ann@5[SUMMARY-ann and word] ben@6[SUMMARY-ben and word]]"
	if fmt.Sprint(shown) != want {
		t.Errorf("summaries shown %v, want %v", shown, want)
	}
	if n := len(o.eventsOf("tool_call")); n != 6 {
		t.Errorf("%d tool_call events, want 6", n)
	}
}
