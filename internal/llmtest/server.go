// Package llmtest is a scripted OpenAI-compatible Chat Completions server for
// tests. It speaks the wire format closely enough that the go-openai client
// (and our own runtime) talk to it unchanged, so end-to-end tests exercise the
// real HTTP, JSON and SSE paths instead of a mocked interface.
package llmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/debate-runner/runner/nodes/kit"
)

// completionsPath is the only endpoint served; Server.URL ends in "/v1" so
// clients append "/chat/completions" themselves, as with the real API.
const completionsPath = "/v1/chat/completions"

// Request is one chat completion request as the server received it.
type Request struct {
	N              int // 1-based arrival index over the server's life
	Model          string
	Messages       []Message
	Temperature    *float64
	MaxTokens      int // max_tokens, or max_completion_tokens when only that is sent
	Tools          []Tool
	Stream         bool
	IncludeUsage   bool   // stream_options.include_usage
	ResponseFormat string // "", "json_object", "json_schema"
	// JSONSchema, SchemaName and Strict are response_format.json_schema's.
	JSONSchema json.RawMessage
	SchemaName string
	Strict     bool
	// Fields are the body's top-level members, raw, by name.
	Fields map[string]json.RawMessage
	Path   string     // the request path, e.g. /v1/chat/completions
	Query  url.Values // the query, e.g. api-version on Azure
	Header http.Header
	Body   []byte // raw request body
}

// LastUser returns the content of the last message with role "user", or "".
func (r Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// Message is one chat message of a request. Content arrays (multi-part
// content) are flattened to their text parts.
type Message struct {
	Role, Content, Name, ToolCallID string
	ToolCalls                       []kit.ToolCall
}

// Tool is a function tool offered by the request.
type Tool struct {
	Name, Description string
	Parameters        json.RawMessage
}

// Reply is what the server answers to one request.
type Reply struct {
	Content string
	// ToolCalls are answered as assistant tool_calls; an empty ID is filled
	// in and empty Arguments become "{}".
	ToolCalls []kit.ToolCall
	// FinishReason defaults to "tool_calls" when ToolCalls is set, else "stop".
	FinishReason string
	// PromptTokens defaults to a rough count (len/4) of the request's messages.
	PromptTokens int
	// CompletionTokens defaults to a rough count of Content and tool calls.
	CompletionTokens int
	// CachedTokens, when set, is reported as
	// usage.prompt_tokens_details.cached_tokens.
	CachedTokens int
	// CacheWriteTokens, when set, is reported as the prompt tokens written
	// to the prompt cache: OpenRouter's
	// usage.prompt_tokens_details.cache_write_tokens, or with
	// CacheCreationField usage.cache_creation_input_tokens (Anthropic's
	// name, as gateways such as LiteLLM pass it on).
	CacheWriteTokens   int
	CacheCreationField bool
	// Usage, when set, is sent verbatim as the reply's usage member (in
	// the usage chunk of a stream), in place of the counts above: usage as
	// servers send it wrongly (counts as floats or strings, negative).
	Usage json.RawMessage
	// Status, when non-zero and not 200, answers an OpenAI-style error body.
	Status       int
	ErrorMessage string // defaults to http.StatusText(Status)
	RetryAfter   string // Retry-After header value, e.g. "1" or "0.05"
	// Delay waits before answering; it ends early if the client goes away.
	Delay time.Duration
	// ChunkDelay waits between streamed chunks, to test stalls mid-stream.
	ChunkDelay time.Duration
	// Hang never answers; the handler returns once the client disconnects
	// or the server closes.
	Hang bool
	// RawBody is sent verbatim with status 200 (malformed response tests).
	RawBody string
	// Drop closes the connection without writing any response.
	Drop bool
}

// Handler decides the reply for a request. It is called concurrently and
// must be safe for that.
type Handler func(Request) Reply

// Server is a running scripted server. Create it with New or NewQueue.
type Server struct {
	// URL is the API base URL, ending in "/v1" (use it as go-openai's BaseURL),
	// or what a Provider serves under.
	URL string
	// Root is the server's scheme, host and port, without a path.
	Root string

	provider *Provider // nil: the plain server

	ts        *httptest.Server
	done      chan struct{} // closed by Close so waiting handlers let go
	closeOnce sync.Once

	mu       sync.Mutex
	handler  Handler
	requests []Request
}

// New starts a server answering with h and registers t.Cleanup(Close).
func New(t testing.TB, h Handler) *Server {
	t.Helper()
	return start(t, h, nil)
}

// start starts a server with h under p's rules (nil: the plain server).
func start(t testing.TB, h Handler, p *Provider) *Server {
	t.Helper()
	s := &Server{handler: h, done: make(chan struct{}), provider: p}
	s.ts = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.Root = s.ts.URL
	s.URL = s.ts.URL + "/v1"
	t.Cleanup(s.Close)
	return s
}

// NewInProcess returns a server without a socket: the http.RoundTripper
// from Transport answers each request in the caller's goroutine, so that a
// test inside a testing/synctest bubble runs the whole exchange on the
// bubble's clock. URL is a placeholder that only its Transport serves.
func NewInProcess(h Handler) *Server {
	return &Server{handler: h, done: make(chan struct{}), Root: "http://llmtest.invalid", URL: "http://llmtest.invalid/v1"}
}

// Transport returns a RoundTripper that hands requests to the server in
// process, without a connection.
func (s *Server) Transport() http.RoundTripper { return inProcess{s} }

type inProcess struct{ s *Server }

func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.s.serveHTTP(rec, r)
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// NewQueue starts a server answering replies in arrival order. Once they are
// used up it answers 500 "llmtest: script exhausted" and fails the test,
// because an unplanned call means the code under test did more than expected.
func NewQueue(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	return New(t, sequence(replies, func(r Request) {
		t.Errorf("llmtest: script exhausted: request %d arrived after all %d replies were used", r.N, len(replies))
	}))
}

// Requests returns a copy of all requests received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		out[i] = cloneRequest(r)
	}
	return out
}

// Count returns the number of requests received so far.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// SetHandler swaps the script; requests arriving afterwards use h.
func (s *Server) SetHandler(h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = h
}

// Close shuts the server down. Hanging or delayed handlers are released first
// so that Close never waits for a client that is not going away. It is safe to
// call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		if s.ts != nil {
			s.ts.CloseClientConnections()
			s.ts.Close()
		}
	})
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	p := s.provider
	if p == nil && r.URL.Path != completionsPath {
		writeError(w, http.StatusNotFound, fmt.Sprintf("llmtest: unknown path %s (only POST %s is served)", r.URL.Path, completionsPath))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("llmtest: method %s not allowed on %s", r.Method, r.URL.Path))
		return
	}
	body, readErr := readBody(r)
	req, parseErr := parseRequest(body)
	if parseErr == nil {
		parseDetails(body, &req)
	}
	req.Header = r.Header.Clone()
	req.Body = body
	req.Path = r.URL.Path
	req.Query = r.URL.Query()

	s.mu.Lock()
	req.N = len(s.requests) + 1
	s.requests = append(s.requests, cloneRequest(req))
	h := s.handler
	s.mu.Unlock()

	// A provider records every request, refused ones included, so tests
	// can count what a client sent.
	deployment := ""
	if p != nil {
		d, refusal := p.route(r)
		if refusal != nil {
			refusal.write(w)
			return
		}
		deployment = d
	}
	if err := errors.Join(readErr, parseErr); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if p != nil {
		if refusal := p.authorize(r.Header); refusal != nil {
			refusal.write(w)
			return
		}
		if refusal := p.check(&req, deployment); refusal != nil {
			refusal.write(w)
			return
		}
	}
	if h == nil {
		writeError(w, http.StatusInternalServerError, "llmtest: no handler set")
		return
	}
	rep := h(cloneRequest(req))
	if p != nil {
		rep = p.adjust(req, rep)
	}
	s.answer(w, r, req, rep)
}

// parseDetails records what parseRequest leaves out: every top-level field
// and the json_schema of response_format.
func parseDetails(body []byte, req *Request) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return
	}
	req.Fields = fields
	var rf struct {
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict bool            `json:"strict"`
		} `json:"json_schema"`
	}
	if raw, ok := fields["response_format"]; ok && json.Unmarshal(raw, &rf) == nil && rf.JSONSchema != nil {
		req.JSONSchema, req.SchemaName, req.Strict = rf.JSONSchema.Schema, rf.JSONSchema.Name, rf.JSONSchema.Strict
	}
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, req Request, rep Reply) {
	if !s.wait(r, rep.Delay) {
		return
	}
	if rep.Hang {
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return
	}
	if rep.Drop {
		drop(w)
		return
	}
	if rep.RetryAfter != "" {
		w.Header().Set("Retry-After", rep.RetryAfter)
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		msg := rep.ErrorMessage
		if msg == "" {
			msg = http.StatusText(rep.Status)
		}
		writeError(w, rep.Status, msg)
		return
	}
	if rep.RawBody != "" {
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(rep.RawBody))
		return
	}
	c := newCompletion(req, rep)
	if s.provider != nil && s.provider.NoUsage {
		c.noUsage = true
	}
	if req.Stream {
		s.stream(w, r, req, c, rep.ChunkDelay)
		return
	}
	writeJSON(w, http.StatusOK, c.message())
}

// wait sleeps for d and reports whether the reply should still be sent, i.e.
// neither the client nor the server went away meanwhile.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-r.Context().Done():
		return false
	case <-s.done:
		return false
	}
}

// drop closes the connection under the client so that it sees a transport
// error rather than any HTTP response.
func drop(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Without hijacking (e.g. HTTP/2) aborting the handler is the
		// closest thing: net/http resets the stream without a response.
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return body, fmt.Errorf("llmtest: reading request body: %w", err)
	}
	return body, nil
}

// Wire shapes of the request, decoded loosely: content may be a string, null
// or an array of parts, as the API allows.
type wireRequest struct {
	Model               string        `json:"model"`
	Messages            []wireMessage `json:"messages"`
	Temperature         *float64      `json:"temperature"`
	MaxTokens           int           `json:"max_tokens"`
	MaxCompletionTokens int           `json:"max_completion_tokens"`
	Tools               []wireTool    `json:"tools"`
	Stream              bool          `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
}

type wireToolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

func parseRequest(body []byte) (Request, error) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return Request{}, fmt.Errorf("llmtest: request body is not a valid chat completion request: %w", err)
	}
	req := Request{
		Model:       w.Model,
		Temperature: w.Temperature,
		MaxTokens:   w.MaxTokens,
		Stream:      w.Stream,
	}
	if req.MaxTokens == 0 {
		req.MaxTokens = w.MaxCompletionTokens
	}
	if w.StreamOptions != nil {
		req.IncludeUsage = w.StreamOptions.IncludeUsage
	}
	if w.ResponseFormat != nil {
		req.ResponseFormat = w.ResponseFormat.Type
	}
	for i, m := range w.Messages {
		content, err := flattenContent(m.Content)
		if err != nil {
			return Request{}, fmt.Errorf("llmtest: messages[%d].content: %w", i, err)
		}
		msg := Message{Role: m.Role, Content: content, Name: m.Name, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, kit.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, t := range w.Tools {
		req.Tools = append(req.Tools, Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	return req, nil
}

func flattenContent(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("want a string or an array of parts: %w", err)
	}
	var sb strings.Builder
	for _, p := range parts {
		sb.WriteString(p.Text)
	}
	return sb.String(), nil
}

func cloneRequest(r Request) Request {
	c := r
	c.Header = r.Header.Clone()
	c.Body = append([]byte(nil), r.Body...)
	c.JSONSchema = append(json.RawMessage(nil), r.JSONSchema...)
	if r.Fields != nil {
		c.Fields = make(map[string]json.RawMessage, len(r.Fields))
		for k, v := range r.Fields {
			c.Fields[k] = append(json.RawMessage(nil), v...)
		}
	}
	if r.Query != nil {
		c.Query = url.Values{}
		for k, v := range r.Query {
			c.Query[k] = append([]string(nil), v...)
		}
	}
	if r.Temperature != nil {
		t := *r.Temperature
		c.Temperature = &t
	}
	c.Messages = nil
	for _, m := range r.Messages {
		m.ToolCalls = append([]kit.ToolCall(nil), m.ToolCalls...)
		c.Messages = append(c.Messages, m)
	}
	c.Tools = nil
	for _, t := range r.Tools {
		t.Parameters = append(json.RawMessage(nil), t.Parameters...)
		c.Tools = append(c.Tools, t)
	}
	return c
}

// completion is a reply resolved against its request: defaults filled in.
type completion struct {
	id, model, content, finish string
	created                    int64
	toolCalls                  []kit.ToolCall
	usage                      wireUsage
	rawUsage                   json.RawMessage // sent in place of usage
	noUsage                    bool            // the server reports no usage
}

type wireUsage struct {
	PromptTokens        int                `json:"prompt_tokens"`
	CompletionTokens    int                `json:"completion_tokens"`
	TotalTokens         int                `json:"total_tokens"`
	PromptTokensDetails *wireTokensDetails `json:"prompt_tokens_details,omitempty"`
	CacheCreation       int                `json:"cache_creation_input_tokens,omitempty"`
}

type wireTokensDetails struct {
	CachedTokens     int `json:"cached_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

func newCompletion(req Request, rep Reply) completion {
	c := completion{
		id:      fmt.Sprintf("chatcmpl-llmtest-%d", req.N),
		model:   req.Model,
		content: rep.Content,
		finish:  rep.FinishReason,
		created: time.Now().Unix(),
	}
	generated := rep.Content
	for i, tc := range rep.ToolCalls {
		if tc.ID == "" {
			tc.ID = fmt.Sprintf("call_%d_%d", req.N, i)
		}
		if tc.Arguments == "" {
			tc.Arguments = "{}"
		}
		generated += tc.Name + tc.Arguments
		c.toolCalls = append(c.toolCalls, tc)
	}
	if c.finish == "" {
		c.finish = "stop"
		if len(c.toolCalls) > 0 {
			c.finish = "tool_calls"
		}
	}
	prompt := 0
	for _, m := range req.Messages {
		prompt += len(m.Content)
		for _, tc := range m.ToolCalls {
			prompt += len(tc.Name) + len(tc.Arguments)
		}
	}
	c.usage.PromptTokens = rep.PromptTokens
	if c.usage.PromptTokens == 0 {
		c.usage.PromptTokens = roughTokens(prompt)
	}
	c.usage.CompletionTokens = rep.CompletionTokens
	if c.usage.CompletionTokens == 0 {
		c.usage.CompletionTokens = roughTokens(len(generated))
	}
	c.usage.TotalTokens = c.usage.PromptTokens + c.usage.CompletionTokens
	if rep.CachedTokens > 0 || rep.CacheWriteTokens > 0 && !rep.CacheCreationField {
		c.usage.PromptTokensDetails = &wireTokensDetails{CachedTokens: rep.CachedTokens}
		if !rep.CacheCreationField {
			c.usage.PromptTokensDetails.CacheWriteTokens = rep.CacheWriteTokens
		}
	}
	if rep.CacheCreationField {
		c.usage.CacheCreation = rep.CacheWriteTokens
	}
	c.rawUsage = rep.Usage
	return c
}

// usageMember is the usage the completion sends.
func (c completion) usageMember() any {
	if c.rawUsage != nil {
		return c.rawUsage
	}
	usage := c.usage
	return &usage
}

// roughTokens approximates a token count as a quarter of the byte length,
// never zero so that cost accounting always has something to add up.
func roughTokens(n int) int {
	return max(1, (n+3)/4)
}

type wireMessageOut struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

type wireChoice struct {
	Index        int            `json:"index"`
	Message      wireMessageOut `json:"message"`
	FinishReason string         `json:"finish_reason"`
}

type wireCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []wireChoice `json:"choices"`
	Usage   any          `json:"usage,omitempty"`
}

func (c completion) message() wireCompletion {
	msg := wireMessageOut{Role: "assistant"}
	// The API sends content null, not "", on a pure tool-call answer.
	if c.content != "" || len(c.toolCalls) == 0 {
		content := c.content
		msg.Content = &content
	}
	for _, tc := range c.toolCalls {
		msg.ToolCalls = append(msg.ToolCalls, wireToolCall{
			ID: tc.ID, Type: "function",
			Function: wireFunction{Name: tc.Name, Arguments: tc.Arguments},
		})
	}
	out := wireCompletion{
		ID: c.id, Object: "chat.completion", Created: c.created, Model: c.model,
		Choices: []wireChoice{{Message: msg, FinishReason: c.finish}},
	}
	if !c.noUsage {
		out.Usage = c.usageMember()
	}
	return out
}

type wireDelta struct {
	Role      string         `json:"role,omitempty"`
	Content   string         `json:"content,omitempty"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

type wireChunkChoice struct {
	Index        int       `json:"index"`
	Delta        wireDelta `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
}

type wireChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []wireChunkChoice `json:"choices"`
	Usage   any               `json:"usage,omitempty"`
}

// chunks lays out the completion as OpenAI streams it: a role delta, content
// in pieces, each tool call opened with its index, id and name and then fed
// its arguments in pieces, a finish chunk, and optionally a usage chunk.
func (c completion) chunks(includeUsage bool) []wireChunk {
	chunk := func(d wireDelta, finish *string) wireChunk {
		return wireChunk{
			ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model,
			Choices: []wireChunkChoice{{Delta: d, FinishReason: finish}},
		}
	}
	out := []wireChunk{chunk(wireDelta{Role: "assistant"}, nil)}
	for _, piece := range splitText(c.content, 12) {
		out = append(out, chunk(wireDelta{Content: piece}, nil))
	}
	for i, tc := range c.toolCalls {
		index := i
		out = append(out, chunk(wireDelta{ToolCalls: []wireToolCall{{
			Index: &index, ID: tc.ID, Type: "function",
			Function: wireFunction{Name: tc.Name},
		}}}, nil))
		for _, piece := range splitText(tc.Arguments, 6) {
			out = append(out, chunk(wireDelta{ToolCalls: []wireToolCall{{
				Index: &index, Function: wireFunction{Arguments: piece},
			}}}, nil))
		}
	}
	finish := c.finish
	out = append(out, chunk(wireDelta{}, &finish))
	if includeUsage && !c.noUsage {
		out = append(out, wireChunk{
			ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model,
			Choices: []wireChunkChoice{}, Usage: c.usageMember(),
		})
	}
	return out
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, req Request, c completion, gap time.Duration) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	comments := s.provider != nil && s.provider.StreamComments
	for i, ch := range c.chunks(req.IncludeUsage) {
		if i > 0 && !s.wait(r, gap) {
			return
		}
		if comments {
			_, _ = fmt.Fprint(w, ": OPENROUTER PROCESSING\n\n")
		}
		data, err := json.Marshal(ch)
		if err != nil {
			panic(fmt.Sprintf("llmtest: encoding stream chunk: %v", err))
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return // client went away
		}
		_ = rc.Flush()
	}
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}

// splitText cuts s into pieces the way a tokenizer might: a new piece starts
// at each word after whitespace, and no piece exceeds size runes. Pieces
// concatenate back to s exactly.
func splitText(s string, size int) []string {
	var out []string
	start, runes := 0, 0
	prevSpace := false
	for i, r := range s {
		space := unicode.IsSpace(r)
		if runes > 0 && ((prevSpace && !space) || runes >= size) {
			out = append(out, s[start:i])
			start, runes = i, 0
		}
		runes++
		prevSpace = space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// errorType picks the OpenAI error "type" a real server would use for status.
func errorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

type wireError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	var e wireError
	e.Error.Message = msg
	e.Error.Type = errorType(status)
	writeJSON(w, status, e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("llmtest: encoding response: %v", err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}
