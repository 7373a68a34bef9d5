package converse_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/llm/tokens"
	"github.com/debate-runner/runner/spec"
)

// longThread is testdata/rolling.yaml as a 200-turn conversation
// summarised past overTokens tokens (keeping the last two messages), or
// with its summaries taken out (overTokens 0).
func longThread(t testing.TB, overTokens int) *spec.Plan {
	pairs := []string{"default: 12,", "default: 200,"}
	if overTokens > 0 {
		pairs = append(pairs, "over_chars: 300, measure: chars", fmt.Sprintf("over_tokens: %d", overTokens), "max_chars: 120", "max_chars: 600")
	} else {
		pairs = append(pairs, "    summarize: {over_chars: 300, measure: chars, keep: 2, template: condense, max_chars: 120}\n", "")
	}
	return variant(t, rollingSpec, pairs...)
}

// wordyHandler answers each turn with 25 to 60 words, and each summary
// with a summary of at most 600 characters.
func wordyHandler(r llmtest.Request) llmtest.Reply {
	user := r.LastUser()
	if m := condensing.FindStringSubmatch(user); m != nil {
		return llmtest.Reply{Content: "SUM " + m[1] + " " + strings.Repeat("the panel weighed cost against risk and ", 20)}
	}
	n := atoi(markerTurn.FindStringSubmatch(user)[1])
	words := 25 + (n*37)%36
	return llmtest.Reply{Content: fmt.Sprintf("R%d- ", n) + strings.Repeat("point ", words)}
}

// contextTokens are the prompt tokens of each turn's request, by turn.
func contextTokens(o outcome) []int {
	var out []int
	for _, r := range o.srv.Requests() {
		if condensing.MatchString(r.LastUser()) {
			continue
		}
		texts := make([]string, len(r.Messages))
		for i, m := range r.Messages {
			texts[i] = m.Content
		}
		out = append(out, tokens.CountChat(r.Model, texts...))
	}
	return out
}

func meanOf(xs []int) float64 {
	s := 0
	for _, x := range xs {
		s += x
	}
	return float64(s) / float64(max(len(xs), 1))
}

// TestLongThreadContextFlat: a 200-turn conversation summarised past 400
// tokens keeps every turn's context under the threshold plus one summary
// (and the prompt's own words); its context is flat from the threshold on,
// where the same conversation without summaries grows with every turn.
func TestLongThreadContextFlat(t *testing.T) {
	const over = 400
	o := execute(t, longThread(t, over), wordyHandler, flags{Seed: 1}).must(t)
	with := contextTokens(o)
	if len(with) != 200 {
		t.Fatalf("%d turns, want 200", len(with))
	}
	summary := tokens.Count("gpt-4o-mini", strings.Repeat("the panel weighed cost against risk and ", 15))
	bound := with[0] + over + summary + 2*tokens.Count("gpt-4o-mini", "\nMSG 200 ann: ")*over/25
	worst := 0
	for i, n := range with {
		worst = max(worst, n)
		if n > bound {
			t.Errorf("turn %d: %d context tokens, past the bound %d (threshold %d + one summary %d + the prompt's %d)", i+1, n, bound, over, summary, with[0])
		}
	}
	early, late := meanOf(with[50:100]), meanOf(with[150:200])
	if late > early*1.15 {
		t.Errorf("with summaries the context still grows: %.0f tokens a turn over turns 51-100, %.0f over 151-200", early, late)
	}
	// Without summaries the last turn would show every message before it.
	said := 0
	for _, m := range o.turns("talk") {
		said += tokens.Count("gpt-4o-mini", m.Content)
	}
	if said < 10*bound {
		t.Errorf("the conversation says %d tokens in all, too little to show that summaries bound its context (%d)", said, bound)
	}
	t.Logf("200 turns, over_tokens %d: context tokens per turn at most %d (mean %.0f over turns 51-100, %.0f over 151-200; %d summary calls); the whole conversation is %d tokens",
		over, worst, early, late, len(o.eventsOf("summary")), said)
}

// BenchmarkLongThreadContext reports, for a 200-turn conversation
// summarised past 400 tokens and for the same without summaries, the
// largest context of a turn and the context of turns 100 and 200, in
// tokens.
func BenchmarkLongThreadContext(b *testing.B) {
	for _, over := range []int{400, 0} {
		name := "summaries"
		if over == 0 {
			name = "whole"
		}
		b.Run(name, func(b *testing.B) {
			plan := longThread(b, over)
			for b.Loop() {
				with := contextTokens(execute(b, plan, wordyHandler, flags{Seed: 1}).must(b))
				b.ReportMetric(float64(slices.Max(with)), "max-context-tokens")
				b.ReportMetric(float64(with[99]), "turn-100-tokens")
				b.ReportMetric(float64(with[199]), "turn-200-tokens")
			}
		})
	}
}
