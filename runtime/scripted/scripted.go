// Package scripted answers a run's model calls from a script, at the HTTP
// level: its Transport stands where the network would be, behind the real
// model client, so a scripted 429 is retried, a scripted malformed body is
// retried as a broken reply would be, and a reply that does not parse is
// repaired by the node, exactly as against a server. `runner test` runs
// specs with it.
//
// The transport finds the call each request belongs to in the request's
// context (calls.CallFrom), and answers it from the first entry of the
// script that matches the call's node, agent, round, goal, key or prompt.
// Calls no entry answers get a stand-in of the shape the call expects
// (calls.StandIn), as in a dry run, or fail when the script says so.
package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/calls"
)

// Script is what a test case answers its calls with.
type Script struct {
	// Entries are tried in order; the first that matches a request and
	// has a reply left answers it.
	Entries []Entry
	// Strict fails calls no entry answers instead of answering them with
	// stand-ins.
	Strict bool
}

// Entry answers the calls it matches.
type Entry struct {
	Match Match
	// Replies answer matching requests in order, counted per agent: an
	// agent's first matching request gets the first reply, its second the
	// second, so agents that call at once do not race for them. Once an
	// agent has used them all, the entry no longer matches its requests.
	Replies []Reply
	// Always answers every matching request with Replies[0] instead.
	Always bool
	// Where names the entry in messages (FILE:LINE:COL).
	Where string
}

// Match selects calls. Empty fields match anything.
type Match struct {
	Node, Agent, Goal string
	// Round matches the innermost loop's counter when not nil.
	Round *int
	// Key is searched for in the call key (node/scope/agent...).
	Key *regexp.Regexp
	// Prompt is searched for in the prompt: the last user message.
	Prompt *regexp.Regexp
}

// Matches reports whether m selects c.
func (m *Match) Matches(c *calls.Call) bool {
	switch {
	case m.Node != "" && m.Node != c.Node,
		m.Agent != "" && m.Agent != c.Agent,
		m.Goal != "" && m.Goal != c.Goal,
		m.Round != nil && *m.Round != c.Round,
		m.Key != nil && !m.Key.MatchString(c.Key):
		return false
	}
	return m.Prompt == nil || m.Prompt.MatchString(Prompt(c.Kit.Messages))
}

// Prompt is the text a prompt pattern is searched in: the last user
// message (a repair's is the repair request).
func Prompt(msgs []kit.ChatMessage) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Content
		}
	}
	return ""
}

// Reply is what one request is answered with: a completion, or an
// endpoint's failure.
type Reply struct {
	Content      string
	ToolCalls    []kit.ToolCall
	FinishReason string
	// PromptTokens and CompletionTokens are the usage reported; zero
	// counts about four characters a token.
	PromptTokens, CompletionTokens int
	// Status, when not 0 or 200, answers an error of that HTTP status with
	// Message (default: the status text) and, when set, a Retry-After of
	// RetryAfter seconds.
	Status     int
	Message    string
	RetryAfter string
	// Timeout fails the request as a timed-out connection would, Reset as
	// a dropped one.
	Timeout, Reset bool
	// Raw is sent as the body of a 200 answer, as it is (a malformed
	// reply).
	Raw string
}

// Attempt is one request the transport answered.
type Attempt struct {
	Call *calls.Call
	// Reply is what it was answered with.
	Reply Reply
	// Entry is the index of the entry that answered, -1 for a stand-in
	// and -2 for a call that failed for want of one.
	Entry int
}

// Transport is an http.RoundTripper that answers chat completion requests
// from a script. It is safe for concurrent use.
type Transport struct {
	script Script

	mu       sync.Mutex
	used     map[usedKey]int
	attempts []Attempt
}

type usedKey struct {
	entry int
	agent string
}

// New returns a transport answering from s.
func New(s Script) *Transport {
	return &Transport{script: s, used: map[usedKey]int{}}
}

// Attempts returns the requests answered so far, in the order they came.
func (t *Transport) Attempts() []Attempt {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Attempt(nil), t.attempts...)
}

// Unused returns the entries with replies nobody took, for a test to warn
// that its script and the spec have drifted apart.
func (t *Transport) Unused() []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []int
	for i, e := range t.script.Entries {
		taken := false
		for k := range t.used {
			if k.entry == i {
				taken = true
				break
			}
		}
		if !taken && len(e.Replies) > 0 {
			out = append(out, i)
		}
	}
	return out
}

// pick chooses the reply for a request of c and logs it.
func (t *Transport) pick(c *calls.Call) (Reply, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.script.Entries {
		e := &t.script.Entries[i]
		if len(e.Replies) == 0 || !e.Match.Matches(c) {
			continue
		}
		k := usedKey{i, c.Agent}
		n := t.used[k]
		if e.Always {
			t.used[k] = n + 1
			return t.log(c, e.Replies[0], i)
		}
		if n < len(e.Replies) {
			t.used[k] = n + 1
			return t.log(c, e.Replies[n], i)
		}
	}
	if t.script.Strict {
		return t.log(c, Reply{Status: http.StatusBadRequest, Message: "runner test: no scripted reply for call " + c.Key + " (the test is strict: every call must be scripted)"}, -2)
	}
	return t.log(c, Reply{Content: calls.StandIn(c.Kit.Shape, "reply to "+c.Key)}, -1)
}

func (t *Transport) log(c *calls.Call, r Reply, entry int) (Reply, int) {
	t.attempts = append(t.attempts, Attempt{Call: c, Reply: r, Entry: entry})
	return r, entry
}

// timeoutError is what a connection that timed out gives the client.
type timeoutError struct{}

func (timeoutError) Error() string   { return "scripted timeout: no response before the deadline" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	c := calls.CallFrom(req.Context())
	if c == nil {
		return nil, errors.New("scripted: a request outside any model call")
	}
	var wire struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.Unmarshal(body, &wire); err != nil {
		return respond(req, http.StatusBadRequest, "application/json", errorBody(http.StatusBadRequest, "scripted: the request is not JSON: "+err.Error())), nil
	}
	rep, _ := t.pick(c)
	switch {
	case rep.Timeout:
		return nil, timeoutError{}
	case rep.Reset:
		return nil, errors.New("scripted: connection reset by peer")
	case rep.Status != 0 && rep.Status != http.StatusOK:
		msg := rep.Message
		if msg == "" {
			msg = http.StatusText(rep.Status)
		}
		resp := respond(req, rep.Status, "application/json", errorBody(rep.Status, msg))
		if rep.RetryAfter != "" {
			resp.Header.Set("Retry-After", rep.RetryAfter)
		}
		return resp, nil
	case rep.Raw != "":
		ct := "application/json"
		if wire.Stream {
			ct = "text/event-stream"
		}
		return respond(req, http.StatusOK, ct, []byte(rep.Raw)), nil
	}
	model := wire.Model
	if model == "" && c.Model != nil {
		model = c.Model.Model
	}
	comp := completion(c, rep, model)
	if wire.Stream {
		return respond(req, http.StatusOK, "text/event-stream", comp.stream(wire.StreamOptions != nil && wire.StreamOptions.IncludeUsage)), nil
	}
	data, _ := json.Marshal(comp.message())
	return respond(req, http.StatusOK, "application/json", data), nil
}

func respond(req *http.Request, status int, contentType string, body []byte) *http.Response {
	h := http.Header{}
	h.Set("Content-Type", contentType)
	return &http.Response{
		Status: strconv.Itoa(status) + " " + http.StatusText(status), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}
}

func errorBody(status int, msg string) []byte {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status >= 500:
		typ = "server_error"
	}
	data, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ}})
	return data
}

// answer is a completion in the wire format.
type answer struct {
	id, model, content, finish string
	toolCalls                  []kit.ToolCall
	prompt, completion         int
}

func completion(c *calls.Call, r Reply, model string) answer {
	a := answer{id: "chatcmpl-scripted", model: model, content: r.Content, finish: r.FinishReason, toolCalls: r.ToolCalls,
		prompt: r.PromptTokens, completion: r.CompletionTokens}
	for i := range a.toolCalls {
		if a.toolCalls[i].ID == "" {
			a.toolCalls[i].ID = fmt.Sprintf("call_%d", i+1)
		}
		if a.toolCalls[i].Arguments == "" {
			a.toolCalls[i].Arguments = "{}"
		}
	}
	if a.finish == "" {
		a.finish = "stop"
		if len(a.toolCalls) > 0 {
			a.finish = "tool_calls"
		}
	}
	if a.prompt == 0 {
		n := 0
		for _, m := range c.Kit.Messages {
			n += len(m.Content)
		}
		a.prompt = max(1, n/4)
	}
	if a.completion == 0 {
		n := len(r.Content)
		for _, tc := range a.toolCalls {
			n += len(tc.Name) + len(tc.Arguments)
		}
		a.completion = max(1, n/4)
	}
	return a
}

type wireToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func (a answer) wireCalls(indexed bool) []wireToolCall {
	var out []wireToolCall
	for i, tc := range a.toolCalls {
		w := wireToolCall{ID: tc.ID, Type: "function"}
		w.Function.Name, w.Function.Arguments = tc.Name, tc.Arguments
		if indexed {
			w.Index = &i
		}
		out = append(out, w)
	}
	return out
}

func (a answer) usage() map[string]int {
	return map[string]int{"prompt_tokens": a.prompt, "completion_tokens": a.completion, "total_tokens": a.prompt + a.completion}
}

func (a answer) message() map[string]any {
	msg := map[string]any{"role": "assistant", "content": a.content}
	if len(a.toolCalls) > 0 {
		msg["tool_calls"] = a.wireCalls(false)
	}
	return map[string]any{
		"id": a.id, "object": "chat.completion", "created": 0, "model": a.model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": a.finish}},
		"usage":   a.usage(),
	}
}

// stream is the answer as server-sent events: the text in word-sized
// pieces, the tool calls, the finish reason, the usage when asked for.
func (a answer) stream(usage bool) []byte {
	var b bytes.Buffer
	chunk := func(delta map[string]any, finish any, u map[string]int) {
		choices := []any{}
		if delta != nil {
			choices = append(choices, map[string]any{"index": 0, "delta": delta, "finish_reason": finish})
		}
		ch := map[string]any{"id": a.id, "object": "chat.completion.chunk", "created": 0, "model": a.model, "choices": choices}
		if u != nil {
			ch["usage"] = u
		}
		data, _ := json.Marshal(ch)
		b.WriteString("data: ")
		b.Write(data)
		b.WriteString("\n\n")
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	for _, piece := range pieces(a.content) {
		chunk(map[string]any{"content": piece}, nil, nil)
	}
	if len(a.toolCalls) > 0 {
		chunk(map[string]any{"tool_calls": a.wireCalls(true)}, nil, nil)
	}
	chunk(map[string]any{}, a.finish, nil)
	if usage {
		chunk(nil, nil, a.usage())
	}
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// pieces cuts a text at word starts, as a streaming server sends it.
func pieces(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexAny(s[1:], " \n")
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}
