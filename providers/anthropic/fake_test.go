package anthropic_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fake is a local server that speaks Anthropic's Messages API as its
// documentation describes it: POST /v1/messages with x-api-key and
// anthropic-version, a Message or an event stream in reply, errors as
// {"type": "error", "error": {"type", "message"}} with their statuses
// (400 invalid_request_error, 401 authentication_error, 429
// rate_limit_error with retry-after, 500 api_error, 529
// overloaded_error), and prompt caching: a request's prefix up to a block
// marked cache_control is written to the cache, and read back by a later
// request that starts with the same bytes.
type fake struct {
	t   testing.TB
	srv *httptest.Server
	key string

	mu       sync.Mutex
	requests []fakeRequest
	cached   map[string]bool // prefixes written to the cache
	// fail, when set, answers a request before the handler: a status
	// (with Anthropic's error for it), or 0 for a normal answer. hang
	// holds the reply until the client gives up.
	fail  func(n int, req fakeRequest) (status int, hang bool)
	reply func(req fakeRequest) fakeReply
}

// fakeRequest is a request the fake received.
type fakeRequest struct {
	N      int
	Body   []byte
	Header http.Header
	Params struct {
		Model     string            `json:"model"`
		MaxTokens int               `json:"max_tokens"`
		System    []json.RawMessage `json:"system"`
		Messages  []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools  []json.RawMessage `json:"tools"`
		Stream bool              `json:"stream"`
	}
}

// fakeReply is what the handler answers: text, or tool calls, and a stop
// reason ("" for end_turn or tool_use).
type fakeReply struct {
	Text  string
	Tools []fakeTool
	Stop  string
	// Usage, when set, is sent as the usage object instead of the counts
	// the fake makes.
	Usage string
}

type fakeTool struct{ ID, Name, Input string }

func newFake(t testing.TB, key string, reply func(fakeRequest) fakeReply) *fake {
	f := &fake{t: t, key: key, reply: reply, cached: map[string]bool{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) Requests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.requests...)
}

func (f *fake) apiError(w http.ResponseWriter, status int, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req_fake")
	if status == http.StatusTooManyRequests || status == 529 {
		w.Header().Set("retry-after", "1")
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q},"request_id":"req_fake"}`, kind, msg)
}

var errorKinds = map[int]string{400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		f.apiError(w, 404, "not_found_error", "Not found: "+r.Method+" "+r.URL.Path)
		return
	}
	if r.Header.Get("x-api-key") != f.key {
		f.apiError(w, 401, "authentication_error", "invalid x-api-key")
		return
	}
	if r.Header.Get("anthropic-version") == "" {
		f.apiError(w, 400, "invalid_request_error", "anthropic-version: header is required")
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req fakeRequest
	req.Body, req.Header = body, r.Header.Clone()
	if err := json.Unmarshal(body, &req.Params); err != nil {
		f.apiError(w, 400, "invalid_request_error", "invalid JSON: "+err.Error())
		return
	}
	switch {
	case req.Params.Model == "":
		f.apiError(w, 400, "invalid_request_error", "model: Field required")
		return
	case req.Params.MaxTokens <= 0:
		f.apiError(w, 400, "invalid_request_error", "max_tokens: Field required")
		return
	case len(req.Params.Messages) == 0:
		f.apiError(w, 400, "invalid_request_error", "messages: at least one message is required")
		return
	}
	for i, m := range req.Params.Messages {
		if m.Role != "user" && m.Role != "assistant" && m.Role != "system" {
			f.apiError(w, 400, "invalid_request_error", fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i))
			return
		}
		if i > 0 && m.Role == req.Params.Messages[i-1].Role && m.Role != "system" {
			f.apiError(w, 400, "invalid_request_error", fmt.Sprintf("messages.%d: roles must alternate between \"user\" and \"assistant\"", i))
			return
		}
	}
	f.mu.Lock()
	req.N = len(f.requests) + 1
	f.requests = append(f.requests, req)
	fail := f.fail
	f.mu.Unlock()
	if fail != nil {
		if status, hang := fail(req.N, req); hang {
			<-r.Context().Done()
			return
		} else if status != 0 {
			f.apiError(w, status, errorKinds[status], "the fake's injected "+errorKinds[status])
			return
		}
	}
	rep := f.reply(req)
	usage := rep.Usage
	if usage == "" {
		in, read, written := f.cache(req)
		out := max(1, len(rep.Text)/4)
		usage = fmt.Sprintf(`{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":%d,"service_tier":"standard"}`, in, written, read, out)
	}
	stop := rep.Stop
	if stop == "" {
		stop = "end_turn"
		if len(rep.Tools) > 0 {
			stop = "tool_use"
		}
	}
	var content []any
	if rep.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": rep.Text})
	}
	for _, tc := range rep.Tools {
		content = append(content, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": json.RawMessage(tc.Input)})
	}
	if !req.Params.Stream {
		w.Header().Set("Content-Type", "application/json")
		msg := map[string]any{
			"id": fmt.Sprintf("msg_fake%d", req.N), "type": "message", "role": "assistant", "model": req.Params.Model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": json.RawMessage(usage),
		}
		json.NewEncoder(w).Encode(msg)
		return
	}
	f.stream(w, req, rep, stop, usage)
}

// stream answers as Anthropic's event stream does: message_start with the
// input usage, a ping, each block's start, deltas and stop, message_delta
// with the stop reason and the output tokens, message_stop.
func (f *fake) stream(w http.ResponseWriter, req fakeRequest, rep fakeReply, stop, usage string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	var u map[string]json.RawMessage
	json.Unmarshal([]byte(usage), &u)
	start := map[string]json.RawMessage{}
	for k, v := range u {
		start[k] = v
	}
	start["output_tokens"] = json.RawMessage("1")
	event := func(name string, v any) {
		data, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_fake%d", req.N), "type": "message", "role": "assistant", "model": req.Params.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": start,
	}})
	event("ping", map[string]any{"type": "ping"})
	i := 0
	if rep.Text != "" {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, piece := range chop(rep.Text, 7) {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": piece}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	for _, tc := range rep.Tools {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": map[string]any{}}})
		for _, piece := range chop(tc.Input, 5) {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": piece}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]json.RawMessage{"output_tokens": u["output_tokens"]}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

func chop(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// cache counts a request's input tokens (a token per four bytes of its
// blocks as sent) as Anthropic reports them: tokens up to the last
// breakpoint whose prefix is cached are read; the prefix up to the last
// breakpoint is written when not; the rest is input_tokens.
func (f *fake) cache(req fakeRequest) (input, read, written int) {
	var blocks []json.RawMessage
	blocks = append(blocks, req.Params.System...)
	for _, m := range req.Params.Messages {
		blocks = append(blocks, m.Content...)
	}
	var prefix strings.Builder
	var marks []string // the prefix at each breakpoint
	for _, b := range blocks {
		prefix.Write(b)
		if strings.Contains(string(b), `"cache_control"`) {
			marks = append(marks, prefix.String())
		}
	}
	total := max(1, prefix.Len()/4)
	f.mu.Lock()
	defer f.mu.Unlock()
	readLen := 0
	for _, m := range marks {
		if f.cached[m] {
			readLen = len(m)
		}
	}
	writeLen := 0
	if n := len(marks); n > 0 && !f.cached[marks[n-1]] {
		writeLen = len(marks[n-1]) - readLen
		f.cached[marks[n-1]] = true
	}
	read, written = readLen/4, writeLen/4
	return max(0, total-read-written), read, written
}
