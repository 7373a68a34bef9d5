package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/debate-runner/runner/nodes/kit"
)

// reply scripts one response of the fake server. The same logical reply is
// served as JSON or as server-sent events, whichever the request asks for.
type reply struct {
	status  int               // 0 means 200
	header  map[string]string // extra response headers
	raw     string            // verbatim body; overrides everything below
	content string
	calls   []kit.ToolCall
	finish  string // "" means stop, or tool_calls when calls are given
	model   string // "" means "served-model"
	usage   [2]int // prompt, completion; zero means 11, 7
	hang    bool   // never answer; wait for the client to give up
	drop    bool   // close the connection without answering
	cut     bool   // streaming only: end the stream halfway, without finish_reason
}

// seen is what the fake server recorded about one request.
type seen struct {
	header http.Header
	path   string
	body   map[string]any
}

// fakeServer is a scripted OpenAI-compatible server on 127.0.0.1. Replies are
// consumed in order; the last one repeats.
type fakeServer struct {
	*httptest.Server
	t       testing.TB
	done    chan struct{}
	mu      sync.Mutex
	replies []reply
	reqs    []seen
}

func newServer(t testing.TB, replies ...reply) *fakeServer {
	t.Helper()
	s := &fakeServer{t: t, done: make(chan struct{}), replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(s.done) }) // runs first: frees hanging handlers
	return s
}

// base is the /v1 base URL clients are given.
func (s *fakeServer) base() string { return s.URL + "/v1" }

func (s *fakeServer) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.reqs...)
}

func (s *fakeServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

func (s *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		s.t.Errorf("server: request body is not JSON: %v", err)
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, seen{header: r.Header.Clone(), path: r.URL.Path, body: body})
	rep := reply{}
	if len(s.replies) > 0 {
		rep = s.replies[0]
		if len(s.replies) > 1 {
			s.replies = s.replies[1:]
		}
	}
	s.mu.Unlock()

	switch {
	case rep.hang:
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return
	case rep.drop:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			s.t.Errorf("server: hijack: %v", err)
			return
		}
		conn.Close()
		return
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	status := rep.status
	if status == 0 {
		status = http.StatusOK
	}
	if rep.raw != "" || status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, rep.raw)
		return
	}
	if stream, _ := body["stream"].(bool); stream {
		writeStream(w, rep)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, completionJSON(rep))
}

func (r reply) defaults() reply {
	if r.finish == "" {
		r.finish = "stop"
		if len(r.calls) > 0 {
			r.finish = "tool_calls"
		}
	}
	if r.model == "" {
		r.model = "served-model"
	}
	if r.usage == [2]int{} {
		r.usage = [2]int{11, 7}
	}
	return r
}

type jsonCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func usageJSON(u [2]int) map[string]int {
	return map[string]int{"prompt_tokens": u[0], "completion_tokens": u[1], "total_tokens": u[0] + u[1]}
}

func completionJSON(r reply) string {
	r = r.defaults()
	msg := map[string]any{"role": "assistant", "content": r.content}
	if len(r.calls) > 0 {
		calls := make([]jsonCall, len(r.calls))
		for i, c := range r.calls {
			calls[i].ID, calls[i].Type = c.ID, "function"
			calls[i].Function.Name, calls[i].Function.Arguments = c.Name, c.Arguments
		}
		msg["tool_calls"] = calls
	}
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": r.model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": r.finish}},
		"usage":   usageJSON(r.usage),
	})
	return string(b)
}

// writeStream serves r as OpenAI does: a role chunk, content in small
// pieces, tool calls with id and name first and their arguments in
// fragments interleaved across calls, a finish chunk, a usage chunk, [DONE].
func writeStream(w http.ResponseWriter, r reply) {
	r = r.defaults()
	w.Header().Set("Content-Type", "text/event-stream")
	var events []any
	chunk := func(delta map[string]any, finish any) {
		events = append(events, map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": r.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for rest := r.content; rest != ""; {
		n := min(3, len(rest))
		chunk(map[string]any{"content": rest[:n]}, nil)
		rest = rest[n:]
	}
	for i, c := range r.calls {
		var head jsonCall
		head.Index, head.ID, head.Type, head.Function.Name = &i, c.ID, "function", c.Name
		chunk(map[string]any{"tool_calls": []jsonCall{head}}, nil)
	}
	for part := range 2 {
		for i, c := range r.calls {
			half := len(c.Arguments) / 2
			frag := c.Arguments[:half]
			if part == 1 {
				frag = c.Arguments[half:]
			}
			var d jsonCall
			d.Index, d.Function.Arguments = &i, frag
			chunk(map[string]any{"tool_calls": []jsonCall{d}}, nil)
		}
	}
	if r.cut {
		events = events[:len(events)/2+1]
	} else {
		chunk(map[string]any{}, r.finish)
		events = append(events, map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": r.model,
			"choices": []any{}, "usage": usageJSON(r.usage),
		})
	}
	f, _ := w.(http.Flusher)
	for _, e := range events {
		b, _ := json.Marshal(e)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if f != nil {
			f.Flush()
		}
	}
	if !r.cut {
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

// sleeps records the waits Complete asks for without spending them.
type sleeps struct {
	mu sync.Mutex
	ds []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.ds = append(s.ds, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) get() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.ds...)
}
