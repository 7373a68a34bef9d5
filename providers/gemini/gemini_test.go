package gemini_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/debate-runner/runner/internal/nativetest"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/providers/gemini"
	"github.com/debate-runner/runner/runtime/llm"
)

func TestMain(m *testing.M) { os.Exit(runtest.IsolateCache(m)) }

const key = "AIzaTestKey-0123456789abcdefghij"

func client(f *nativetest.Server, edit func(*llm.Endpoint)) *llm.Client {
	ep := llm.Endpoint{Name: "gemini", BaseURL: f.URL, APIKey: key, Provider: gemini.Kind{}, MaxRetries: 3,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}
	if edit != nil {
		edit(&ep)
	}
	return llm.New(ep)
}

// genRequest makes a conversation of generated turns: system prompts, user
// turns, assistant turns with text or tool calls, the tools' results.
func genRequest(r *rand.Rand) llm.Request {
	req := llm.Request{Model: "gemini-2.5-flash", Stream: r.IntN(2) == 0, CacheBreakpoints: r.IntN(2) == 0}
	word := func() string {
		return []string{"alpha", "beta", "γάμμα", "delta \"q\"", "e\nf", "{x}", "ü"}[r.IntN(7)]
	}
	text := func() string {
		var b strings.Builder
		for i := 0; i < 1+r.IntN(6); i++ {
			b.WriteString(word() + " ")
		}
		return b.String()
	}
	for i := 0; i < r.IntN(3); i++ {
		req.Messages = append(req.Messages, llm.Message{Role: "system", Content: text()})
	}
	turns := 1 + r.IntN(4)
	for i := 0; i < turns; i++ {
		req.Messages = append(req.Messages, llm.Message{Role: "user", Content: text(), CacheSplit: r.IntN(3)})
		if i == turns-1 {
			break
		}
		if r.IntN(2) == 0 {
			req.Messages = append(req.Messages, llm.Message{Role: "assistant", Content: text()})
			continue
		}
		a := llm.Message{Role: "assistant"}
		var results []llm.Message
		for j := 0; j <= r.IntN(2); j++ {
			id := fmt.Sprintf("call_%d_%d", i, j)
			a.ToolCalls = append(a.ToolCalls, kit.ToolCall{ID: id, Name: fmt.Sprintf("lookup%d", j), Arguments: fmt.Sprintf(`{"q":%q}`, word())})
			results = append(results, llm.Message{Role: "tool", ToolCallID: id, Content: text()})
		}
		req.Messages = append(req.Messages, a)
		req.Messages = append(req.Messages, results...)
	}
	if r.IntN(2) == 0 {
		req.Tools = []llm.Tool{{Name: "lookup0", Description: "looks a word up", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)}}
	}
	if r.IntN(2) == 0 {
		req.MaxTokens = 1 + r.IntN(9000)
	}
	if r.IntN(2) == 0 {
		temp := float64(r.IntN(10)) / 10
		req.Temperature = &temp
	}
	if r.IntN(3) == 0 {
		req.JSON = &llm.JSONReply{Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}`)}
	}
	return req
}

// TestGeminiGenerateContentProperty sends generated conversations to the
// fake, streamed and not: the server gets them in Gemini's terms (system
// prompts in systemInstruction, assistant turns as role model, calls as
// functionCall and results as functionResponse named after their call,
// roles alternating, max tokens, temperature and the reply's schema in
// generationConfig, no cache_control), and the client returns the reply
// the server sent (text, calls, finish reason, usage with implicit cache
// hits).
func TestGeminiGenerateContentProperty(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 35))
	var want fakeReply
	f := newFake(t, key, func(fakeRequest) fakeReply { return want })
	c := client(f, nil)
	cachedSome := false
	for i := 0; i < 60; i++ {
		req := genRequest(r)
		want = fakeReply{Text: fmt.Sprintf("reply %d: %s", i, strings.Repeat("ok ", r.IntN(20)))}
		if r.IntN(3) == 0 {
			want.Tools = []fakeTool{{Name: "lookup0", Input: `{"q":"beta"}`}}
		}
		if r.IntN(5) == 0 {
			want.Stop = "MAX_TOKENS"
		}
		resp, err := c.Complete(context.Background(), req, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		sent := f.Requests()[len(f.Requests())-1]
		checkSent(t, i, req, sent)
		if resp.Content != want.Text {
			t.Errorf("request %d: content %q, want %q", i, resp.Content, want.Text)
		}
		wantFinish := map[string]string{"": "stop", "MAX_TOKENS": "length"}[want.Stop]
		if len(want.Tools) > 0 && want.Stop == "" {
			wantFinish = "tool_calls"
		}
		if resp.FinishReason != wantFinish {
			t.Errorf("request %d: finish %q, want %q", i, resp.FinishReason, wantFinish)
		}
		if len(resp.ToolCalls) != len(want.Tools) || len(want.Tools) > 0 && (resp.ToolCalls[0].ID == "" || resp.ToolCalls[0].Name != "lookup0" || resp.ToolCalls[0].Arguments != want.Tools[0].Input) {
			t.Errorf("request %d: tool calls %+v, want %+v", i, resp.ToolCalls, want.Tools)
		}
		if resp.UsageError != "" || resp.PromptTokens <= 0 || resp.CompletionTokens <= 0 || resp.CachedTokens > resp.PromptTokens {
			t.Errorf("request %d: usage %+v", i, resp)
		}
		cachedSome = cachedSome || resp.CachedTokens > 0
	}
	if !cachedSome {
		t.Error("no request reported implicitly cached tokens")
	}
}

func checkSent(t *testing.T, i int, req llm.Request, sent fakeRequest) {
	t.Helper()
	p := sent.Params
	nsys := 0
	for _, m := range req.Messages {
		if m.Role == "system" {
			nsys++
		}
	}
	if got := 0; p.SystemInstruction != nil {
		got = len(p.SystemInstruction.Parts)
		if got != nsys {
			t.Errorf("request %d: %d system parts, want %d", i, got, nsys)
		}
	} else if nsys > 0 {
		t.Errorf("request %d: no systemInstruction for %d system messages", i, nsys)
	}
	gc := p.GenerationConfig
	if req.MaxTokens > 0 && string(gc["maxOutputTokens"]) != fmt.Sprint(req.MaxTokens) {
		t.Errorf("request %d: maxOutputTokens %s, want %d", i, gc["maxOutputTokens"], req.MaxTokens)
	}
	if (req.Temperature != nil) != (gc["temperature"] != nil) {
		t.Errorf("request %d: temperature %s, given %v", i, gc["temperature"], req.Temperature)
	}
	if (req.JSON != nil) != (gc["responseJsonSchema"] != nil) {
		t.Errorf("request %d: responseJsonSchema %s, given %v", i, gc["responseJsonSchema"], req.JSON)
	}
	body := string(sent.Body)
	calls := 0
	for _, m := range req.Messages {
		calls += len(m.ToolCalls)
	}
	if strings.Count(body, `"functionCall"`) != calls || strings.Count(body, `"functionResponse"`) != calls || strings.Contains(body, "cache_control") {
		t.Errorf("request %d: %d calls, sent %s", i, calls, body)
	}
	for _, m := range req.Messages {
		for _, tc := range m.ToolCalls {
			if !strings.Contains(body, fmt.Sprintf(`"functionResponse":{"id":%q,"name":%q`, tc.ID, tc.Name)) {
				t.Errorf("request %d: the result of %s is not named %s: %s", i, tc.ID, tc.Name, body)
			}
		}
	}
	if sent.Stream != req.Stream || sent.Model != req.Model {
		t.Errorf("request %d: stream %v model %q, want %v %q", i, sent.Stream, sent.Model, req.Stream, req.Model)
	}
	if sent.Header.Get("x-goog-api-key") != key || sent.Header.Get("Authorization") != "" {
		t.Errorf("request %d: key not (only) in x-goog-api-key", i)
	}
}

// TestGeminiRetriesAndErrors: 429 (with Retry-After), 500 and 503 are
// retried after the wait asked; a bad key (Gemini's 400) is not retried,
// names x-goog-api-key, and never shows the key.
func TestGeminiRetriesAndErrors(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			f := newFake(t, key, func(fakeRequest) fakeReply { return fakeReply{Text: "fine"} })
			f.Fail = func(n int, _ fakeRequest) (int, bool) { return map[int]int{1: 429, 2: 500, 3: 503}[n], false }
			var waits []time.Duration
			c := client(f, func(ep *llm.Endpoint) {
				ep.Sleep = func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return ctx.Err() }
			})
			req := llm.Request{Model: "gemini-2.5-flash", Stream: stream, Messages: []llm.Message{{Role: "user", Content: "hi"}}}
			resp, err := c.Complete(context.Background(), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Content != "fine" || resp.Attempts != 4 || len(waits) == 0 || waits[0] != 2*time.Second {
				t.Errorf("content %q after %d attempts, waits %v; want fine after 4, the first wait 2s", resp.Content, resp.Attempts, waits)
			}
			bad := client(f, func(ep *llm.Endpoint) { ep.APIKey = "AIzaWrongKey-000000000000000" })
			_, err = bad.Complete(context.Background(), req, nil)
			var e *llm.Error
			if !errors.As(err, &e) || e.Status != 400 || e.Attempts != 1 || !strings.Contains(e.Hint, "x-goog-api-key") || strings.Contains(err.Error(), "AIzaWrong") {
				t.Errorf("wrong key: %v", err)
			}
		})
	}
}
