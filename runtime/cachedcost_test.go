package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
)

// cachedCostSpec: one agent answers three rounds; its model costs 1 per
// million prompt tokens, 0.1 per million served from the provider's cache,
// and nothing for completions; the run may spend 0.001.
const cachedCostSpec = `version: 1
name: cached-cost
inputs:
  question: {required: true}
models:
  default: {model: priced-model, max_tokens: 1, price: {prompt: 1, cached_prompt: 0.1, completion: 0}}
agents:
  a: {name: Alice}
templates:
  define:
    answer: "KEY={{.Agent.ID}}/r{{.Round}}/answer\n{{.Inputs.question}}"
nodes:
  answer: {kind: ask, agents: [a], template: answer, record: answer}
budget: {max_cost: 0.001}
flow:
  - loop: {as: round, max: 3, do: [answer]}
`

// TestCachedTokensCostTheCachedPrice: prompt tokens a provider reports as
// served from its cache (prompt_tokens_details.cached_tokens) cost the
// cached_prompt price in result.json, report.md and budget.max_cost alike.
// With 900 of each call's 1000 prompt tokens cached, three calls cost
// 3 x (100 x 1 + 900 x 0.1) / 1e6 = 0.00057, within max_cost 0.001; the
// same calls with nothing cached cost 0.001 each, and the second one is
// refused.
func TestCachedTokensCostTheCachedPrice(t *testing.T) {
	run := func(cached int) (*Run, *result.Result, error) {
		srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
			return llmtest.Reply{Content: "ok", PromptTokens: 1000, CachedTokens: cached, CompletionTokens: 1}
		})
		plan := loadPlan(t, writeSpec(t, t.TempDir(), cachedCostSpec))
		return execute(t, plan, Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep},
			Launch: launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}}})
	}

	r, res, err := run(900)
	if err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("with cached tokens: status %v, error %v", res.Status, err)
	}
	u := res.Usage.Total
	if u.Calls != 3 || u.CachedTokens != 2700 || math.Abs(u.Cost-0.00057) > 1e-12 {
		t.Errorf("usage: %d calls, %d cached tokens, cost %v; want 3 calls, 2700 cached, cost 0.00057", u.Calls, u.CachedTokens, u.Cost)
	}
	report, err := os.ReadFile(filepath.Join(r.Dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(report), "2700 cached prompt tokens") {
		t.Errorf("report.md does not count the cached tokens:\n%s", report)
	}

	_, res, err = run(0)
	var be *calls.BudgetError
	if !errors.As(err, &be) || be.Limit != "max_cost" {
		t.Fatalf("with nothing cached: status %v, error %v; want a max_cost stop", res.Status, err)
	}
	if got := res.Usage.Total.Calls; got != 1 {
		t.Errorf("with nothing cached %d calls were made, want 1 (the second would pass max_cost)", got)
	}
}

// breakpointsSpec: one agent with a system prompt keeps a thread over two
// rounds, on a model with prompt_cache: breakpoints.
const breakpointsSpec = `version: 1
name: breakpoints
inputs:
  question: {required: true}
models:
  default: {model: claude-sonnet-4, prompt_cache: breakpoints}
agents:
  a: {name: Alice, system: sys}
templates:
  define:
    sys: "You are {{.Agent.Name}}."
    answer: "KEY={{.Agent.ID}}/r{{.Round}}/answer\n{{.Inputs.question}}"
nodes:
  answer: {kind: ask, agents: [a], template: answer, record: answer, thread: t}
flow:
  - loop: {as: round, max: 2, do: [answer]}
`

// TestPromptCacheBreakpoints: a model with prompt_cache: breakpoints sends
// the system prompt, the end of the thread's earlier turns and the end of
// the request as text parts marked cache_control {type: ephemeral}; the
// other messages stay plain strings, and a model without the option sends
// plain strings only.
func TestPromptCacheBreakpoints(t *testing.T) {
	type part struct {
		Type         string          `json:"type"`
		Text         string          `json:"text"`
		CacheControl json.RawMessage `json:"cache_control"`
	}
	type message struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	// marked says which messages of a request body carry a breakpoint,
	// checking the wire form of each.
	marked := func(t *testing.T, body []byte) []bool {
		var req struct{ Messages []message }
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		var out []bool
		for _, m := range req.Messages {
			var text string
			if json.Unmarshal(m.Content, &text) == nil {
				out = append(out, false)
				continue
			}
			var parts []part
			if err := json.Unmarshal(m.Content, &parts); err != nil || len(parts) != 1 || parts[0].Type != "text" || parts[0].Text == "" {
				t.Fatalf("a %s message's content is neither a string nor one text part: %s", m.Role, m.Content)
			}
			if string(parts[0].CacheControl) != `{"type":"ephemeral"}` {
				t.Fatalf("a %s message's part has cache_control %s", m.Role, parts[0].CacheControl)
			}
			out = append(out, true)
		}
		return out
	}
	for _, on := range []bool{true, false} {
		text := breakpointsSpec
		if !on {
			text = strings.Replace(text, ", prompt_cache: breakpoints", "", 1)
		}
		srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply { return llmtest.Reply{Content: "reply " + callKey(r)} })
		plan := loadPlan(t, writeSpec(t, t.TempDir(), text))
		_, res, err := execute(t, plan, Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep},
			Launch: launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}}})
		if err != nil || res.Status != result.StatusCompleted {
			t.Fatalf("prompt_cache on=%v: status %v, error %v", on, res.Status, err)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests, want 2", len(reqs))
		}
		// Round 1: system, prompt. Round 2: system, round 1's prompt,
		// its reply, the new prompt.
		want := [][]bool{{true, true}, {true, true, false, true}}
		if !on {
			want = [][]bool{{false, false}, {false, false, false, false}}
		}
		for i, r := range reqs {
			if got := marked(t, r.Body); fmt.Sprint(got) != fmt.Sprint(want[i]) {
				t.Errorf("prompt_cache on=%v, request %d: breakpoints on messages %v, want %v\n%s", on, i+1, got, want[i], r.Body)
			}
			// The server reads the parts' text as the message's content.
			if r.Messages[0].Content != "You are Alice." {
				t.Errorf("request %d: system prompt %q", i+1, r.Messages[0].Content)
			}
		}
	}
}

// TestPromptCacheSplit: a prompt whose template marks its stable start with
// {{cacheBreak}} goes, on a model with prompt_cache: breakpoints, as two
// text parts, the first marked cache_control {type: ephemeral} in the
// request's last message; an earlier turn of the thread keeps its two
// parts, marked only at its end. Outside a thread the end of a request is
// not marked. Without breakpoints each request's body is
// byte for byte what the same spec without {{cacheBreak}} sends.
func TestPromptCacheSplit(t *testing.T) {
	type part struct {
		Type         string          `json:"type"`
		Text         string          `json:"text"`
		CacheControl json.RawMessage `json:"cache_control"`
	}
	// parts describes each message of a request body: "s" for a string,
	// else its parts, "M" for one marked and "-" for one not.
	parts := func(t *testing.T, body []byte) (string, []string) {
		var req struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			}
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		var shape []string
		var texts []string
		for _, m := range req.Messages {
			var text string
			if json.Unmarshal(m.Content, &text) == nil {
				shape = append(shape, "s")
				texts = append(texts, text)
				continue
			}
			var ps []part
			if err := json.Unmarshal(m.Content, &ps); err != nil {
				t.Fatalf("content %s: %v", m.Content, err)
			}
			s, whole := "", ""
			for _, p := range ps {
				if p.Type != "text" || p.Text == "" {
					t.Fatalf("part %+v", p)
				}
				switch string(p.CacheControl) {
				case `{"type":"ephemeral"}`:
					s += "M"
				case "":
					s += "-"
				default:
					t.Fatalf("cache_control %s", p.CacheControl)
				}
				whole += p.Text
			}
			shape = append(shape, s)
			texts = append(texts, whole)
		}
		return strings.Join(shape, " "), texts
	}
	split := strings.Replace(breakpointsSpec, `answer: "KEY={{.Agent.ID}}/r{{.Round}}/answer\n{{.Inputs.question}}"`,
		`answer: "KEY={{.Agent.ID}}/r{{.Round}}/answer\n{{.Inputs.question}}{{cacheBreak}}\nRound {{.Round}}: answer."`, 1)
	if split == breakpointsSpec {
		t.Fatal("the spec's template was not found")
	}
	plain := strings.Replace(split, "{{cacheBreak}}", "", 1)
	run := func(text string) []llmtest.Request {
		srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply { return llmtest.Reply{Content: "reply " + callKey(r)} })
		plan := loadPlan(t, writeSpec(t, t.TempDir(), text))
		_, res, err := execute(t, plan, Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep},
			Launch: launch.Launch{Given: launch.Given{Inputs: []string{"question=" + strings.Repeat("the stable question ", 20)}}}})
		if err != nil || res.Status != result.StatusCompleted {
			t.Fatalf("status %v, error %v", res.Status, err)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 {
			t.Fatalf("%d requests, want 2", len(reqs))
		}
		return reqs
	}
	off := func(s string) string { return strings.Replace(s, ", prompt_cache: breakpoints", "", 1) }

	// Breakpoints on: round 1 is system, prompt; round 2 is system, round
	// 1's prompt, its reply, the new prompt.
	on := run(split)
	want := []string{"M MM", "M -M s MM"}
	for i, r := range on {
		shape, texts := parts(t, r.Body)
		if shape != want[i] {
			t.Errorf("request %d: parts %q, want %q\n%s", i+1, shape, want[i], r.Body)
		}
		last := texts[len(texts)-1]
		if strings.Contains(last, "\uFDD0") || !strings.HasSuffix(last, fmt.Sprintf("the stable question \nRound %d: answer.", i+1)) {
			t.Errorf("request %d: the split prompt reads %q", i+1, last)
		}
	}
	var first []part
	var req struct {
		Messages []struct{ Content json.RawMessage }
	}
	if err := json.Unmarshal(on[1].Body, &req); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(req.Messages[3].Content, &first); err != nil || !strings.HasSuffix(first[0].Text, "the stable question ") || first[1].Text != "\nRound 2: answer." {
		t.Errorf("round 2's prompt splits as %+v, want the split where {{cacheBreak}} stood", first)
	}

	// Without a thread nothing reads a request's end again: its split is
	// marked, its end is not (a cache write costs more than the prompt).
	for i, r := range run(strings.Replace(split, ", thread: t}", "}", 1)) {
		if shape, _ := parts(t, r.Body); shape != "M M-" {
			t.Errorf("request %d without a thread: parts %q, want \"M M-\"\n%s", i+1, shape, r.Body)
		}
	}
	for i, r := range run(strings.Replace(plain, ", thread: t}", "}", 1)) {
		if shape, _ := parts(t, r.Body); shape != "M s" {
			t.Errorf("request %d without a thread or a split: parts %q, want only the system prompt marked\n%s", i+1, shape, r.Body)
		}
	}

	// Breakpoints off: the same bytes as without {{cacheBreak}}.
	got, base := run(off(split)), run(off(plain))
	for i := range got {
		if string(got[i].Body) != string(base[i].Body) {
			t.Errorf("request %d without breakpoints differs from the spec without {{cacheBreak}}:\n%s\n%s", i+1, got[i].Body, base[i].Body)
		}
		if shape, _ := parts(t, got[i].Body); strings.Trim(shape, "s ") != "" {
			t.Errorf("request %d without breakpoints sends parts: %s", i+1, shape)
		}
	}
}

// TestCacheWritesCostTheWritePrice: prompt tokens a provider reports as
// written to its cache (OpenRouter's prompt_tokens_details.cache_write_tokens,
// or cache_creation_input_tokens) cost the model's cache_write price in
// result.json, report.md and budget.max_cost, in replies and streams alike.
// Of each call's 1000 prompt tokens 800 are written at 1.25: a call costs
// (200 x 1 + 800 x 1.25) / 1e6 = 0.0012, so max_cost 0.0024 admits two of
// the three calls, where prompt prices alone (0.001 a call) admit all three.
func TestCacheWritesCostTheWritePrice(t *testing.T) {
	for _, tc := range []struct {
		name           string
		creationField  bool
		stream, budget bool
	}{
		{"cache_write_tokens", false, false, false},
		{"cache_creation_input_tokens, streamed", true, true, false},
		{"max_cost", false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
				return llmtest.Reply{Content: "ok", PromptTokens: 1000, CacheWriteTokens: 800, CacheCreationField: tc.creationField, CompletionTokens: 1}
			})
			text := strings.Replace(cachedCostSpec, "cached_prompt: 0.1,", "cached_prompt: 0.1, cache_write: 1.25,", 1)
			text = strings.Replace(text, "budget: {max_cost: 0.001}", "budget: {max_cost: 1}", 1)
			if tc.stream {
				text = strings.Replace(text, "max_tokens: 1,", "max_tokens: 1, stream: true,", 1)
			}
			if tc.budget {
				text = strings.Replace(text, "budget: {max_cost: 1}", "budget: {max_cost: 0.0024}", 1)
			}
			plan := loadPlan(t, writeSpec(t, t.TempDir(), text))
			r, res, err := execute(t, plan, Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep},
				Launch: launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}}})
			u := res.Usage.Total
			if tc.budget {
				var be *calls.BudgetError
				if !errors.As(err, &be) || be.Limit != "max_cost" || u.Calls != 2 {
					t.Fatalf("%d calls, error %v; want a max_cost stop after 2", u.Calls, err)
				}
				return
			}
			if err != nil || res.Status != result.StatusCompleted {
				t.Fatalf("status %v, error %v", res.Status, err)
			}
			if u.Calls != 3 || u.CacheWriteTokens != 2400 || math.Abs(u.Cost-0.0036) > 1e-12 {
				t.Errorf("usage: %d calls, %d cache-write tokens, cost %v; want 3 calls, 2400 written, cost 0.0036", u.Calls, u.CacheWriteTokens, u.Cost)
			}
			report, err := os.ReadFile(filepath.Join(r.Dir, "report.md"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(report), "2400 written to their caches") {
				t.Errorf("report.md does not count the cache writes:\n%s", report)
			}
		})
	}
}

// cacheableSpec: Alice answers twice in a row (two rounds), then Bob once,
// all on one model, every prompt starting with the question.
const cacheableSpec = `version: 1
name: cacheable
inputs:
  question: {required: true}
models:
  default: {model: m, price: {prompt: 1, completion: 0}}
agents:
  a: {name: Alice}
  b: {name: Bob}
templates:
  define:
    answer: "{{.Inputs.question}}\nKEY={{.Agent.ID}}/r{{.Round}}"
nodes:
  first: {kind: ask, agents: [a], template: answer}
  second: {kind: ask, agents: [b], template: answer}
flow:
  - loop: {as: round, max: 2, do: [first]}
  - second
`

// TestCacheableShare: the cacheable share counts the prompt tokens in a
// start shared with an earlier request to the same model once that start
// reaches 1,024 tokens: per agent with its own earlier requests (Alice's
// second request; Bob has none), over the run with any agent's (Bob's
// request shares Alice's start too). A shared start under the minimum
// counts nothing, though prefix_tokens still counts it. report.md gives
// both, per agent and for the run.
func TestCacheableShare(t *testing.T) {
	run := func(question string) (*Run, *result.Result) {
		srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply { return llmtest.Reply{Content: "ok"} })
		plan := loadPlan(t, writeSpec(t, t.TempDir(), cacheableSpec))
		r, res, err := execute(t, plan, Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep},
			Launch: launch.Launch{Given: launch.Given{Inputs: []string{"question=" + question}}}})
		if err != nil || res.Status != result.StatusCompleted {
			t.Fatalf("status %v, error %v", res.Status, err)
		}
		return r, res
	}
	// The local server counts a token per 4 bytes of content: the question
	// is 2,000 tokens, each request about 2,005.
	r, res := run(strings.Repeat("word ", 1600))
	u := res.Usage
	a, b, total := u.ByAgent["a"], u.ByAgent["b"], u.Total
	near := func(got, want int) bool { return got >= want-10 && got <= want+10 }
	if a.Calls != 2 || b.Calls != 1 || !near(a.CacheableTokens, 2000) || b.CacheableTokens != 0 {
		t.Errorf("same agent: Alice %d of %d tokens cacheable, Bob %d of %d; want about 2,000 (her second request's question) and 0", a.CacheableTokens, a.PromptTokens, b.CacheableTokens, b.PromptTokens)
	}
	if !near(b.RunCacheableTokens, 2000) || total.RunCacheableTokens != a.RunCacheableTokens+b.RunCacheableTokens || !near(total.RunCacheableTokens, 4000) {
		t.Errorf("over the run: %d cacheable (Alice %d, Bob %d), want about 4,000: Bob's request shares Alice's start", total.RunCacheableTokens, a.RunCacheableTokens, b.RunCacheableTokens)
	}
	if want := math.Round(float64(total.RunCacheableTokens)/float64(total.PromptTokens)*10000) / 10000; total.RunCacheableShare != want || want < 0.6 {
		t.Errorf("run cacheable share %v, want %v (about two thirds)", total.RunCacheableShare, want)
	}
	// By the providers' rules: OpenAI's in steps of 128 (each agent's
	// tokens are one call's); Gemini's minimum (2,048) is not reached;
	// Anthropic's needs a breakpoint, and a one-off prompt without a
	// system prompt or a {{cacheBreak}} has none.
	rules := total.CacheableByRule
	steps := a.RunCacheableTokens - a.RunCacheableTokens%128 + b.RunCacheableTokens - b.RunCacheableTokens%128
	if rules.OpenAI.Tokens != steps || rules.Gemini.Tokens != 0 || rules.Anthropic.Tokens != 0 {
		t.Errorf("by rule %+v, want OpenAI %d (steps of 128), none by Gemini's and Anthropic's", rules, steps)
	}
	report, err := os.ReadFile(filepath.Join(r.Dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("OpenAI (at least 1024 tokens, in steps of 128) %.1f%% (%d); Anthropic (up to a cache breakpoint, at least 1024) 0.0%% (0); Gemini (implicit, at least 2048) 0.0%% (0).", 100*float64(steps)/float64(total.PromptTokens), steps),
		fmt.Sprintf("| agent a | %d | %.1f%% (%d) | %.1f%% (%d) |", a.PromptTokens, 100*float64(a.CacheableTokens)/float64(a.PromptTokens), a.CacheableTokens, 100*float64(a.RunCacheableTokens)/float64(a.PromptTokens), a.RunCacheableTokens),
		fmt.Sprintf("| agent b | %d | 0.0%% (0) | %.1f%% (%d) |", b.PromptTokens, 100*float64(b.RunCacheableTokens)/float64(b.PromptTokens), b.RunCacheableTokens),
		fmt.Sprintf("| **run** | %d | %.1f%% (%d) | %.1f%% (%d) |", total.PromptTokens, 100*float64(total.CacheableTokens)/float64(total.PromptTokens), total.CacheableTokens, 100*float64(total.RunCacheableTokens)/float64(total.PromptTokens), total.RunCacheableTokens),
	} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report.md lacks %q:\n%s", want, report)
		}
	}

	// A 500-token shared start is under the minimum.
	_, res = run(strings.Repeat("word ", 400))
	if tu := res.Usage.Total; tu.CacheableTokens != 0 || tu.RunCacheableTokens != 0 || tu.PrefixTokens == 0 {
		t.Errorf("a 500-token shared start: %d cacheable, %d over the run, %d prefix tokens; want 0, 0 and some", tu.CacheableTokens, tu.RunCacheableTokens, tu.PrefixTokens)
	}
}

// TestPromptCacheSplitResumes: a thread's turn keeps its split across a
// resume (the journaled prompt holds the mark), so a resumed run sends its
// later turns byte for byte as an uninterrupted run does, parts and
// breakpoints included.
func TestPromptCacheSplitResumes(t *testing.T) {
	text := strings.Replace(breakpointsSpec, `answer: "KEY={{.Agent.ID}}/r{{.Round}}/answer\n{{.Inputs.question}}"`,
		`answer: "KEY={{.Agent.ID}}/r{{.Round}}/answer\n{{.Inputs.question}}{{cacheBreak}}\nRound {{.Round}}."`, 1)
	text = strings.Replace(text, "max: 2", "max: 3", 1)
	reply := func(r llmtest.Request) llmtest.Reply { return llmtest.Reply{Content: "reply " + callKey(r)} }
	opts := func(url string) Options {
		o := Options{Settings: Settings{Getenv: envFor(url)}, Seams: Seams{Sleep: noSleep},
			Launch: launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}}}
		o.RunsDir = t.TempDir()
		return o
	}
	clean := llmtest.New(t, reply)
	if _, res, err := execute(t, loadPlan(t, writeSpec(t, t.TempDir(), text)), opts(clean.URL)); err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("clean run: %v", err)
	}

	// The endpoint goes down after round 1.
	var served atomic.Int64
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		if served.Add(1) > 1 {
			return llmtest.Reply{Status: 503, ErrorMessage: "down"}
		}
		return reply(r)
	})
	r, _, err := execute(t, loadPlan(t, writeSpec(t, t.TempDir(), text)), opts(srv.URL))
	if err == nil {
		t.Fatal("the first attempt did not fail")
	}
	srv.SetHandler(reply)
	first := srv.Count()
	resumed, err := Resume(r.Dir, nodes.Registry(), Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := resumed.Execute(context.Background()); err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("resume: %v", err)
	}
	want := map[string]string{}
	for _, q := range clean.Requests() {
		want[callKey(q)] = string(q.Body)
	}
	checked := 0
	for _, q := range srv.Requests()[first:] {
		checked++
		if string(q.Body) != want[callKey(q)] {
			t.Errorf("resumed request %s differs from the uninterrupted run's:\n%s\n%s", callKey(q), q.Body, want[callKey(q)])
		}
		if !strings.Contains(string(q.Body), `"text":"\nRound 1."`) {
			t.Errorf("resumed request %s sends round 1's turn without its split: %s", callKey(q), q.Body)
		}
	}
	if checked != 2 {
		t.Errorf("%d resumed requests checked, want rounds 2 and 3", checked)
	}
}
