package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/debate-runner/runner/nodes/kit"
)

const testKey = "sk-test-0123456789abcdef"

func ptr[T any](v T) *T { return &v }

// endpoint is a test endpoint for s with instant, recorded sleeps and no jitter.
func endpoint(s *fakeServer, sl *sleeps) Endpoint {
	return Endpoint{
		Name:        "test",
		BaseURL:     s.base(),
		APIKey:      testKey,
		MaxRetries:  4,
		BackoffBase: 100 * time.Millisecond,
		BackoffMax:  time.Second,
		Timeout:     5 * time.Second,
		Sleep:       sl.sleep,
		Rand:        func() float64 { return 0 },
	}
}

func simple(model string) Request {
	return Request{Model: model, Messages: []Message{{Role: "user", Content: "hello"}}}
}

// asError returns err as *Error or fails the test.
func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not *llm.Error", err, err)
	}
	return e
}

func TestCompleteSuccessSendsRequest(t *testing.T) {
	s := newServer(t, reply{content: "Hi there", calls: []kit.ToolCall{{ID: "call_1", Name: "search", Arguments: `{"q":"x"}`}}})
	var sl sleeps
	ep := endpoint(s, &sl)
	ep.Headers = map[string]string{"HTTP-Referer": "https://example.test", "X-Title": "runner"}
	c := New(ep)
	req := Request{
		Model: "gpt-4o-mini",
		Messages: []Message{
			{Role: "system", Content: "Be brief."},
			{Role: "user", Content: "Search for x.", Name: "alice"},
			{Role: "assistant", ToolCalls: []kit.ToolCall{{ID: "call_0", Name: "search", Arguments: `{"q":"y"}`}}},
			{Role: "tool", ToolCallID: "call_0", Content: "nothing"},
		},
		Temperature: ptr(0.0),
		TopP:        ptr(0.5),
		MaxTokens:   100,
		Seed:        ptr(42),
		Tools:       []Tool{{Name: "search", Description: "Search.", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}, {Name: "noargs"}},
		JSON:        &JSONReply{},
	}
	resp, err := c.Complete(context.Background(), req, nil)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := Response{
		Content: "Hi there", ToolCalls: []kit.ToolCall{{ID: "call_1", Name: "search", Arguments: `{"q":"x"}`}},
		FinishReason: "tool_calls", Model: "served-model", PromptTokens: 11, CompletionTokens: 7, Attempts: 1,
	}
	if resp.Latency <= 0 {
		t.Errorf("Latency = %v, want > 0", resp.Latency)
	}
	resp.Latency = 0
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("response\n got %+v\nwant %+v", resp, want)
	}

	reqs := s.requests()
	if len(reqs) != 1 {
		t.Fatalf("server saw %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.path != "/v1/chat/completions" {
		t.Errorf("path = %q", r.path)
	}
	if got := r.header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want Bearer key", got)
	}
	if got := r.header.Get("HTTP-Referer"); got != "https://example.test" {
		t.Errorf("HTTP-Referer = %q", got)
	}
	b := r.body
	if b["model"] != "gpt-4o-mini" || b["max_tokens"] != 100.0 || b["seed"] != 42.0 || b["top_p"] != 0.5 {
		t.Errorf("model/max_tokens/seed/top_p wrong in %v", b)
	}
	// An explicit temperature 0 must reach the server, not be dropped.
	if temp, ok := b["temperature"].(float64); !ok || temp > 1e-30 {
		t.Errorf("temperature = %v (present %v), want ~0", b["temperature"], ok)
	}
	if rf, _ := b["response_format"].(map[string]any); rf["type"] != "json_object" {
		t.Errorf("response_format = %v", b["response_format"])
	}
	msgs, _ := b["messages"].([]any)
	if len(msgs) != 4 {
		t.Fatalf("messages = %v", b["messages"])
	}
	user := msgs[1].(map[string]any)
	if user["name"] != "alice" || user["content"] != "Search for x." {
		t.Errorf("user message = %v", user)
	}
	asst := msgs[2].(map[string]any)
	calls, _ := asst["tool_calls"].([]any)
	if len(calls) != 1 || calls[0].(map[string]any)["id"] != "call_0" {
		t.Errorf("assistant tool_calls = %v", asst["tool_calls"])
	}
	if msgs[3].(map[string]any)["tool_call_id"] != "call_0" {
		t.Errorf("tool message = %v", msgs[3])
	}
	tools, _ := b["tools"].([]any)
	if len(tools) != 2 {
		t.Fatalf("tools = %v", b["tools"])
	}
	fn := tools[1].(map[string]any)["function"].(map[string]any)
	if params, _ := fn["parameters"].(map[string]any); params["type"] != "object" {
		t.Errorf("tool without schema sent parameters %v, want an empty object schema", fn["parameters"])
	}
	if _, ok := b["stream_options"]; ok {
		t.Errorf("stream_options sent on a non-streaming request")
	}
	if len(sl.get()) != 0 {
		t.Errorf("slept %v on success", sl.get())
	}
}

func TestRequestOptionsOmittedWhenUnset(t *testing.T) {
	s := newServer(t, reply{content: "ok"})
	var sl sleeps
	if _, err := New(endpoint(s, &sl)).Complete(context.Background(), simple("m"), nil); err != nil {
		t.Fatal(err)
	}
	b := s.requests()[0].body
	for _, k := range []string{"temperature", "top_p", "max_tokens", "seed", "tools", "response_format"} {
		if _, ok := b[k]; ok {
			t.Errorf("%s sent although unset: %v", k, b[k])
		}
	}
}

func TestReasoningModelUsesMaxCompletionTokens(t *testing.T) {
	tests := []struct {
		model     string
		wantField string
	}{
		{"gpt-4o", "max_tokens"},
		{"o3-mini", "max_completion_tokens"},
		{"gpt-5-mini", "max_completion_tokens"},
		{"openrouter/some-model", "max_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			s := newServer(t, reply{content: "ok"})
			var sl sleeps
			req := simple(tt.model)
			req.MaxTokens = 64
			if _, err := New(endpoint(s, &sl)).Complete(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			b := s.requests()[0].body
			if b[tt.wantField] != 64.0 {
				t.Errorf("%s = %v, want 64 (body %v)", tt.wantField, b[tt.wantField], b)
			}
			other := map[string]string{"max_tokens": "max_completion_tokens", "max_completion_tokens": "max_tokens"}[tt.wantField]
			if _, ok := b[other]; ok {
				t.Errorf("%s also sent", other)
			}
		})
	}
}

func TestEmptyKeySendsNoAuthorization(t *testing.T) {
	s := newServer(t, reply{content: "ok"})
	var sl sleeps
	ep := endpoint(s, &sl)
	ep.APIKey = ""
	if _, err := New(ep).Complete(context.Background(), simple("llama3"), nil); err != nil {
		t.Fatal(err)
	}
	if h, ok := s.requests()[0].header["Authorization"]; ok {
		t.Errorf("Authorization header sent with empty key: %q", h)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	future := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name     string
		status   int
		header   map[string]string
		jitter   float64
		min, max time.Duration
	}{
		{"seconds", 429, map[string]string{"Retry-After": "2"}, 0, 2 * time.Second, 2 * time.Second},
		{"fractional", 429, map[string]string{"Retry-After": "1.5"}, 0, 1500 * time.Millisecond, 1500 * time.Millisecond},
		{"milliseconds header", 429, map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 0, 250 * time.Millisecond, 250 * time.Millisecond},
		{"http date", 429, map[string]string{"Retry-After": future}, 0, 28 * time.Second, 30 * time.Second},
		{"on 503", 503, map[string]string{"Retry-After": "3"}, 0, 3 * time.Second, 3 * time.Second},
		// Backoff ceiling is 100ms for the first retry; full jitter 0.5 gives 50ms.
		{"backoff longer than retry-after", 429, map[string]string{"Retry-After": "0.01"}, 0.5, 50 * time.Millisecond, 50 * time.Millisecond},
		{"no header uses backoff", 429, nil, 0.5, 50 * time.Millisecond, 50 * time.Millisecond},
		{"garbage header uses backoff", 429, map[string]string{"Retry-After": "soon"}, 0.5, 50 * time.Millisecond, 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, reply{status: tt.status, header: tt.header, raw: `{"error":{"message":"slow down","type":"rate_limit"}}`}, reply{content: "ok"})
			var sl sleeps
			ep := endpoint(s, &sl)
			ep.Rand = func() float64 { return tt.jitter }
			var attempts []Attempt
			resp, err := New(ep).Complete(context.Background(), simple("m"), func(a Attempt) { attempts = append(attempts, a) })
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if resp.Attempts != 2 || resp.Content != "ok" {
				t.Errorf("Attempts = %d, Content = %q", resp.Attempts, resp.Content)
			}
			ds := sl.get()
			if len(ds) != 1 || ds[0] < tt.min || ds[0] > tt.max {
				t.Fatalf("slept %v, want one wait in [%v, %v]", ds, tt.min, tt.max)
			}
			if len(attempts) != 1 {
				t.Fatalf("onRetry called %d times, want 1", len(attempts))
			}
			a := attempts[0]
			if a.N != 1 || a.Status != tt.status || !a.Retryable || a.Wait != ds[0] || a.Err == nil {
				t.Errorf("attempt = %+v, want N 1, status %d, retryable, wait %v", a, tt.status, ds[0])
			}
		})
	}
}

func TestRetryableStatuses(t *testing.T) {
	for _, status := range []int{408, 409, 425, 429, 500, 502, 503, 504} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			s := newServer(t, reply{status: status, raw: `{"error":{"message":"try again"}}`}, reply{content: "fine"})
			var sl sleeps
			resp, err := New(endpoint(s, &sl)).Complete(context.Background(), simple("m"), nil)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if resp.Attempts != 2 || s.count() != 2 || resp.Content != "fine" {
				t.Errorf("Attempts = %d, server saw %d, content %q", resp.Attempts, s.count(), resp.Content)
			}
		})
	}
}

func TestNonRetryableStatusFailsImmediately(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 422} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			s := newServer(t, reply{status: status, raw: `{"error":{"message":"bad request","type":"invalid_request_error"}}`})
			var sl sleeps
			called := false
			_, err := New(endpoint(s, &sl)).Complete(context.Background(), simple("gpt-x"), func(Attempt) { called = true })
			e := asError(t, err)
			if e.Attempts != 1 || e.Status != status || e.Retryable || e.Endpoint != "test" || e.Model != "gpt-x" {
				t.Errorf("error = %+v", e)
			}
			if s.count() != 1 || called || len(sl.get()) != 0 {
				t.Errorf("server saw %d requests, onRetry called %v, slept %v; want one request and no retry", s.count(), called, sl.get())
			}
			msg := e.Error()
			for _, want := range []string{`"test"`, `"gpt-x"`, fmt.Sprint(status), "bad request", "not retryable"} {
				if !strings.Contains(msg, want) {
					t.Errorf("Error() = %q, missing %q", msg, want)
				}
			}
		})
	}
}

func TestRetryBudgetExhausted(t *testing.T) {
	tests := []struct {
		retries int
		wantN   int
	}{{0, 1}, {2, 3}, {-1, 1}}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.retries), func(t *testing.T) {
			s := newServer(t, reply{status: 503, raw: `{"error":{"message":"overloaded"}}`})
			var sl sleeps
			ep := endpoint(s, &sl)
			ep.MaxRetries = tt.retries
			ep.Rand = func() float64 { return 0.999999 }
			var ns []int
			_, err := New(ep).Complete(context.Background(), simple("m"), func(a Attempt) { ns = append(ns, a.N) })
			e := asError(t, err)
			if e.Attempts != tt.wantN || !e.Retryable || e.Status != 503 || s.count() != tt.wantN {
				t.Errorf("error %+v, server saw %d; want %d attempts, retryable, 503", e, s.count(), tt.wantN)
			}
			if len(ns) != tt.wantN-1 || len(sl.get()) != tt.wantN-1 {
				t.Errorf("onRetry %v, sleeps %v; want %d each", ns, sl.get(), tt.wantN-1)
			}
			// Exponential: ~100ms then ~200ms.
			for i, d := range sl.get() {
				ceil := 100 * time.Millisecond << i
				if d < ceil*99/100 || d > ceil {
					t.Errorf("wait %d = %v, want just under %v", i+1, d, ceil)
				}
			}
			if !strings.Contains(e.Error(), "gave up after") && tt.wantN > 1 {
				t.Errorf("Error() = %q", e.Error())
			}
		})
	}
}

func TestTransientFailuresRetried(t *testing.T) {
	tests := []struct {
		name   string
		first  reply
		stream bool
	}{
		{"malformed json", reply{raw: `{"id": "x", "choices": [`}, false},
		{"not json", reply{raw: `<html>gateway</html>`}, false},
		{"no choices", reply{raw: `{"id":"x","object":"chat.completion","choices":[]}`}, false},
		{"connection drop", reply{drop: true}, false},
		{"connection drop streaming", reply{drop: true}, true},
		{"stream cut before finish", reply{content: "partial answer that is cut", cut: true}, true},
		{"stream error event", reply{raw: "data: {\"error\":{\"message\":\"upstream overloaded\"}}\n\n"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.first, reply{content: "recovered"})
			var sl sleeps
			var attempts []Attempt
			req := simple("m")
			req.Stream = tt.stream
			resp, err := New(endpoint(s, &sl)).Complete(context.Background(), req, func(a Attempt) { attempts = append(attempts, a) })
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if resp.Content != "recovered" || resp.Attempts != 2 {
				t.Errorf("Content %q, Attempts %d", resp.Content, resp.Attempts)
			}
			if len(attempts) != 1 || !attempts[0].Retryable || attempts[0].Err == nil {
				t.Errorf("onRetry got %+v", attempts)
			}
		})
	}
}

func TestAttemptTimeoutRetried(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			s := newServer(t, reply{hang: true}, reply{content: "late but fine"})
			var sl sleeps
			ep := endpoint(s, &sl)
			ep.Timeout = 100 * time.Millisecond
			var attempts []Attempt
			req := simple("m")
			req.Stream = stream
			resp, err := New(ep).Complete(context.Background(), req, func(a Attempt) { attempts = append(attempts, a) })
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if resp.Attempts != 2 || resp.Content != "late but fine" {
				t.Errorf("Attempts %d, Content %q", resp.Attempts, resp.Content)
			}
			if len(attempts) != 1 || !errors.Is(attempts[0].Err, context.DeadlineExceeded) || attempts[0].Status != 0 {
				t.Errorf("onRetry got %+v, want one timeout without status", attempts)
			}
		})
	}
}

func TestParentCancelStopsImmediately(t *testing.T) {
	t.Run("during request", func(t *testing.T) {
		s := newServer(t, reply{hang: true})
		var sl sleeps
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		called := false
		start := time.Now()
		_, err := New(endpoint(s, &sl)).Complete(ctx, simple("m"), func(Attempt) { called = true })
		if time.Since(start) > 3*time.Second {
			t.Errorf("cancel took %v", time.Since(start))
		}
		e := asError(t, err)
		if !errors.Is(err, context.Canceled) || e.Retryable || e.Attempts != 1 || called || s.count() != 1 {
			t.Errorf("error %+v (called %v, server %d); want cancelled after one attempt, no retry", e, called, s.count())
		}
	})
	t.Run("during backoff", func(t *testing.T) {
		s := newServer(t, reply{status: 500, raw: `{"error":{"message":"boom"}}`})
		var sl sleeps
		ep := endpoint(s, &sl)
		ep.Sleep = nil // real timer
		ep.BackoffBase, ep.BackoffMax = time.Hour, time.Hour
		ep.Rand = func() float64 { return 0.5 }
		ctx, cancel := context.WithCancel(context.Background())
		_, err := New(ep).Complete(ctx, simple("m"), func(Attempt) { time.AfterFunc(20*time.Millisecond, cancel) })
		e := asError(t, err)
		if !errors.Is(err, context.Canceled) || e.Retryable || e.Attempts != 1 || e.Status != 500 || s.count() != 1 {
			t.Errorf("error %+v, server %d", e, s.count())
		}
	})
	t.Run("before start", func(t *testing.T) {
		s := newServer(t, reply{content: "x"})
		var sl sleeps
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := New(endpoint(s, &sl)).Complete(ctx, simple("m"), nil)
		e := asError(t, err)
		if !errors.Is(err, context.Canceled) || e.Attempts != 0 || s.count() != 0 {
			t.Errorf("error %+v, server %d", e, s.count())
		}
	})
}

func TestAPIKeyNeverInErrors(t *testing.T) {
	s := newServer(t, reply{status: 401, raw: `{"error":{"message":"Incorrect API key provided: ` + testKey + `","type":"invalid_request_error"}}`})
	var sl sleeps
	_, err := New(endpoint(s, &sl)).Complete(context.Background(), simple("m"), nil)
	e := asError(t, err)
	if got := s.requests()[0].header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got)
	}
	for _, text := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", e.Err)} {
		if strings.Contains(text, testKey) {
			t.Errorf("key leaked: %s", text)
		}
	}
	if !strings.Contains(err.Error(), "[REDACTED]") || e.Status != 401 || e.Retryable {
		t.Errorf("error = %v (%+v)", err, e)
	}
}

func TestEndpointFormattingHidesKey(t *testing.T) {
	ep := Endpoint{Name: "x", BaseURL: "https://api.example/v1", APIKey: testKey}
	for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(f, ep)
		if strings.Contains(out, testKey) || !strings.Contains(out, "APIKey:set") {
			t.Errorf("%s = %s", f, out)
		}
	}
	b, err := json.Marshal(ep)
	if err != nil || strings.Contains(string(b), testKey) {
		t.Errorf("json = %s, %v", b, err)
	}
}

func TestInvalidBaseURL(t *testing.T) {
	for _, u := range []string{"", "api.openai.com/v1", "ftp://host/v1", "http://[::1"} {
		t.Run(u, func(t *testing.T) {
			_, err := New(Endpoint{Name: "bad", BaseURL: u}).Complete(context.Background(), simple("m"), nil)
			e := asError(t, err)
			if e.Attempts != 0 || e.Retryable {
				t.Errorf("error %+v", e)
			}
		})
	}
}

func TestUnknownHostNotRetried(t *testing.T) {
	// The dialer fails the way a lookup of a mistyped host does, without
	// asking any resolver.
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: "api.opnai.com", IsNotFound: true}}
	}}
	var sl sleeps
	c := New(Endpoint{Name: "typo", BaseURL: "http://api.opnai.com/v1", MaxRetries: 3, Sleep: sl.sleep, HTTPClient: &http.Client{Transport: tr}})
	_, err := c.Complete(context.Background(), simple("m"), nil)
	e := asError(t, err)
	if e.Attempts != 1 || e.Retryable || len(sl.get()) != 0 {
		t.Errorf("error %+v, sleeps %v; want one attempt, not retried", e, sl.get())
	}
}

func TestConnectionRefusedRetried(t *testing.T) {
	s := newServer(t)
	dead := s.base()
	s.Close() // nothing listens there any more
	var sl sleeps
	ep := endpoint(s, &sl)
	ep.BaseURL = dead
	ep.MaxRetries = 2
	_, err := New(ep).Complete(context.Background(), simple("m"), nil)
	e := asError(t, err)
	if e.Attempts != 3 || !e.Retryable || e.Status != 0 {
		t.Errorf("error %+v; want 3 retryable attempts", e)
	}
}

func TestStreamReassembly(t *testing.T) {
	tests := []struct {
		name string
		rep  reply
	}{
		{"content", reply{content: "The quick brown fox jumps over the lazy dog.", usage: [2]int{120, 30}}},
		{"tool calls", reply{content: "", calls: []kit.ToolCall{
			{ID: "call_a", Name: "search_history", Arguments: `{"query":"latency budget","limit":5}`},
			{ID: "call_b", Name: "read_file", Arguments: `{"path":"docs/design.md"}`},
		}}},
		{"content and tool call", reply{content: "Let me check.", calls: []kit.ToolCall{{ID: "c1", Name: "f", Arguments: `{"a":[1,2,3]}`}}, finish: "tool_calls"}},
		{"length", reply{content: "truncated by max_tokens", finish: "length", model: "other-model"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.rep)
			var sl sleeps
			c := New(endpoint(s, &sl))
			plain, err := c.Complete(context.Background(), simple("m"), nil)
			if err != nil {
				t.Fatalf("non-stream: %v", err)
			}
			req := simple("m")
			req.Stream = true
			var deltas []string
			req.OnDelta = func(d string) { deltas = append(deltas, d) }
			streamed, err := c.Complete(context.Background(), req, nil)
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			plain.Latency, streamed.Latency = 0, 0
			if !reflect.DeepEqual(plain, streamed) {
				t.Errorf("stream and non-stream differ\nstream %+v\nplain  %+v", streamed, plain)
			}
			if strings.Join(deltas, "") != tt.rep.content {
				t.Errorf("deltas %q do not add up to %q", deltas, tt.rep.content)
			}
			if tt.rep.content != "" && len(deltas) < 2 {
				t.Errorf("got %d deltas, want the content in pieces", len(deltas))
			}
			b := s.requests()[1].body
			if b["stream"] != true {
				t.Errorf("stream = %v", b["stream"])
			}
			if so, _ := b["stream_options"].(map[string]any); so["include_usage"] != true {
				t.Errorf("stream_options = %v", b["stream_options"])
			}
		})
	}
}

func TestMergeCallDeltaWithoutIndex(t *testing.T) {
	// Some servers send tool calls without an index: matched by id, or
	// else continuing the latest call.
	resp := runStream(t, []string{
		`{"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":"}}]}}]}`,
		`{"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}`,
		`{"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]}}]}`,
		`{"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
	})
	want := []kit.ToolCall{{ID: "a", Name: "f", Arguments: `{"x":1}`}, {ID: "b", Name: "g", Arguments: "{}"}}
	if !reflect.DeepEqual(resp.ToolCalls, want) {
		t.Errorf("tool calls = %+v, want %+v", resp.ToolCalls, want)
	}
}

// runStream serves the given SSE data payloads and returns the reassembled
// response.
func runStream(t *testing.T, events []string) Response {
	t.Helper()
	var sb strings.Builder
	for _, e := range events {
		sb.WriteString("data: " + e + "\n\n")
	}
	sb.WriteString("data: [DONE]\n\n")
	s := newServer(t, reply{raw: sb.String()})
	var sl sleeps
	ep := endpoint(s, &sl)
	ep.MaxRetries = 0
	req := simple("m")
	req.Stream = true
	resp, err := New(ep).Complete(context.Background(), req, nil)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	return resp
}

func TestMaxConcurrency(t *testing.T) {
	tests := []struct {
		limit   int
		wantMax func(int) bool
		desc    string
	}{
		{3, func(m int) bool { return m == 3 }, "exactly 3"},
		{1, func(m int) bool { return m == 1 }, "exactly 1"},
		{0, func(m int) bool { return m > 3 }, "more than 3 (unlimited)"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.limit), func(t *testing.T) {
			var inflight, peak atomic.Int32
			body := completionJSON(reply{content: "ok"})
			h := func(w http.ResponseWriter, r *http.Request) {
				n := inflight.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				time.Sleep(20 * time.Millisecond)
				inflight.Add(-1)
				fmt.Fprint(w, body)
			}
			s := newServer(t)
			s.Config.Handler = http.HandlerFunc(h)
			var sl sleeps
			ep := endpoint(s, &sl)
			ep.MaxConcurrency = tt.limit
			c := New(ep)
			var wg sync.WaitGroup
			errs := make(chan error, 20)
			for range 20 {
				wg.Go(func() {
					if _, err := c.Complete(context.Background(), simple("m"), nil); err != nil {
						errs <- err
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("Complete: %v", err)
			}
			if m := int(peak.Load()); !tt.wantMax(m) {
				t.Errorf("peak in-flight = %d, want %s", m, tt.desc)
			}
		})
	}
}

func TestSlotReleasedWhileWaitingToRetry(t *testing.T) {
	s := newServer(t, reply{status: 503, raw: `{"error":{"message":"busy"}}`}, reply{content: "ok"})
	sleeping := make(chan struct{})
	wake := make(chan struct{})
	ep := endpoint(s, &sleeps{})
	ep.MaxConcurrency = 1
	ep.Sleep = func(ctx context.Context, d time.Duration) error {
		close(sleeping)
		<-wake
		return nil
	}
	c := New(ep)
	first := make(chan error, 1)
	go func() {
		_, err := c.Complete(context.Background(), simple("m"), nil)
		first <- err
	}()
	<-sleeping
	// The first caller is between attempts; its slot must be free.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Complete(ctx, simple("m"), nil); err != nil {
		t.Errorf("second caller while first waits to retry: %v", err)
	}
	close(wake)
	if err := <-first; err != nil {
		t.Errorf("first caller: %v", err)
	}
}

func TestWaitingForSlotRespectsContext(t *testing.T) {
	s := newServer(t, reply{hang: true})
	var sl sleeps
	ep := endpoint(s, &sl)
	ep.MaxConcurrency = 1
	c := New(ep)
	holdCtx, release := context.WithCancel(context.Background())
	held := make(chan struct{})
	go func() {
		defer close(held)
		_, _ = c.Complete(holdCtx, simple("m"), nil)
	}()
	for s.count() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Complete(ctx, simple("m"), nil)
	e := asError(t, err)
	if !errors.Is(err, context.DeadlineExceeded) || e.Attempts != 0 || s.count() != 1 {
		t.Errorf("error %+v, server %d; want deadline while waiting for the slot", e, s.count())
	}
	release()
	<-held
}

func TestRequestsPerMinuteShared(t *testing.T) {
	tests := []struct {
		rpm       int
		wantLimit bool
	}{{1, true}, {0, false}}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.rpm), func(t *testing.T) {
			s := newServer(t, reply{content: "ok"})
			var sl sleeps
			ep := endpoint(s, &sl)
			ep.RequestsPerMinute = tt.rpm
			c := New(ep)
			if _, err := c.Complete(context.Background(), simple("m"), nil); err != nil {
				t.Fatalf("first call: %v", err)
			}
			// Another goroutine shares the bucket: at 1 RPM the next token is
			// a minute away, so a call with a 1s deadline fails at once.
			errc := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				_, err := c.Complete(ctx, simple("m"), nil)
				errc <- err
			}()
			err := <-errc
			if !tt.wantLimit {
				if err != nil || s.count() != 2 {
					t.Errorf("unlimited second call: %v (server %d)", err, s.count())
				}
				return
			}
			e := asError(t, err)
			if !errors.Is(err, context.DeadlineExceeded) || e.Attempts != 0 || s.count() != 1 {
				t.Errorf("error %+v, server %d; want rate-limited before sending", e, s.count())
			}
		})
	}
}

func TestTokensPerMinute(t *testing.T) {
	t.Run("oversized request clamped to burst", func(t *testing.T) {
		s := newServer(t, reply{content: "ok", usage: [2]int{1, 1}})
		var sl sleeps
		ep := endpoint(s, &sl)
		ep.TokensPerMinute = 100
		c := New(ep)
		big := simple("m")
		big.Messages[0].Content = strings.Repeat("x", 4000) // ~1000 tokens > burst
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if _, err := c.Complete(ctx, big, nil); err != nil {
			t.Fatalf("oversized request: %v", err)
		}
		// The bucket is now empty: the next request cannot fit in a second.
		ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
		defer cancel2()
		_, err := c.Complete(ctx2, simple("m"), nil)
		if e := asError(t, err); !errors.Is(err, context.DeadlineExceeded) || e.Attempts != 0 {
			t.Errorf("error %+v; want token-rate limited", e)
		}
	})
	t.Run("actual usage beyond estimate charged", func(t *testing.T) {
		tests := []struct {
			usage [2]int
			want  int // tokens left of 6000
		}{
			{[2]int{1000, 500}, 6000 - 1500},
			{[2]int{2, 3}, 6000 - 18}, // estimate 5/4 + 4 + 13 = 18 stays reserved
		}
		for _, tt := range tests {
			s := newServer(t, reply{content: "ok", usage: tt.usage})
			var sl sleeps
			ep := endpoint(s, &sl)
			ep.TokensPerMinute = 6000
			c := New(ep)
			req := simple("m")
			req.MaxTokens = 13
			if _, err := c.Complete(context.Background(), req, nil); err != nil {
				t.Fatal(err)
			}
			spent := 0
			for _, sp := range c.rate.sched.Spent {
				spent += sp.Tokens
			}
			if got := 6000 - spent; got != tt.want {
				t.Errorf("usage %v: tokens left %d, want %d", tt.usage, got, tt.want)
			}
		}
	})
}

func TestIsLocal(t *testing.T) {
	tests := []struct {
		url  string
		want bool
	}{
		{"http://localhost:11434/v1", true},
		{"http://LOCALHOST/v1", true},
		{"http://ollama.localhost:8080/v1", true},
		{"http://127.0.0.1:8000/v1", true},
		{"http://127.1.2.3/v1", true},
		{"http://[::1]:8000/v1", true},
		{"http://0.0.0.0:11434/v1", true},
		{"https://api.openai.com/v1", false},
		{"https://openrouter.ai/api/v1", false},
		{"http://10.0.0.5:8000/v1", false},
		{"http://localhost.example.com/v1", false},
		{"::not a url", false},
	}
	for _, tt := range tests {
		if got := IsLocal(tt.url); got != tt.want {
			t.Errorf("IsLocal(%q) = %v, want %v", tt.url, got, tt.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	base, ceil := 500*time.Millisecond, 30*time.Second
	tests := []struct {
		n    int
		r    float64
		want time.Duration
	}{
		{1, 1, 500 * time.Millisecond},
		{2, 1, time.Second},
		{3, 0.5, time.Second},
		{6, 1, 16 * time.Second},
		{7, 1, 30 * time.Second}, // 32s capped
		{200, 1, 30 * time.Second},
		{5, 0, 0},
	}
	for _, tt := range tests {
		if got := backoff(tt.n, base, ceil, tt.r); got != tt.want {
			t.Errorf("backoff(%d, r=%v) = %v, want %v", tt.n, tt.r, got, tt.want)
		}
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		header map[string]string
		want   time.Duration
	}{
		{nil, 0},
		{map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{map[string]string{"Retry-After": " 0.25 "}, 250 * time.Millisecond},
		{map[string]string{"Retry-After": "-3"}, 0},
		{map[string]string{"Retry-After": "0"}, 0},
		{map[string]string{"Retry-After": "Inf"}, 0},
		{map[string]string{"Retry-After": "1e300"}, time.Duration(1<<63 - 1)},
		{map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{map[string]string{"Retry-After": "tomorrow"}, 0},
		{map[string]string{"retry-after-ms": "1500"}, 1500 * time.Millisecond},
		{map[string]string{"Retry-After-Ms": "junk", "Retry-After": "2"}, 2 * time.Second},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		if got := retryAfter(h, now); got != tt.want {
			t.Errorf("retryAfter(%v) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	cause := errors.New("boom")
	tests := []struct {
		e    Error
		want string
	}{
		{Error{Endpoint: "e", Model: "m", Attempts: 5, Status: 503, Retryable: true, Err: cause}, `llm: endpoint "e" model "m": gave up after 5 attempt(s), last status 503: boom`},
		{Error{Endpoint: "e", Model: "m", Attempts: 1, Status: 400, Err: cause}, `llm: endpoint "e" model "m": failed on attempt 1 (not retryable), last status 400: boom`},
		{Error{Endpoint: "e", Model: "m", Err: cause}, `llm: endpoint "e" model "m": no attempt sent: boom`},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		if !errors.Is(&tt.e, cause) {
			t.Errorf("Unwrap lost the cause")
		}
	}
}
