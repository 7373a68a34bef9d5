package gemini_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/debate-runner/runner/providers/gemini"
	"github.com/debate-runner/runner/providers/internal/relay"
	"github.com/debate-runner/runner/runtime/llm"
)

// FuzzDecodeResponse feeds reply bodies, garbled or not, to the decoding
// of a generateContent reply: never a panic; what it accepts is a Chat
// Completions reply with one choice, a finish reason and tool calls with
// ids, whose usage is read or refused with an *llm.UsageError; what it
// refuses has an error that says so.
func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"},{"functionCall":{"name":"f","args":{"a":1}}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":3,"cachedContentTokenCount":4},"modelVersion":"gemini-2.5-flash"}`))
	f.Add([]byte(`{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":"7"}}`))
	f.Add([]byte(`{"candidates":[{"content":{"parts":[{"text":"a","thought":true}]},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":-1}}`))
	f.Add([]byte(`{"candidates":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := gemini.DecodeResponse(body)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		var c struct {
			Choices []struct {
				Message struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						ID string `json:"id"`
					} `json:"tool_calls"`
				} `json:"message"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage json.RawMessage `json:"usage"`
		}
		if err := json.Unmarshal(out, &c); err != nil || len(c.Choices) != 1 || c.Choices[0].Message.Content == nil || c.Choices[0].FinishReason == nil || *c.Choices[0].FinishReason == "" {
			t.Fatalf("accepted %q as %s (%v)", body, out, err)
		}
		for _, tc := range c.Choices[0].Message.ToolCalls {
			if tc.ID == "" {
				t.Fatalf("a tool call without an id in %s", out)
			}
		}
		if len(c.Usage) > 0 {
			checkUsage(t, c.Usage)
		}
	})
}

// FuzzDecodeUsage: usageMetadata with counts of any shape: never a panic;
// a usage read has no negative count and its cached tokens are part of
// its prompt.
func FuzzDecodeUsage(f *testing.F) {
	for _, s := range []string{
		`{"promptTokenCount":10,"candidatesTokenCount":5,"cachedContentTokenCount":4,"thoughtsTokenCount":2}`,
		`{"promptTokenCount":"10","candidatesTokenCount":5.0}`, `{"promptTokenCount":3,"cachedContentTokenCount":4}`,
		`{"candidatesTokenCount":-1}`, `[]`, `null`, `{"thoughtsTokenCount":99999999,"candidatesTokenCount":99999999}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkUsage(t, raw) })
}

func checkUsage(t *testing.T, raw []byte) {
	t.Helper()
	u, err := gemini.DecodeUsage(raw)
	if err != nil {
		var ue *llm.UsageError
		if !errors.As(err, &ue) || ue.Reason == "" {
			t.Fatalf("usage %q: error %v is not a *llm.UsageError with a reason", raw, err)
		}
		return
	}
	if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.CachedTokens < 0 || u.CacheWriteTokens != 0 ||
		u.CachedTokens > u.PromptTokens || u.CompletionTokens > llm.MaxUsageTokens {
		t.Fatalf("usage %q read as %+v", raw, u)
	}
}

// FuzzRelay feeds event streams, garbled or cut, to the relay of Gemini's
// events as Chat Completions chunks: never a panic; every line written is
// a data line of JSON or [DONE]; a finish_reason and [DONE] only when an
// event carried a finishReason (or a block reason).
func FuzzRelay(f *testing.F) {
	f.Add([]byte("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"he\"}]}}]}\r\n\r\ndata: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"llo\"},{\"functionCall\":{\"name\":\"f\",\"args\":{}}}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":3}}\r\n\r\n"))
	f.Add([]byte("data: {\"error\":{\"code\":503,\"message\":\"overloaded\",\"status\":\"UNAVAILABLE\"}}\n\n"))
	f.Add([]byte("data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"cut\"}]}}]}\n\ndata: {oops"))
	f.Fuzz(func(t *testing.T, body []byte) {
		var out bytes.Buffer
		err := gemini.Relay(bytes.NewReader(body), &out)
		if err != nil && err.Error() == "" {
			t.Fatal("an error without a message")
		}
		// Go's JSON decoding matches member names without regard to case.
		lower := bytes.ToLower(body)
		finished := bytes.Contains(lower, []byte("finishreason")) || bytes.Contains(lower, []byte("blockreason"))
		got, err := relay.ReadChunks(&out)
		if err != nil {
			t.Fatalf("relayed %q: %v", out.String(), err)
		}
		if got.Done && !finished {
			t.Fatalf("[DONE] without a finishReason in %q", body)
		}
		if got.Finished && !finished {
			t.Fatalf("a finish_reason without a finishReason in %q", body)
		}
	})
}

// FuzzTranslate: any request body becomes a generateContent body that is
// JSON, or an error; never a panic.
func FuzzTranslate(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]},{"role":"assistant","tool_calls":[{"id":"1","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"1","content":"r"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object"}}},"stop":"x","topK":3}`))
	f.Add([]byte(`{"messages":[{"role":"wizard","content":1}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := gemini.Translate(body)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("%q translated to %q, not JSON", body, out)
		}
	})
}
