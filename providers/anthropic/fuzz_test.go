package anthropic_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/debate-runner/runner/providers/anthropic"
	"github.com/debate-runner/runner/providers/internal/relay"
	"github.com/debate-runner/runner/runtime/llm"
)

// FuzzDecodeMessage feeds reply bodies, garbled or not, to the decoding
// of a Message: it never panics; what it accepts is a Chat Completions
// reply with one choice, whose usage (when present) is either read or
// refused with an *llm.UsageError; what it refuses comes with an error
// that says what was wrong.
func FuzzDecodeMessage(f *testing.F) {
	f.Add([]byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":2,"cache_read_input_tokens":5,"cache_creation_input_tokens":0}}`))
	f.Add([]byte(`{"type":"message","content":[{"type":"thinking","thinking":"hm"}],"usage":{"input_tokens":"12","output_tokens":12.0}}`))
	f.Add([]byte(`{"type":"message","content":null,"usage":{"input_tokens":-4}}`))
	f.Add([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	f.Add([]byte(`{"type":"message","content":[{"type":"tool_use","input":`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := anthropic.DecodeMessage(body)
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
						Function struct{ Arguments string } `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage json.RawMessage `json:"usage"`
		}
		if err := json.Unmarshal(out, &c); err != nil || len(c.Choices) != 1 || c.Choices[0].Message.Content == nil || c.Choices[0].FinishReason == nil {
			t.Fatalf("accepted %q as %s (%v)", body, out, err)
		}
		if len(c.Usage) > 0 {
			checkUsage(t, c.Usage)
		}
	})
}

// FuzzDecodeUsage: Anthropic's usage objects, counts as numbers, floats,
// strings or garbage: never a panic; a usage read has no negative count,
// and its cache reads and writes are parts of its prompt.
func FuzzDecodeUsage(f *testing.F) {
	for _, s := range []string{
		`{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":100,"cache_creation_input_tokens":20}`,
		`{"input_tokens":"10","output_tokens":5.0}`, `{"input_tokens":1e3}`, `{"input_tokens":-1}`,
		`{"input_tokens":99999999,"cache_read_input_tokens":99999999}`, `[]`, `null`, `{"output_tokens":1.5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkUsage(t, raw) })
}

func checkUsage(t *testing.T, raw []byte) {
	t.Helper()
	u, err := anthropic.DecodeUsage(raw)
	if err != nil {
		var ue *llm.UsageError
		if !errorAs(err, &ue) || ue.Reason == "" {
			t.Fatalf("usage %q: error %v is not a *llm.UsageError with a reason", raw, err)
		}
		return
	}
	if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.CachedTokens < 0 || u.CacheWriteTokens < 0 ||
		u.CachedTokens+u.CacheWriteTokens > u.PromptTokens || u.PromptTokens > llm.MaxUsageTokens {
		t.Fatalf("usage %q read as %+v", raw, u)
	}
}

func errorAs(err error, target **llm.UsageError) bool {
	ue, ok := err.(*llm.UsageError)
	*target = ue
	return ok
}

// FuzzRelay feeds event streams, garbled or cut, to the relay of
// Anthropic's events as Chat Completions chunks: it never panics; every
// line it writes is a data line of JSON (or [DONE]); a finish_reason is
// written only after message_stop, and [DONE] only then.
func FuzzRelay(f *testing.F) {
	f.Add([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	f.Add([]byte("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\"}}\n\n"))
	f.Add([]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"))
	f.Add([]byte("event: message_start\ndata: {not json\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(body))}
		s := ssestream.NewStream[sdk.MessageStreamEventUnion](ssestream.NewDecoder(resp), nil)
		var out bytes.Buffer
		err := anthropic.Relay(s, &out)
		if err != nil && err.Error() == "" {
			t.Fatal("an error without a message")
		}
		stopped := bytes.Contains(body, []byte("message_stop"))
		got, err := relay.ReadChunks(&out)
		if err != nil {
			t.Fatalf("relayed %q: %v", out.String(), err)
		}
		if got.Done && !stopped {
			t.Fatalf("[DONE] without message_stop in %q", body)
		}
		if got.Finished && !stopped {
			t.Fatalf("a finish_reason without message_stop in %q", body)
		}
	})
}

// FuzzTranslate: any request body, as the engine or anything else might
// send it, is turned into a Messages request or refused with an error;
// never a panic, and what it makes can be encoded.
func FuzzTranslate(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]},{"role":"assistant","tool_calls":[{"id":"1","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"1","content":"r"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object"}}},"top_k":3}`))
	f.Add([]byte(`{"messages":[{"role":"wizard","content":1}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","tool_calls":[{"function":{"arguments":"not json"}}]}],"max_tokens":-5}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, _, err := anthropic.Translate(body)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		if _, err := json.Marshal(p); err != nil {
			t.Fatalf("%q translated to a request that cannot be encoded: %v", body, err)
		}
	})
}
