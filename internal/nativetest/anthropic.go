package nativetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// The anthropic server speaks Anthropic's Messages API as its
// documentation describes it: POST /v1/messages with x-api-key and
// anthropic-version, a Message or an event stream in reply, errors as
// {"type": "error", "error": {"type", "message"}} with their statuses
// (400 invalid_request_error, 401 authentication_error, 429
// rate_limit_error with retry-after, 500 api_error, 529
// overloaded_error), and prompt caching: a request's prefix up to a block
// marked cache_control is written to the cache, and read back by a later
// request that starts with the same bytes.

func anthropicError(w http.ResponseWriter, status int, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req_fake")
	if status == http.StatusTooManyRequests || status == 529 {
		w.Header().Set("retry-after", "1")
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q},"request_id":"req_fake"}`, kind, msg)
}

var anthropicErrors = map[int]string{400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}

func (f *Server) anthropic(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		anthropicError(w, 404, "not_found_error", "Not found: "+r.Method+" "+r.URL.Path)
		return
	}
	if r.Header.Get("x-api-key") != f.key {
		anthropicError(w, 401, "authentication_error", "invalid x-api-key")
		return
	}
	if r.Header.Get("anthropic-version") == "" {
		anthropicError(w, 400, "invalid_request_error", "anthropic-version: header is required")
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req Request
	req.Body, req.Header = body, r.Header.Clone()
	if err := json.Unmarshal(body, &req.Params); err != nil {
		anthropicError(w, 400, "invalid_request_error", "invalid JSON: "+err.Error())
		return
	}
	req.Model, req.Stream = req.Params.Model, req.Params.Stream
	switch {
	case req.Params.Model == "":
		anthropicError(w, 400, "invalid_request_error", "model: Field required")
		return
	case req.Params.MaxTokens <= 0:
		anthropicError(w, 400, "invalid_request_error", "max_tokens: Field required")
		return
	case len(req.Params.Messages) == 0:
		anthropicError(w, 400, "invalid_request_error", "messages: at least one message is required")
		return
	}
	for i, m := range req.Params.Messages {
		if m.Role != "user" && m.Role != "assistant" && m.Role != "system" {
			anthropicError(w, 400, "invalid_request_error", fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i))
			return
		}
		if i > 0 && m.Role == req.Params.Messages[i-1].Role && m.Role != "system" {
			anthropicError(w, 400, "invalid_request_error", fmt.Sprintf("messages.%d: roles must alternate between \"user\" and \"assistant\"", i))
			return
		}
	}
	if status, hang := f.log(&req); hang {
		<-r.Context().Done()
		return
	} else if status != 0 {
		anthropicError(w, status, anthropicErrors[status], "the fake's injected "+anthropicErrors[status])
		return
	}
	rep := f.Reply(req)
	usage := rep.Usage
	if usage == "" {
		in, read, written := f.anthropicCache(req)
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
	f.anthropicStream(w, req, rep, stop, usage)
}

// stream answers as Anthropic's event stream does: message_start with the
// input usage, a ping, each block's start, deltas and stop, message_delta
// with the stop reason and the output tokens, message_stop.
func (f *Server) anthropicStream(w http.ResponseWriter, req Request, rep Reply, stop, usage string) {
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

// cache counts a request's input tokens (a token per four bytes of its
// blocks as sent) as Anthropic reports them: tokens up to the last
// breakpoint whose prefix is cached are read; the prefix up to the last
// breakpoint is written when not; the rest is input_tokens.
func (f *Server) anthropicCache(req Request) (input, read, written int) {
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
