package examples_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
)

// TestDesignDebateSynthesisFallback: a judge that never produces valid JSON
// for the synthesis does not fail the run; its text becomes the solution with
// confidence 50, the fallback is recorded as a warning, and the run is
// inconclusive (exit 8): its solution is a stand-in.
func TestDesignDebateSynthesisFallback(t *testing.T) {
	res, srv := runExampleToEnd(t, "design-debate", func(r llmtest.Request) llmtest.Reply {
		task := r.Messages[1].Content
		switch {
		case strings.Contains(task, `{"questions": []}`):
			return llmtest.Reply{Content: `{"questions": []}`}
		case strings.Contains(task, `{"confidence": 0, "reason"`):
			return llmtest.Reply{Content: `{"confidence": 95, "reason": "converged"}`}
		case strings.Contains(task, `"solution_markdown"`):
			return llmtest.Reply{Content: "# The solution\nI could not format this as JSON, sorry."}
		}
		return llmtest.Reply{Content: "A design."}
	})
	if got := fmt.Sprint(res.Outputs["solution"]); !strings.HasPrefix(got, "# The solution") {
		t.Errorf("solution = %q, want the judge's raw text", got)
	}
	if got := fmt.Sprint(res.Outputs["confidence"]); got != "50" {
		t.Errorf("confidence = %s, want 50 after the fallback", got)
	}
	// The run is inconclusive: its solution is the fallback's, and says so.
	if c := res.Conclusion; res.Status != "inconclusive" || c == nil || c.Fallbacks != 1 || !strings.Contains(strings.Join(c.FallbackOutputs, ","), "solution") {
		t.Errorf("status %s, conclusion %+v", res.Status, c)
	}
	warned := false
	for _, w := range res.Warnings {
		warned = warned || strings.Contains(w, "fallback") && strings.Contains(w, "synthesize")
	}
	if !warned {
		t.Errorf("no fallback warning in %q", res.Warnings)
	}
	// The synthesis was asked once and re-asked twice (repair: 2).
	synth := 0
	for _, r := range srv.Requests() {
		if strings.Contains(r.Messages[1].Content, `"solution_markdown"`) {
			synth++
		}
	}
	if synth != 3 {
		t.Errorf("%d synthesis calls, want 3 (1 + 2 repairs)", synth)
	}
}
