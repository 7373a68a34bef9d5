package llm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/llmtest"
)

// These tests run the client against internal/llmtest servers that answer
// with each provider's rules and its own error texts.

func providerClient(srv *llmtest.Server, key string, edit func(*Endpoint)) *Client {
	ep := Endpoint{Name: "ep", BaseURL: srv.URL, APIKey: key, MaxRetries: 2, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}
	if edit != nil {
		edit(&ep)
	}
	return New(ep)
}

func ok(content string) llmtest.Handler {
	return func(llmtest.Request) llmtest.Reply { return llmtest.Reply{Content: content} }
}

func TestLMStudioJSON(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"confidence":{"type":"integer","minimum":0,"maximum":100}},"required":["confidence"],"additionalProperties":false}`)
	tests := []struct {
		name      string
		json      JSONReply
		wantFirst []string // response formats of the first call's requests
		second    string   // format of a second identical call
	}{
		{"schema, auto", JSONReply{Schema: schema}, []string{"json_schema"}, "json_schema"},
		{"no schema, auto", JSONReply{}, []string{"json_object", "json_schema"}, "json_schema"},
		{"object mode", JSONReply{Schema: schema, Mode: JSONObject}, []string{"json_object", ""}, ""},
		{"none", JSONReply{Schema: schema, Mode: JSONNone}, []string{""}, ""},
		{"schema mode without schema", JSONReply{Mode: JSONSchema}, []string{"json_schema"}, "json_schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewProvider(t, llmtest.LMStudio(), ok(`{"confidence": 80}`))
			c := providerClient(srv, "", nil)
			req := simple("qwen2.5-7b-instruct")
			req.JSON = &tt.json
			resp, err := c.Complete(context.Background(), req, nil)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			var got []string
			for _, r := range srv.Requests() {
				got = append(got, r.ResponseFormat)
			}
			if strings.Join(got, ",") != strings.Join(tt.wantFirst, ",") || resp.Attempts != len(tt.wantFirst) {
				t.Errorf("first call sent %q (attempts %d), want %q", got, resp.Attempts, tt.wantFirst)
			}
			if len(tt.wantFirst) > 1 && (len(resp.Adapted) != 1 || !strings.Contains(resp.Adapted[0], "'response_format.type' must be 'json_schema' or 'text'")) {
				t.Errorf("adapted %q, want one note quoting LM Studio", resp.Adapted)
			}
			resp, err = c.Complete(context.Background(), req, nil)
			if err != nil || resp.Attempts != 1 || len(resp.Adapted) != 0 {
				t.Fatalf("second call: %v, attempts %d, adapted %q", err, resp.Attempts, resp.Adapted)
			}
			if last := srv.Requests()[srv.Count()-1]; last.ResponseFormat != tt.second {
				t.Errorf("second call sent %q, want %q", last.ResponseFormat, tt.second)
			}
		})
	}
}

func TestOpenAIRules(t *testing.T) {
	const key = "sk-openai-test-0123456789"
	srv := llmtest.NewProvider(t, llmtest.OpenAI(key), ok("fine"))
	c := providerClient(srv, key, nil)

	// Nothing is refused before sending: a temperature for gpt-5-chat
	// (a chat model the server takes it for) goes out, and 0 is 0.
	req := simple("gpt-5-chat-latest")
	req.Temperature = ptr(0.0)
	if _, err := c.Complete(context.Background(), req, nil); err != nil {
		t.Fatalf("gpt-5-chat-latest with temperature: %v", err)
	}
	if raw := string(srv.Requests()[0].Fields["temperature"]); raw != "0" {
		t.Errorf("temperature sent as %s, want 0", raw)
	}

	// A reasoning model by its own name gets max_completion_tokens at once,
	// and reasoning_effort goes along.
	req = simple("o3-mini")
	req.MaxTokens, req.ReasoningEffort = 200, "high"
	if resp, err := c.Complete(context.Background(), req, nil); err != nil || resp.Attempts != 1 {
		t.Fatalf("o3-mini: %v", err)
	}
	r := srv.Requests()[1]
	if string(r.Fields["max_completion_tokens"]) != "200" || string(r.Fields["reasoning_effort"]) != `"high"` {
		t.Errorf("o3-mini request: %s", r.Body)
	}

	// A temperature for a reasoning model is the server's to refuse; the
	// error says so and hints at omit.
	req = simple("o3")
	req.Temperature = ptr(0.7)
	_, err := c.Complete(context.Background(), req, nil)
	e := asError(t, err)
	if e.Status != 400 || e.Attempts != 1 || !strings.Contains(e.Error(), "'temperature' does not support 0.7 with this model") || !strings.Contains(e.Hint, "omit") {
		t.Errorf("o3 with temperature: %v", e)
	}

	// Extra fields go out in order; one OpenAI does not know is refused
	// with its own words.
	req = simple("gpt-4o")
	req.Extra = []Field{{Name: "top_k", Value: json.RawMessage(`40`)}}
	_, err = c.Complete(context.Background(), req, nil)
	if e := asError(t, err); e.Status != 400 || !strings.Contains(e.Error(), "Unrecognized request argument supplied: top_k") {
		t.Errorf("top_k on OpenAI: %v", e)
	}

	// A strict schema must be closed: Strictable keeps strict off for an
	// open one, so OpenAI takes both.
	for _, schema := range []string{
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`,
		`{"type":"object","properties":{"a":{"type":"string","minLength":2}}}`,
	} {
		req = simple("gpt-4o")
		req.JSON = &JSONReply{Schema: json.RawMessage(schema), Name: "evaluate node"}
		if _, err := c.Complete(context.Background(), req, nil); err != nil {
			t.Errorf("schema %s: %v", schema, err)
		}
		last := srv.Requests()[srv.Count()-1]
		if last.SchemaName != "evaluate_node" || last.Strict != strings.Contains(schema, "additionalProperties") {
			t.Errorf("schema %s sent as %q strict %v", schema, last.SchemaName, last.Strict)
		}
	}
}

func TestMissingV1(t *testing.T) {
	tests := []struct {
		name     string
		provider llmtest.Provider
		says     string
	}{
		{"openai", llmtest.OpenAI(""), "Invalid URL (POST /chat/completions)"},
		{"ollama", llmtest.Ollama(), "404 page not found"},
		{"vllm", llmtest.VLLM(), `{"detail":"Not Found"}`},
		{"lmstudio", llmtest.LMStudio(), "Unexpected endpoint or method. (POST /chat/completions)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewProvider(t, tt.provider, ok("x"))
			c := providerClient(srv, "", func(ep *Endpoint) { ep.BaseURL = srv.Root })
			_, err := c.Complete(context.Background(), simple("m"), nil)
			e := asError(t, err)
			if e.Attempts != 1 || e.Retryable || !strings.Contains(e.Error(), tt.says) || !strings.Contains(e.Hint, srv.Root+"/v1") {
				t.Errorf("error %v (attempts %d); want one attempt quoting %q with a hint at /v1", e, e.Attempts, tt.says)
			}
		})
	}
	// llama.cpp answers at the root too: no /v1 needed.
	srv := llmtest.NewProvider(t, llmtest.LlamaCpp(), ok("x"))
	if _, err := providerClient(srv, "", func(ep *Endpoint) { ep.BaseURL = srv.Root }).Complete(context.Background(), simple("m"), nil); err != nil {
		t.Errorf("llama.cpp at the root: %v", err)
	}
}

func TestUsageEstimatedWhenMissing(t *testing.T) {
	p := llmtest.Ollama()
	p.NoUsage = true
	srv := llmtest.NewProvider(t, p, ok("The answer is forty-two."))
	c := providerClient(srv, "", nil)
	for _, stream := range []bool{false, true} {
		req := simple("llama3.2")
		req.Stream = stream
		resp, err := c.Complete(context.Background(), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		// "hello" is one token, plus 3 for the message and 3 for the reply.
		if !resp.UsageEstimated || resp.PromptTokens != 7 || resp.CompletionTokens < 5 {
			t.Errorf("stream=%v: estimated %v, tokens %d+%d", stream, resp.UsageEstimated, resp.PromptTokens, resp.CompletionTokens)
		}
	}
	// With usage, nothing is estimated.
	srv = llmtest.NewProvider(t, llmtest.Ollama(), ok("x"))
	resp, err := providerClient(srv, "", nil).Complete(context.Background(), simple("llama3.2"), nil)
	if err != nil || resp.UsageEstimated {
		t.Errorf("with usage: %v, estimated %v", err, resp.UsageEstimated)
	}
}

func TestStreamOptionsRefused(t *testing.T) {
	p := llmtest.VLLM()
	p.Refuse = map[string]llmtest.Refusal{"stream_options": {Status: 400, Body: `{"error":{"message":"Unrecognized request argument supplied: stream_options","type":"invalid_request_error"}}`}}
	srv := llmtest.NewProvider(t, p, ok("streamed"))
	c := providerClient(srv, "", nil)
	req := simple("m")
	req.Stream = true
	resp, err := c.Complete(context.Background(), req, nil)
	if err != nil || resp.Attempts != 2 || len(resp.Adapted) != 1 || !resp.UsageEstimated {
		t.Fatalf("err %v, attempts %d, adapted %q, estimated %v", err, resp.Attempts, resp.Adapted, resp.UsageEstimated)
	}
	if resp, err = c.Complete(context.Background(), req, nil); err != nil || resp.Attempts != 1 {
		t.Errorf("second call: %v, attempts %d", err, resp.Attempts)
	}
}

func TestOpenRouterStreamWithComments(t *testing.T) {
	const key = "sk-or-test-0123456789"
	srv := llmtest.NewProvider(t, llmtest.OpenRouter(key, "anthropic/claude-3.5-sonnet"), ok("routed reply"))
	c := providerClient(srv, key, nil)
	req := simple("anthropic/claude-3.5-sonnet")
	req.Stream = true
	req.Extra = []Field{{Name: "provider", Value: json.RawMessage(`{"order":["anthropic"]}`)}}
	resp, err := c.Complete(context.Background(), req, nil)
	if err != nil || resp.Content != "routed reply" || resp.UsageEstimated {
		t.Fatalf("err %v, content %q, estimated %v", err, resp.Content, resp.UsageEstimated)
	}
	if got := string(srv.Requests()[0].Fields["provider"]); got != `{"order":["anthropic"]}` {
		t.Errorf("provider sent as %s", got)
	}
	_, err = c.Complete(context.Background(), simple("openai/gpt-9"), nil)
	if e := asError(t, err); e.Status != 400 || !strings.Contains(e.Error(), "openai/gpt-9 is not a valid model ID") {
		t.Errorf("unknown model: %v", e)
	}
}

func TestHeaderSecretsRedacted(t *testing.T) {
	const secret = "gw-secret-0123456789"
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Status: 403, ErrorMessage: "key " + r.Header.Get("X-Gateway-Key") + " is not allowed"}
	})
	c := providerClient(srv, "", func(ep *Endpoint) { ep.Headers = map[string]string{"X-Gateway-Key": secret, "X-Title": "t"} })
	_, err := c.Complete(context.Background(), simple("m"), nil)
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "[REDACTED]") {
		t.Errorf("error %v leaks or lost the header value", err)
	}
}

func TestBaseURLQueryKept(t *testing.T) {
	srv := llmtest.New(t, ok("x"))
	c := providerClient(srv, "", func(ep *Endpoint) { ep.BaseURL = srv.URL + "/?tenant=a" })
	if _, err := c.Complete(context.Background(), simple("m"), nil); err != nil {
		t.Fatal(err)
	}
	if r := srv.Requests()[0]; r.Path != "/v1/chat/completions" || r.Query.Get("tenant") != "a" {
		t.Errorf("sent to %s?%s", r.Path, r.Query.Encode())
	}
}

func TestTokenFieldFor(t *testing.T) {
	for model, want := range map[string]string{
		"gpt-4o": MaxTokensField, "o1": MaxCompletionTokensField, "o3-mini-2025-01-31": MaxCompletionTokensField,
		"o4-mini": MaxCompletionTokensField, "gpt-5": MaxCompletionTokensField, "gpt-5-chat-latest": MaxTokensField,
		"openai/o3": MaxCompletionTokensField, "ollama": MaxTokensField, "llama3.2": MaxTokensField, "omni-7b": MaxTokensField,
	} {
		if got := TokenFieldFor(model); got != want {
			t.Errorf("TokenFieldFor(%s) = %s, want %s", model, got, want)
		}
	}
}

func TestStrictable(t *testing.T) {
	for schema, want := range map[string]bool{
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`:                                                               true,
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`:                                                                                            false,
		`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a"],"additionalProperties":false}`:                                        false,
		`{"type":"object","properties":{"a":{"type":"string","minLength":1}},"required":["a"],"additionalProperties":false}`:                                                 false,
		`{"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"q":{"type":"string"}}}}},"required":["l"],"additionalProperties":false}`: false,
		`{"type":"array"}`: false,
		`not json`:         false,
	} {
		if got := Strictable(json.RawMessage(schema)); got != want {
			t.Errorf("Strictable(%s) = %v, want %v", schema, got, want)
		}
	}
}
