package anthropic_test

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
	"github.com/debate-runner/runner/providers/anthropic"
	"github.com/debate-runner/runner/runtime/llm"
)

func TestMain(m *testing.M) { os.Exit(runtest.IsolateCache(m)) }

const key = "sk-ant-test-0123456789abcdef"

func client(f *nativetest.Server, edit func(*llm.Endpoint)) *llm.Client {
	ep := llm.Endpoint{Name: "claude", BaseURL: f.URL, APIKey: key, Provider: anthropic.Kind{}, MaxRetries: 3,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}
	if edit != nil {
		edit(&ep)
	}
	return llm.New(ep)
}

// genRequest makes a conversation of generated turns: system prompts, user
// turns (some split for a cache breakpoint), assistant turns with text or
// tool calls, and the tools' results.
func genRequest(r *rand.Rand) llm.Request {
	req := llm.Request{Model: "claude-sonnet-4-5", Stream: r.IntN(2) == 0, CacheBreakpoints: r.IntN(2) == 0}
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
		m := llm.Message{Role: "user", Content: text()}
		if r.IntN(3) == 0 {
			m.CacheSplit = len(m.Content) / 2
		}
		req.Messages = append(req.Messages, m)
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
			id := fmt.Sprintf("toolu_%d_%d", i, j)
			a.ToolCalls = append(a.ToolCalls, kit.ToolCall{ID: id, Name: "lookup", Arguments: fmt.Sprintf(`{"q":%q}`, word())})
			results = append(results, llm.Message{Role: "tool", ToolCallID: id, Content: text()})
		}
		req.Messages = append(req.Messages, a)
		req.Messages = append(req.Messages, results...)
	}
	if r.IntN(2) == 0 {
		req.Tools = []llm.Tool{{Name: "lookup", Description: "looks a word up", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}`)}}
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

// TestAnthropicMessagesProperty sends generated conversations through the
// client to the fake, streamed and not, and checks both ends: the request
// the server got is the conversation in the Messages API's terms (system
// prompts in system, roles alternating, tool calls as tool_use, results as
// tool_result, breakpoints as cache_control, max_tokens always sent,
// temperature when set), and the reply the client returns is the one the
// server sent (text, tool calls, stop reason, usage with cache reads and
// writes).
func TestAnthropicMessagesProperty(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 34))
	var want fakeReply
	f := newFake(t, key, func(fakeRequest) fakeReply { return want })
	c := client(f, nil)
	for i := 0; i < 60; i++ {
		req := genRequest(r)
		want = fakeReply{Text: fmt.Sprintf("reply %d: %s", i, strings.Repeat("ok ", r.IntN(20)))}
		if r.IntN(3) == 0 {
			want.Tools = []fakeTool{{ID: fmt.Sprintf("toolu_r%d", i), Name: "lookup", Input: `{"q":"beta"}`}}
		}
		if r.IntN(5) == 0 {
			want.Stop = "max_tokens"
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
		wantFinish := map[string]string{"": "stop", "max_tokens": "length"}[want.Stop]
		if len(want.Tools) > 0 && want.Stop == "" {
			wantFinish = "tool_calls"
		}
		if resp.FinishReason != wantFinish {
			t.Errorf("request %d: finish %q, want %q", i, resp.FinishReason, wantFinish)
		}
		if len(resp.ToolCalls) != len(want.Tools) || len(want.Tools) > 0 && (resp.ToolCalls[0].ID != want.Tools[0].ID || resp.ToolCalls[0].Arguments != want.Tools[0].Input) {
			t.Errorf("request %d: tool calls %+v, want %+v", i, resp.ToolCalls, want.Tools)
		}
		if resp.UsageError != "" || resp.PromptTokens <= 0 || resp.CompletionTokens <= 0 || resp.CachedTokens+resp.CacheWriteTokens > resp.PromptTokens {
			t.Errorf("request %d: usage %+v", i, resp)
		}
		if !req.CacheBreakpoints && resp.CachedTokens+resp.CacheWriteTokens != 0 {
			t.Errorf("request %d: no breakpoints sent, yet %d cached and %d written", i, resp.CachedTokens, resp.CacheWriteTokens)
		}
	}
}

// checkSent checks the Messages request the fake got against the
// conversation the client was given.
func checkSent(t *testing.T, i int, req llm.Request, sent fakeRequest) {
	t.Helper()
	p := sent.Params
	nsys := 0
	for _, m := range req.Messages {
		if m.Role == "system" {
			nsys++
		}
	}
	if len(p.System) != nsys {
		t.Errorf("request %d: %d system blocks, want %d", i, len(p.System), nsys)
	}
	wantMax := req.MaxTokens
	if wantMax == 0 {
		wantMax = anthropic.DefaultMaxTokens
	}
	if p.MaxTokens != wantMax {
		t.Errorf("request %d: max_tokens %d, want %d", i, p.MaxTokens, wantMax)
	}
	var fields map[string]json.RawMessage
	json.Unmarshal(sent.Body, &fields)
	if (req.Temperature != nil) != (fields["temperature"] != nil) {
		t.Errorf("request %d: temperature %s, given %v", i, fields["temperature"], req.Temperature)
	}
	for _, gone := range []string{"seed", "stream_options", "response_format", "max_completion_tokens"} {
		if _, ok := fields[gone]; ok {
			t.Errorf("request %d sent %s", i, gone)
		}
	}
	var oc struct {
		Format *struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	}
	json.Unmarshal(fields["output_config"], &oc)
	if (req.JSON != nil) != (oc.Format != nil) || oc.Format != nil && (oc.Format.Type != "json_schema" || !strings.Contains(string(oc.Format.Schema), `"required":["a"]`)) {
		t.Errorf("request %d: output_config %s for JSON reply %v", i, fields["output_config"], req.JSON)
	}
	body := string(sent.Body)
	var uses, results, calls, marks int
	for _, m := range req.Messages {
		calls += len(m.ToolCalls)
	}
	uses, results = strings.Count(body, `"type":"tool_use"`), strings.Count(body, `"type":"tool_result"`)
	marks = strings.Count(body, `"cache_control"`)
	if uses != calls || results != calls {
		t.Errorf("request %d: %d tool_use and %d tool_result blocks for %d calls", i, uses, results, calls)
	}
	if !req.CacheBreakpoints && marks != 0 || marks > 4 {
		t.Errorf("request %d: %d cache_control marks (breakpoints %v)", i, marks, req.CacheBreakpoints)
	}
	if p.Stream != req.Stream {
		t.Errorf("request %d: stream %v, want %v", i, p.Stream, req.Stream)
	}
	if got := sent.Header.Get("x-api-key"); got != key || sent.Header.Get("Authorization") != "" {
		t.Errorf("request %d: key sent as x-api-key %q, Authorization %q", i, got, sent.Header.Get("Authorization"))
	}
}

// TestAnthropicRetriesAndErrors injects the API's failures: 429 and 529
// with retry-after, 500, and a reply that never comes are retried (the
// wait retry-after asks is the one taken) until the call goes through; a
// refused key is not retried, names x-api-key, and never shows the key;
// an invalid request is final.
func TestAnthropicRetriesAndErrors(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			f := newFake(t, key, func(fakeRequest) fakeReply { return fakeReply{Text: "fine"} })
			f.Fail = func(n int, _ fakeRequest) (int, bool) {
				switch n {
				case 1:
					return 429, false
				case 2:
					return 529, false
				case 3:
					return 500, false
				case 4:
					return 0, true
				}
				return 0, false
			}
			var waits []time.Duration
			c := client(f, func(ep *llm.Endpoint) {
				ep.MaxRetries, ep.Timeout = 5, 300*time.Millisecond
				ep.Sleep = func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return ctx.Err() }
			})
			req := llm.Request{Model: "claude-haiku-4-5", Stream: stream, Messages: []llm.Message{{Role: "user", Content: "hi"}}}
			resp, err := c.Complete(context.Background(), req, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Content != "fine" || resp.Attempts != 5 {
				t.Errorf("content %q after %d attempts, want fine after 5", resp.Content, resp.Attempts)
			}
			if len(waits) < 2 || waits[0] != time.Second || waits[1] != time.Second {
				t.Errorf("waits %v: the 429 and the 529 asked for retry-after: 1", waits)
			}

			bad := client(f, func(ep *llm.Endpoint) { ep.APIKey = "sk-ant-wrong-key-000000000" })
			n := len(f.Requests())
			_, err = bad.Complete(context.Background(), req, nil)
			var e *llm.Error
			if !errors.As(err, &e) || e.Status != 401 || e.Attempts != 1 || !strings.Contains(e.Hint, "x-api-key") || strings.Contains(err.Error(), "sk-ant-wrong") {
				t.Errorf("wrong key: %v (hint %q)", err, e.Hint)
			}
			if len(f.Requests()) != n {
				t.Errorf("the refused key's request was recorded as served")
			}
			f.Fail = func(int, fakeRequest) (int, bool) { return 400, false }
			_, err = c.Complete(context.Background(), req, nil)
			if !errors.As(err, &e) || e.Status != 400 || e.Attempts != 1 || !strings.Contains(err.Error(), "invalid_request_error") && !strings.Contains(err.Error(), "injected") {
				t.Errorf("invalid request: %v", err)
			}
		})
	}
}
