package converse_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/llm/tokens"
	"github.com/debate-runner/runner/spec"
)

// longThread is testdata/rolling.yaml as a conversation of the given
// turns summarised past threshold (over_tokens: 400, or over_chars: 1600,
// measure: chars), keeping the last two messages, or with its summaries
// taken out (threshold "").
func longThread(t testing.TB, turns int, threshold string) *spec.Plan {
	pairs := []string{"default: 12,", fmt.Sprintf("default: %d,", turns)}
	if threshold != "" {
		pairs = append(pairs, "over_chars: 300, measure: chars", threshold, "max_chars: 120", "max_chars: 600")
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

// contextSizes are the sizes of each turn's request, by turn: its
// messages' texts measured by size.
func contextSizes(o outcome, size func(...string) int) []int {
	var out []int
	for _, r := range o.srv.Requests() {
		if condensing.MatchString(r.LastUser()) {
			continue
		}
		texts := make([]string, len(r.Messages))
		for i, m := range r.Messages {
			texts[i] = m.Content
		}
		out = append(out, size(texts...))
	}
	return out
}

func chatTokens(texts ...string) int { return tokens.CountChat("gpt-4o-mini", texts...) }

func chars(texts ...string) int {
	n := 0
	for _, x := range texts {
		n += utf8.RuneCountInString(x)
	}
	return n
}

func meanOf(xs []int) float64 {
	s := 0
	for _, x := range xs {
		s += x
	}
	return float64(s) / float64(max(len(xs), 1))
}

// TestLongThreadContextFlat: a 200-turn conversation summarised past 1,600
// characters keeps every turn's context under the threshold plus one
// summary (and the prompt's own words); its context is flat from the
// threshold on, where without summaries it would show every message
// before it. TestLongThreadTokens is the same in tokens, over 36 turns
// (the tokenizer is slow under -race); BenchmarkLongThreadContext gives
// the figures of 200 turns in tokens.
func TestLongThreadContextFlat(t *testing.T) {
	checkFlat(t, 200, "over_chars: 1600, measure: chars", 1600, chars)
}

func TestLongThreadTokens(t *testing.T) {
	checkFlat(t, 36, "over_tokens: 400", 400, chatTokens)
}

func checkFlat(t *testing.T, turns int, threshold string, over int, size func(...string) int) {
	o := execute(t, longThread(t, turns, threshold), wordyHandler, flags{Seed: 1}).must(t)
	with := contextSizes(o, size)
	if len(with) != turns {
		t.Fatalf("%d turns, want %d", len(with), turns)
	}
	summary := size(strings.Repeat("the panel weighed cost against risk and ", 15))
	// Each message shown has its line's head; a reply is at least 25 words.
	heads := size("\nMSG 200 ann: ") * (over/size(strings.Repeat("point ", 25)) + 3)
	bound := with[0] + over + summary + heads
	for i, n := range with {
		if n > bound {
			t.Errorf("turn %d: context of %d, past the bound %d (threshold %d + one summary %d + the prompt's %d + the messages' heads %d)", i+1, n, bound, over, summary, with[0], heads)
		}
	}
	q := turns / 4
	early, late := meanOf(with[q:2*q]), meanOf(with[3*q:])
	if late > early*1.15 {
		t.Errorf("with summaries the context still grows: %.0f a turn over turns %d-%d, %.0f over %d-%d", early, q+1, 2*q, late, 3*q+1, turns)
	}
	// Without summaries the last turn would show every message before it.
	said := 0
	for _, m := range o.turns("talk") {
		said += size(m.Content)
	}
	if said < 2*bound {
		t.Errorf("the conversation says %d in all, too little to show that summaries bound its context (%d)", said, bound)
	}
	t.Logf("%d turns, %s: context per turn at most %d (mean %.0f over turns %d-%d, %.0f over %d-%d; %d summary calls); the whole conversation is %d",
		turns, threshold, slices.Max(with), early, q+1, 2*q, late, 3*q+1, turns, len(o.eventsOf("summary")), said)
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
			threshold := fmt.Sprintf("over_tokens: %d", over)
			if over == 0 {
				threshold = ""
			}
			plan := longThread(b, 200, threshold)
			for b.Loop() {
				with := contextSizes(execute(b, plan, wordyHandler, flags{Seed: 1}).must(b), chatTokens)
				b.ReportMetric(float64(slices.Max(with)), "max-context-tokens")
				b.ReportMetric(float64(with[99]), "turn-100-tokens")
				b.ReportMetric(float64(with[199]), "turn-200-tokens")
			}
		})
	}
}
