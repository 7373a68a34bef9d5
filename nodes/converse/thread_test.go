package converse_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/spec"
)

// threadReply answers a turn of testdata/threads.yaml with a text that
// depends only on speaker and turn, so two runs get the same replies.
func threadReply(t *testing.T, plan *spec.Plan, cache *llmtest.PromptCache) llmtest.Handler {
	return cache.Wrap(scripted(t, plan, func(c call) string {
		return turn{Content: fmt.Sprintf("%s's view at turn %d", c.Speaker, c.Turn)}.String()
	}))
}

// threadReplyRejected is threadReply, except that Ben's first reply at turn
// 2 is rejected (a whisper to nobody) and repaired.
func threadReplyRejected(t *testing.T, plan *spec.Plan, cache *llmtest.PromptCache) llmtest.Handler {
	return cache.Wrap(scripted(t, plan, func(c call) string {
		if c.Speaker == "ben" && c.Turn == 2 && !c.Repair {
			return turn{Whisper: true, Content: "psst"}.String()
		}
		return turn{Content: fmt.Sprintf("%s's view at turn %d", c.Speaker, c.Turn)}.String()
	}))
}

// TestThreadIsAppendOnly: with thread:, each request of a speaker starts
// with the exact bytes of its previous request's messages, followed by the
// reply it got; the run counts the provider's cached tokens, prices them at
// the cached price, and reports the share of input that repeats the
// speaker's previous request.
func TestThreadIsAppendOnly(t *testing.T) {
	plan := loadPlan(t, "testdata/threads.yaml")
	cache := &llmtest.PromptCache{}
	o := execute(t, plan, threadReply(t, plan, cache), flags{Seed: 1}).must(t)

	reqs := o.srv.Requests()
	if len(reqs) != 9 {
		t.Fatalf("%d requests, want 9", len(reqs))
	}
	last := map[string]llmtest.Request{}
	replies := map[string]string{}
	for _, m := range o.turns("talk") {
		replies[fmt.Sprintf("%s@%d", m.From, m.Turn)] = m.Content
	}
	for _, r := range reqs {
		c := parseCall(plan, r)
		if prev, ok := last[c.Speaker]; ok {
			before := prev.Fields["messages"]
			before = before[:len(before)-1] // without the closing bracket
			if !bytes.HasPrefix(r.Fields["messages"], before) {
				t.Errorf("%s's request at turn %d does not start with its previous request:\n%s\n%s", c.Speaker, c.Turn, before, r.Fields["messages"])
				continue
			}
			pc := parseCall(plan, prev)
			next := r.Messages[len(prev.Messages)]
			want := turn{Content: replies[fmt.Sprintf("%s@%d", pc.Speaker, pc.Turn)]}.String()
			if next.Role != "assistant" || next.Content != want {
				t.Errorf("%s's request at turn %d continues with %s %q, want its reply %q", c.Speaker, c.Turn, next.Role, next.Content, want)
			}
			if n, w := len(r.Messages), len(prev.Messages)+2; n != w {
				t.Errorf("%s's request at turn %d has %d messages, want %d", c.Speaker, c.Turn, n, w)
			}
		}
		last[c.Speaker] = r
	}

	u := o.res.Usage.Total
	if sent, cached := cache.Totals(); u.CachedTokens != cached || u.PromptTokens != sent {
		t.Errorf("usage counts %d cached of %d prompt tokens, the server reported %d of %d", u.CachedTokens, u.PromptTokens, cached, sent)
	}
	wantCost := (float64(u.PromptTokens-u.CachedTokens)*1 + float64(u.CachedTokens)*0.1 + float64(u.CompletionTokens)*2) / 1e6
	if math.Abs(u.Cost-wantCost) > 1e-12 {
		t.Errorf("cost %g, want %g (cached tokens at the cached price)", u.Cost, wantCost)
	}
	report := o.readFile(t, "report.md")
	if want := fmt.Sprintf("Prompt prefix: %.1f%% of prompt tokens (%d of %d)", 100*u.PrefixShare, u.PrefixTokens, u.PromptTokens); !strings.Contains(report, want) ||
		!strings.Contains(report, fmt.Sprintf("the providers reported %d cached prompt tokens", u.CachedTokens)) {
		t.Errorf("report.md lacks %q and the cached tokens:\n%s", want, report)
	}
	if u.PrefixShare < 0.4 {
		t.Errorf("prefix share %.3f: a threaded conversation should largely repeat each speaker's previous request", u.PrefixShare)
	}

	// The same conversation with plain prompts (system and one user message
	// showing the whole conversation so far).
	plainPlan := variant(t, "testdata/threads.yaml", "    thread: talk\n", "", "(gt .Turn $last)", "(ge .Turn 0)")
	plainCache := &llmtest.PromptCache{}
	p := execute(t, plainPlan, threadReply(t, plainPlan, plainCache), flags{Seed: 1}).must(t)
	pu := p.res.Usage.Total
	if pu.PrefixShare >= u.PrefixShare {
		t.Errorf("plain prompts repeat %.3f of their input, threads %.3f", pu.PrefixShare, u.PrefixShare)
	}
	t.Logf("threads: prefix share %.3f, cached %d of %d prompt tokens (%.3f), cost per call %.3g; plain prompts: prefix share %.3f, cached %.3f, cost per call %.3g",
		u.PrefixShare, u.CachedTokens, u.PromptTokens, float64(u.CachedTokens)/float64(u.PromptTokens), u.Cost/float64(u.Calls),
		pu.PrefixShare, float64(pu.CachedTokens)/float64(pu.PromptTokens), pu.Cost/float64(pu.Calls))
}

// TestThreadSurvivesResume: a run stopped by a failing endpoint and resumed
// sends, after the resume, the very requests an uninterrupted run sends:
// the threads are rebuilt from the journal, a repaired turn's included (its
// thread keeps the prompt of the accepted attempt).
func TestThreadSurvivesResume(t *testing.T) {
	for _, failAt := range []int{3, 4, 6} {
		t.Run(fmt.Sprint(failAt), func(t *testing.T) { threadResume(t, failAt) })
	}
}

func threadResume(t *testing.T, failAt int) {
	plan := loadPlan(t, "testdata/threads.yaml")
	whole := execute(t, plan, threadReplyRejected(t, plan, &llmtest.PromptCache{}), flags{Seed: 1}).must(t)
	want := whole.srv.Requests()
	if len(want) != 10 {
		t.Fatalf("%d requests, want 9 turns and a repair", len(want))
	}
	if rep := want[2]; !strings.Contains(rep.LastUser(), "FEEDBACK=") || parseCall(plan, rep).Speaker != "ben" {
		t.Fatalf("request 3 is not Ben's repair: %q", rep.LastUser())
	}

	cache := &llmtest.PromptCache{}
	good := threadReplyRejected(t, plan, cache)
	o, _, before := failThenResume(t, plan, good, failAt)
	got := o.srv.Requests()[before:]
	if len(got) != len(want)-(failAt-1) {
		t.Fatalf("the resumed run made %d calls, want %d", len(got), len(want)-(failAt-1))
	}
	for i, g := range got {
		w := want[failAt-1+i]
		if !bytes.Equal(g.Fields["messages"], w.Fields["messages"]) {
			t.Errorf("resumed request %d differs from the uninterrupted run's:\n%s\n%s", i+1, g.Fields["messages"], w.Fields["messages"])
		}
	}
	var turns int
	for _, e := range o.eventsOf("thread_turn") {
		var tt struct{ Prompt string }
		if err := json.Unmarshal(e.Data, &tt); err == nil && tt.Prompt != "" {
			turns++
		}
	}
	if turns < failAt-1 {
		t.Errorf("%d thread turns journaled before the failure, want at least %d", turns, failAt-1)
	}
}
