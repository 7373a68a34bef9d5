package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/debate-runner/runner/nodes/kit"
)

const testKey = "sk-llmtest-fake"

func newClient(s *Server) *openai.Client {
	cfg := openai.DefaultConfig(testKey)
	cfg.BaseURL = s.URL
	return openai.NewClientWithConfig(cfg)
}

func userRequest(content string) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{
		Model:    "test-model",
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: content}},
	}
}

// streamResult is a stream reassembled the way a client would.
type streamResult struct {
	content       string
	contentChunks int
	finish        openai.FinishReason
	usage         *openai.Usage
	calls         []openai.ToolCall
	argPieces     []int
	model         string
}

func collectStream(stream *openai.ChatCompletionStream) (streamResult, error) {
	defer stream.Close()
	var res streamResult
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return res, nil
		}
		if err != nil {
			return res, err
		}
		res.model = chunk.Model
		if chunk.Usage != nil {
			res.usage = chunk.Usage
		}
		for _, ch := range chunk.Choices {
			if ch.Delta.Content != "" {
				res.content += ch.Delta.Content
				res.contentChunks++
			}
			if ch.FinishReason != "" {
				res.finish = ch.FinishReason
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index == nil {
					return res, fmt.Errorf("tool call delta without index: %+v", tc)
				}
				i := *tc.Index
				for len(res.calls) <= i {
					res.calls = append(res.calls, openai.ToolCall{})
					res.argPieces = append(res.argPieces, 0)
				}
				if tc.ID != "" {
					res.calls[i].ID = tc.ID
					res.calls[i].Type = tc.Type
				}
				res.calls[i].Function.Name += tc.Function.Name
				if tc.Function.Arguments != "" {
					res.calls[i].Function.Arguments += tc.Function.Arguments
					res.argPieces[i]++
				}
			}
		}
	}
}

func TestPlainCompletion(t *testing.T) {
	tests := []struct {
		name                 string
		reply                Reply
		wantPrompt, wantComp int // 0: only check it is positive
	}{
		{name: "default usage", reply: Reply{Content: "Hello there, debaters."}},
		{name: "explicit usage", reply: Reply{Content: "ok", PromptTokens: 120, CompletionTokens: 7}, wantPrompt: 120, wantComp: 7},
		{name: "explicit 200 status", reply: Reply{Content: "fine", Status: http.StatusOK}},
		{name: "custom finish reason", reply: Reply{Content: "cut", FinishReason: "length"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewQueue(t, tt.reply)
			resp, err := newClient(s).CreateChatCompletion(context.Background(), userRequest("Say hello"))
			if err != nil {
				t.Fatalf("CreateChatCompletion: %v", err)
			}
			if resp.Model != "test-model" || resp.Object != "chat.completion" || resp.ID == "" || resp.Created == 0 {
				t.Errorf("envelope = id %q object %q model %q created %d", resp.ID, resp.Object, resp.Model, resp.Created)
			}
			if len(resp.Choices) != 1 {
				t.Fatalf("got %d choices, want 1", len(resp.Choices))
			}
			msg := resp.Choices[0].Message
			if msg.Role != openai.ChatMessageRoleAssistant || msg.Content != tt.reply.Content {
				t.Errorf("message = %q/%q, want assistant/%q", msg.Role, msg.Content, tt.reply.Content)
			}
			wantFinish := tt.reply.FinishReason
			if wantFinish == "" {
				wantFinish = "stop"
			}
			if string(resp.Choices[0].FinishReason) != wantFinish {
				t.Errorf("finish_reason = %q, want %q", resp.Choices[0].FinishReason, wantFinish)
			}
			u := resp.Usage
			if u.PromptTokens <= 0 || u.CompletionTokens <= 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
				t.Errorf("usage = %+v, want positive counts adding up", u)
			}
			if tt.wantPrompt != 0 && (u.PromptTokens != tt.wantPrompt || u.CompletionTokens != tt.wantComp) {
				t.Errorf("usage = %+v, want prompt %d completion %d", u, tt.wantPrompt, tt.wantComp)
			}
		})
	}
}

func TestRequestIsRecordedInFull(t *testing.T) {
	s := NewQueue(t, Reply{Content: `{"ok":true}`})
	params := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)
	req := openai.ChatCompletionRequest{
		Model:               "judge-model",
		Temperature:         0.5,
		MaxCompletionTokens: 77,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: "You are a judge."},
			{Role: openai.ChatMessageRoleUser, Content: "Score this.", Name: "moderator"},
		},
		Tools: []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: "search_history", Description: "Search the debate", Parameters: params,
		}}},
		ResponseFormat: &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject},
	}
	if _, err := newClient(s).CreateChatCompletion(context.Background(), req); err != nil {
		t.Fatalf("CreateChatCompletion: %v", err)
	}
	got := s.Requests()
	if len(got) != 1 {
		t.Fatalf("recorded %d requests, want 1", len(got))
	}
	r := got[0]
	if r.N != 1 || r.Model != "judge-model" || r.MaxTokens != 77 || r.Stream || r.ResponseFormat != "json_object" {
		t.Errorf("recorded N=%d model=%q max=%d stream=%v format=%q", r.N, r.Model, r.MaxTokens, r.Stream, r.ResponseFormat)
	}
	if r.Temperature == nil || *r.Temperature != 0.5 {
		t.Errorf("temperature = %v, want 0.5", r.Temperature)
	}
	wantMsgs := []Message{
		{Role: "system", Content: "You are a judge."},
		{Role: "user", Content: "Score this.", Name: "moderator"},
	}
	if fmt.Sprint(r.Messages) != fmt.Sprint(wantMsgs) {
		t.Errorf("messages = %+v, want %+v", r.Messages, wantMsgs)
	}
	if len(r.Tools) != 1 || r.Tools[0].Name != "search_history" || r.Tools[0].Description != "Search the debate" ||
		string(r.Tools[0].Parameters) != string(params) {
		t.Errorf("tools = %+v", r.Tools)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization header not passed through as sent")
	}
	if !json.Valid(r.Body) || !strings.Contains(string(r.Body), `"judge-model"`) {
		t.Errorf("raw body not recorded: %s", r.Body)
	}
}

func TestStreamReassembly(t *testing.T) {
	tests := []struct {
		name         string
		content      string
		includeUsage bool
		minChunks    int
	}{
		{name: "words with usage", content: "The quick brown fox jumps over the lazy dog.", includeUsage: true, minChunks: 9},
		{name: "words without usage", content: "Proposal: use a queue.\nTradeoffs: latency.", minChunks: 5},
		{name: "unicode long word", content: "naïve-café-ünïcödé-straße-東京-überlänge", includeUsage: true, minChunks: 3},
		{name: "empty content", content: "", includeUsage: true, minChunks: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewQueue(t, Reply{Content: tt.content})
			req := userRequest("stream please")
			req.Stream = true
			if tt.includeUsage {
				req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
			}
			stream, err := newClient(s).CreateChatCompletionStream(context.Background(), req)
			if err != nil {
				t.Fatalf("CreateChatCompletionStream: %v", err)
			}
			res, err := collectStream(stream)
			if err != nil {
				t.Fatalf("reading stream: %v", err)
			}
			if res.content != tt.content {
				t.Errorf("reassembled %q, want %q", res.content, tt.content)
			}
			if res.contentChunks < tt.minChunks {
				t.Errorf("content came in %d chunks, want at least %d", res.contentChunks, tt.minChunks)
			}
			if res.finish != openai.FinishReasonStop || res.model != "test-model" {
				t.Errorf("finish = %q model = %q", res.finish, res.model)
			}
			if (res.usage != nil) != tt.includeUsage {
				t.Fatalf("usage chunk present = %v, want %v", res.usage != nil, tt.includeUsage)
			}
			if res.usage != nil && (res.usage.PromptTokens <= 0 || res.usage.TotalTokens != res.usage.PromptTokens+res.usage.CompletionTokens) {
				t.Errorf("usage = %+v", res.usage)
			}
			if r := s.Requests()[0]; !r.Stream || r.IncludeUsage != tt.includeUsage {
				t.Errorf("recorded stream=%v include_usage=%v", r.Stream, r.IncludeUsage)
			}
		})
	}
}

func TestStreamWireFormat(t *testing.T) {
	s := NewQueue(t, Reply{Content: "a b"})
	resp, err := http.Post(s.URL+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	events := strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n")
	// role, "a ", "b", finish, usage, [DONE]
	if len(events) != 6 || events[len(events)-1] != "data: [DONE]" {
		t.Fatalf("events = %q", events)
	}
	for _, ev := range events[:len(events)-1] {
		var chunk struct {
			Object  string            `json:"object"`
			Choices []json.RawMessage `json:"choices"`
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(ev, "data: ")), &chunk); err != nil || chunk.Object != "chat.completion.chunk" {
			t.Errorf("bad chunk %q: %v", ev, err)
		}
	}
	if !strings.Contains(events[4], `"choices":[]`) || !strings.Contains(events[4], `"total_tokens"`) {
		t.Errorf("usage chunk = %q, want empty choices and usage", events[4])
	}
}

func TestToolCallRoundTrip(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", streaming), func(t *testing.T) {
			s := NewQueue(t,
				Reply{ToolCalls: []kit.ToolCall{
					{Name: "search_history", Arguments: `{"query":"latency budget","limit":3}`},
					{ID: "call_fixed", Name: "read_file"},
				}},
				Reply{Content: "final answer"},
			)
			client := newClient(s)
			req := userRequest("Look things up")
			req.Tools = []openai.Tool{
				{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "search_history"}},
				{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "read_file"}},
			}
			ask := func(req openai.ChatCompletionRequest) (string, []openai.ToolCall, openai.FinishReason) {
				t.Helper()
				if !streaming {
					resp, err := client.CreateChatCompletion(context.Background(), req)
					if err != nil {
						t.Fatalf("CreateChatCompletion: %v", err)
					}
					c := resp.Choices[0]
					return c.Message.Content, c.Message.ToolCalls, c.FinishReason
				}
				req.Stream = true
				stream, err := client.CreateChatCompletionStream(context.Background(), req)
				if err != nil {
					t.Fatalf("CreateChatCompletionStream: %v", err)
				}
				res, err := collectStream(stream)
				if err != nil {
					t.Fatalf("reading stream: %v", err)
				}
				for i, n := range res.argPieces {
					if len(res.calls[i].Function.Arguments) > 6 && n < 2 {
						t.Errorf("tool call %d arguments came in %d piece(s), want several", i, n)
					}
				}
				return res.content, res.calls, res.finish
			}

			content, calls, finish := ask(req)
			if content != "" || finish != openai.FinishReasonToolCalls || len(calls) != 2 {
				t.Fatalf("first answer: content %q finish %q calls %+v", content, finish, calls)
			}
			want := []struct{ id, name, args string }{
				{"call_1_0", "search_history", `{"query":"latency budget","limit":3}`},
				{"call_fixed", "read_file", "{}"},
			}
			for i, w := range want {
				c := calls[i]
				if c.ID != w.id || c.Type != openai.ToolTypeFunction || c.Function.Name != w.name || c.Function.Arguments != w.args {
					t.Errorf("call %d = %+v, want %+v", i, c, w)
				}
			}

			req.Messages = append(req.Messages,
				openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, ToolCalls: calls},
				openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: calls[0].ID, Content: "3 hits"},
				openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: calls[1].ID, Content: "file body"},
			)
			content, calls, finish = ask(req)
			if content != "final answer" || finish != openai.FinishReasonStop || len(calls) != 0 {
				t.Errorf("second answer: content %q finish %q calls %+v", content, finish, calls)
			}

			got := s.Requests()[1].Messages
			if len(got) != 4 {
				t.Fatalf("second request has %d messages, want 4", len(got))
			}
			wantCalls := []kit.ToolCall{
				{ID: "call_1_0", Name: "search_history", Arguments: `{"query":"latency budget","limit":3}`},
				{ID: "call_fixed", Name: "read_file", Arguments: "{}"},
			}
			if got[1].Role != "assistant" || fmt.Sprint(got[1].ToolCalls) != fmt.Sprint(wantCalls) {
				t.Errorf("assistant message = %+v", got[1])
			}
			if got[2].Role != "tool" || got[2].ToolCallID != "call_1_0" || got[2].Content != "3 hits" ||
				got[3].ToolCallID != "call_fixed" || got[3].Content != "file body" {
				t.Errorf("tool messages = %+v, %+v", got[2], got[3])
			}
			if tools := s.Requests()[0].Tools; len(tools) != 2 || tools[1].Name != "read_file" {
				t.Errorf("recorded tools = %+v", tools)
			}
		})
	}
}

func TestRateLimitRawClient(t *testing.T) {
	s := NewQueue(t, Reply{Status: http.StatusTooManyRequests, RetryAfter: "0.05", ErrorMessage: "slow down"})
	resp, err := http.Post(s.URL+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "0.05" ||
		resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("status %d, Retry-After %q, Content-Type %q", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"))
	}
	var body struct {
		Error struct {
			Message, Type string
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("decoding error body: %v", err)
	}
	if body.Error.Message != "slow down" || body.Error.Type != "rate_limit_error" {
		t.Errorf("error body = %+v", body.Error)
	}
}

func TestErrorStatusesReachClientAsAPIError(t *testing.T) {
	tests := []struct {
		status  int
		message string
		want    string
	}{
		{http.StatusInternalServerError, "", "Internal Server Error"},
		{http.StatusTooManyRequests, "rate limited", "rate limited"},
		{http.StatusUnauthorized, "bad key", "bad key"},
		{http.StatusBadRequest, "context too long", "context too long"},
		{http.StatusServiceUnavailable, "", "Service Unavailable"},
	}
	for _, tt := range tests {
		for _, streaming := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/stream=%v", tt.status, streaming), func(t *testing.T) {
				s := NewQueue(t, Reply{Status: tt.status, ErrorMessage: tt.message})
				req := userRequest("hi")
				var err error
				if streaming {
					req.Stream = true
					var stream *openai.ChatCompletionStream
					stream, err = newClient(s).CreateChatCompletionStream(context.Background(), req)
					if err == nil {
						stream.Close()
					}
				} else {
					_, err = newClient(s).CreateChatCompletion(context.Background(), req)
				}
				var apiErr *openai.APIError
				if !errors.As(err, &apiErr) {
					t.Fatalf("error %v (%T) is not *openai.APIError", err, err)
				}
				if apiErr.HTTPStatusCode != tt.status || apiErr.Message != tt.want || apiErr.Type == "" {
					t.Errorf("APIError = status %d message %q type %q, want %d %q", apiErr.HTTPStatusCode, apiErr.Message, apiErr.Type, tt.status, tt.want)
				}
				if s.Count() != 1 {
					t.Errorf("failed request not recorded: count %d", s.Count())
				}
			})
		}
	}
}

func TestHangEndsWithClientDeadline(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", streaming), func(t *testing.T) {
			s := NewQueue(t, Reply{Hang: true})
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			var err error
			if streaming {
				req := userRequest("hi")
				req.Stream = true
				_, err = newClient(s).CreateChatCompletionStream(ctx, req)
			} else {
				_, err = newClient(s).CreateChatCompletion(ctx, userRequest("hi"))
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("error = %v, want context deadline exceeded", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("client waited %v, want about the 100ms deadline", d)
			}
		})
	}
}

func TestDelay(t *testing.T) {
	t.Run("answers after delay", func(t *testing.T) {
		s := NewQueue(t, Reply{Content: "late", Delay: 150 * time.Millisecond})
		start := time.Now()
		resp, err := newClient(s).CreateChatCompletion(context.Background(), userRequest("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 150*time.Millisecond || resp.Choices[0].Message.Content != "late" {
			t.Errorf("got %q after %v, want %q after at least 150ms", resp.Choices[0].Message.Content, d, "late")
		}
	})
	t.Run("client gives up first", func(t *testing.T) {
		s := NewQueue(t, Reply{Content: "too late", Delay: time.Minute})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := newClient(s).CreateChatCompletion(ctx, userRequest("hi")); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error = %v, want context deadline exceeded", err)
		}
	})
	t.Run("stalls between stream chunks", func(t *testing.T) {
		s := NewQueue(t, Reply{Content: "one two three", ChunkDelay: 200 * time.Millisecond})
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		req := userRequest("hi")
		req.Stream = true
		stream, err := newClient(s).CreateChatCompletionStream(ctx, req)
		if err != nil {
			t.Fatalf("stream should start before the stall: %v", err)
		}
		res, err := collectStream(stream)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error = %v, want context deadline exceeded mid-stream", err)
		}
		if res.content == "" || res.content == "one two three" {
			t.Errorf("got %q before the deadline, want part of the content", res.content)
		}
	})
}

func TestCloseReleasesHangingHandler(t *testing.T) {
	s := New(t, func(Request) Reply { return Reply{Hang: true} })
	errc := make(chan error, 1)
	go func() {
		resp, err := http.Post(s.URL+"/chat/completions", "application/json", strings.NewReader(`{"model":"m"}`))
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	for deadline := time.Now().Add(2 * time.Second); s.Count() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("request never arrived")
		}
	}
	start := time.Now()
	s.Close()
	s.Close() // idempotent
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v with a hanging handler", d)
	}
	select {
	case <-errc:
	case <-time.After(2 * time.Second):
		t.Error("client still blocked after Close")
	}
}

func TestRawBodyMalformed(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		isError func(error) bool
	}{
		{"truncated", `{"id":"x","choices":[{"message":`, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		{"not json", `<html>gateway</html>`, func(err error) bool {
			var se *json.SyntaxError
			return errors.As(err, &se)
		}},
		{"wrong types", `{"choices":"nope"}`, func(err error) bool {
			var te *json.UnmarshalTypeError
			return errors.As(err, &te)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewQueue(t, Reply{RawBody: tt.raw})
			_, err := newClient(s).CreateChatCompletion(context.Background(), userRequest("hi"))
			var apiErr *openai.APIError
			if err == nil || errors.As(err, &apiErr) || !tt.isError(err) {
				t.Errorf("error = %v (%T), want a decode error", err, err)
			}
		})
	}
	t.Run("stream", func(t *testing.T) {
		s := NewQueue(t, Reply{RawBody: "data: {\"id\":\"x\",\"choices\":[\n\n"})
		req := userRequest("hi")
		req.Stream = true
		stream, err := newClient(s).CreateChatCompletionStream(context.Background(), req)
		if err != nil {
			t.Fatalf("stream open: %v", err)
		}
		if _, err := collectStream(stream); err == nil {
			t.Error("malformed stream chunk decoded without error")
		}
	})
}

func TestDropIsConnectionError(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", streaming), func(t *testing.T) {
			s := NewQueue(t, Reply{Drop: true}, Reply{Content: "after drop"})
			client := newClient(s)
			req := userRequest("hi")
			var err error
			if streaming {
				req.Stream = true
				_, err = client.CreateChatCompletionStream(context.Background(), req)
			} else {
				_, err = client.CreateChatCompletion(context.Background(), req)
			}
			var urlErr *url.Error
			var apiErr *openai.APIError
			var reqErr *openai.RequestError
			if !errors.As(err, &urlErr) || errors.As(err, &apiErr) || errors.As(err, &reqErr) {
				t.Fatalf("error = %v (%T), want a transport *url.Error", err, err)
			}
			// The server keeps serving after a drop.
			resp, err := client.CreateChatCompletion(context.Background(), userRequest("again"))
			if err != nil || resp.Choices[0].Message.Content != "after drop" {
				t.Errorf("next request: %v", err)
			}
			if s.Count() != 2 {
				t.Errorf("count = %d, want 2 (dropped request recorded)", s.Count())
			}
		})
	}
}

func TestRoutingAndBadRequests(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		wantStatus               int
		wantRecorded             bool
	}{
		{"wrong path", http.MethodPost, "/v1/completions", `{}`, http.StatusNotFound, false},
		{"no v1 prefix", http.MethodPost, "/chat/completions", `{}`, http.StatusNotFound, false},
		{"wrong method", http.MethodGet, "/v1/chat/completions", ``, http.StatusMethodNotAllowed, false},
		{"invalid json", http.MethodPost, "/v1/chat/completions", `{"model":`, http.StatusBadRequest, true},
		{"wrong field type", http.MethodPost, "/v1/chat/completions", `{"model":5}`, http.StatusBadRequest, true},
		{"bad content type", http.MethodPost, "/v1/chat/completions", `{"messages":[{"role":"user","content":5}]}`, http.StatusBadRequest, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(t, Echo())
			base := strings.TrimSuffix(s.URL, "/v1")
			req, err := http.NewRequest(tt.method, base+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Error *struct {
					Message, Type string
				}
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("error body is not JSON: %v", err)
			}
			if resp.StatusCode != tt.wantStatus || body.Error == nil || body.Error.Message == "" || body.Error.Type != "invalid_request_error" {
				t.Errorf("status %d body %+v, want %d with an invalid_request_error", resp.StatusCode, body.Error, tt.wantStatus)
			}
			if tt.wantStatus == http.StatusMethodNotAllowed && resp.Header.Get("Allow") != http.MethodPost {
				t.Errorf("Allow = %q", resp.Header.Get("Allow"))
			}
			if recorded := s.Count() == 1; recorded != tt.wantRecorded {
				t.Errorf("recorded = %v, want %v", recorded, tt.wantRecorded)
			}
			if tt.wantRecorded && string(s.Requests()[0].Body) != tt.body {
				t.Errorf("recorded body %q, want %q", s.Requests()[0].Body, tt.body)
			}
		})
	}
}

func TestParseRequestVariants(t *testing.T) {
	zero := 0.0
	tests := []struct {
		name string
		body string
		want Request
	}{
		{
			name: "content parts flattened",
			body: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"b"}]}]}`,
			want: Request{Model: "m", Messages: []Message{{Role: "user", Content: "ab"}}},
		},
		{
			name: "null content and explicit zero temperature",
			body: `{"model":"m","temperature":0,"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`,
			want: Request{Model: "m", Temperature: &zero, Messages: []Message{{Role: "assistant", ToolCalls: []kit.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}}}},
		},
		{
			name: "max_completion_tokens and json_schema",
			body: `{"model":"m","max_completion_tokens":42,"response_format":{"type":"json_schema","json_schema":{"name":"x"}},"messages":[]}`,
			want: Request{Model: "m", MaxTokens: 42, ResponseFormat: "json_schema"},
		},
		{
			name: "max_tokens wins",
			body: `{"model":"m","max_tokens":10,"max_completion_tokens":42}`,
			want: Request{Model: "m", MaxTokens: 10},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseRequest([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%+v", deref(got)) != fmt.Sprintf("%+v", deref(tt.want)) {
				t.Errorf("got  %+v\nwant %+v", deref(got), deref(tt.want))
			}
		})
	}
}

// deref replaces the temperature pointer by its value so requests compare by
// content in %+v output.
func deref(r Request) any {
	type flat struct {
		Request
		Temp string
	}
	f := flat{Request: r, Temp: "nil"}
	if r.Temperature != nil {
		f.Temp = fmt.Sprint(*r.Temperature)
	}
	f.Temperature = nil
	return f
}

func TestConcurrentRequests(t *testing.T) {
	const n = 50
	s := New(t, Echo())
	client := newClient(s)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			msg := fmt.Sprintf("message-%d", i)
			req := userRequest(msg)
			var got string
			if i%2 == 0 {
				resp, err := client.CreateChatCompletion(context.Background(), req)
				if err != nil {
					errs <- err
					return
				}
				got = resp.Choices[0].Message.Content
			} else {
				req.Stream = true
				stream, err := client.CreateChatCompletionStream(context.Background(), req)
				if err != nil {
					errs <- err
					return
				}
				res, err := collectStream(stream)
				if err != nil {
					errs <- err
					return
				}
				got = res.content
			}
			if got != "echo: "+msg {
				errs <- fmt.Errorf("request %d got %q", i, got)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	reqs := s.Requests()
	if len(reqs) != n || s.Count() != n {
		t.Fatalf("recorded %d (count %d), want %d", len(reqs), s.Count(), n)
	}
	seen := map[string]bool{}
	for i, r := range reqs {
		if r.N != i+1 {
			t.Errorf("request at %d has N %d", i, r.N)
		}
		seen[r.LastUser()] = true
	}
	if len(seen) != n {
		t.Errorf("recorded %d distinct messages, want %d", len(seen), n)
	}
}

func TestRequestsOrderHeadersAndCopy(t *testing.T) {
	s := New(t, Echo())
	client := newClient(s)
	for _, msg := range []string{"first", "second"} {
		if _, err := client.CreateChatCompletion(context.Background(), userRequest(msg)); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := http.NewRequest(http.MethodPost, s.URL+"/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"third"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	raw.Header.Set("X-Debate-Run", "run-7")
	resp, err := http.DefaultClient.Do(raw)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	reqs := s.Requests()
	for i, want := range []string{"first", "second", "third"} {
		if reqs[i].N != i+1 || reqs[i].LastUser() != want {
			t.Errorf("request %d: N %d message %q, want %d %q", i, reqs[i].N, reqs[i].LastUser(), i+1, want)
		}
	}
	if reqs[0].Header.Get("Authorization") != "Bearer "+testKey || reqs[2].Header.Get("Authorization") != "" {
		t.Error("Authorization header recorded wrongly")
	}
	if reqs[2].Header.Get("X-Debate-Run") != "run-7" {
		t.Errorf("custom header = %q", reqs[2].Header.Get("X-Debate-Run"))
	}

	reqs[0].Messages[0].Content = "mutated"
	reqs[0].Header.Set("Authorization", "mutated")
	reqs[0].Body[0] = 'X'
	if again := s.Requests()[0]; again.LastUser() != "first" || again.Header.Get("Authorization") == "mutated" || again.Body[0] != '{' {
		t.Error("Requests() shares memory with the server's record")
	}
}

func TestSetHandler(t *testing.T) {
	s := New(t, Echo())
	client := newClient(s)
	ask := func() string {
		t.Helper()
		resp, err := client.CreateChatCompletion(context.Background(), userRequest("hi"))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Choices[0].Message.Content
	}
	if got := ask(); got != "echo: hi" {
		t.Errorf("before swap: %q", got)
	}
	s.SetHandler(Sequence(Reply{Content: "swapped"}))
	if got := ask(); got != "swapped" {
		t.Errorf("after swap: %q", got)
	}
	if s.Requests()[1].N != 2 {
		t.Error("N restarted after SetHandler; it counts over the server's life")
	}
}

func TestSplitText(t *testing.T) {
	tests := []struct {
		in   string
		size int
		want []string
	}{
		{"", 12, nil},
		{"one", 12, []string{"one"}},
		{"one two  three", 12, []string{"one ", "two  ", "three"}},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"ünï cödé", 2, []string{"ün", "ï ", "cö", "dé"}},
		{"\nlead", 12, []string{"\n", "lead"}},
	}
	for _, tt := range tests {
		got := splitText(tt.in, tt.size)
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tt.want) {
			t.Errorf("splitText(%q, %d) = %q, want %q", tt.in, tt.size, got, tt.want)
		}
		for _, p := range got {
			if !utf8.ValidString(p) {
				t.Errorf("piece %q splits a rune", p)
			}
		}
	}
}
