// Package nativetest holds the local servers that speak the native
// provider kinds' APIs as their documentation describes them: Anthropic's
// Messages API (kind anthropic) and Gemini's generateContent (kind
// gemini). One Server type answers either: the request log, the injected
// failures and the handler are shared, and only the wire format differs
// by kind. Tests of the kinds, of the examples on them and of batch mode
// use it; nothing here touches the network beyond the loopback server.
package nativetest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Kinds are the native kinds a Server speaks.
var Kinds = []string{"anthropic", "gemini"}

// Server is a local server of one native kind.
type Server struct {
	Kind string
	URL  string
	key  string

	mu       sync.Mutex
	requests []Request
	cached   map[string]bool // anthropic: prefixes written to the cache
	seen     []string        // gemini: earlier requests' texts, for implicit caching
	// Fail, when set, answers a request before Reply: a status (with the
	// kind's error for it), or 0 for a normal answer; hang holds the
	// reply until the client gives up.
	Fail func(n int, req Request) (status int, hang bool)
	// Reply is the model: what it answers to a request.
	Reply func(req Request) Reply
}

// Request is a request the server received, parsed: Params holds the
// fields of either kind's body (Anthropic's system and messages, Gemini's
// systemInstruction and contents).
type Request struct {
	N      int
	Model  string
	Stream bool
	Body   []byte
	Header http.Header
	Params struct {
		// Anthropic.
		Model     string            `json:"model"`
		MaxTokens int               `json:"max_tokens"`
		System    []json.RawMessage `json:"system"`
		Messages  []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
		Stream bool `json:"stream"`
		// Gemini.
		Contents []struct {
			Role  string            `json:"role"`
			Parts []json.RawMessage `json:"parts"`
		} `json:"contents"`
		SystemInstruction *struct {
			Parts []json.RawMessage `json:"parts"`
		} `json:"systemInstruction"`
		GenerationConfig map[string]json.RawMessage `json:"generationConfig"`
		// Both.
		Tools []json.RawMessage `json:"tools"`
	}
}

// Reply is what the model answers: text, tool calls, a stop reason (""
// for the kind's normal end: end_turn or tool_use, STOP) and, when set,
// the usage object sent instead of the counts the server makes.
type Reply struct {
	Text  string
	Tools []Tool
	Stop  string
	Usage string
}

// Tool is a tool call of a reply: its id (Anthropic), name and input (the
// arguments, as JSON).
type Tool struct{ ID, Name, Input string }

// New starts a server of kind (anthropic or gemini) that accepts key and
// answers with reply; it is closed when the test ends.
func New(t testing.TB, kind, key string, reply func(Request) Reply) *Server {
	t.Helper()
	s := &Server{Kind: kind, key: key, Reply: reply, cached: map[string]bool{}}
	var h http.HandlerFunc
	switch kind {
	case "anthropic":
		h = s.anthropic
	case "gemini":
		h = s.gemini
	default:
		t.Fatalf("nativetest: no server of kind %q", kind)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Requests is every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// SetFail replaces Fail while the server runs.
func (s *Server) SetFail(f func(n int, req Request) (int, bool)) {
	s.mu.Lock()
	s.Fail = f
	s.mu.Unlock()
}

// log numbers and keeps a request, and says how Fail answers it.
func (s *Server) log(req *Request) (status int, hang bool) {
	s.mu.Lock()
	req.N = len(s.requests) + 1
	s.requests = append(s.requests, *req)
	fail := s.Fail
	s.mu.Unlock()
	if fail == nil {
		return 0, false
	}
	return fail(req.N, *req)
}

// Turn is a message of a request in the engine's terms: a role (system,
// user, assistant) and its text.
type Turn struct{ Role, Text string }

// Turns reads a request back as the engine's messages: the system prompt
// first, then each message's text parts joined by newlines (tool calls
// and results as their JSON), assistant for Gemini's "model".
func (r Request) Turns() []Turn {
	var out []Turn
	texts := func(raws []json.RawMessage) string {
		var b strings.Builder
		for i, raw := range raws {
			if i > 0 {
				b.WriteByte('\n')
			}
			var p struct {
				Text string `json:"text"`
			}
			if json.Unmarshal(raw, &p) == nil && p.Text != "" {
				b.WriteString(p.Text)
				continue
			}
			b.Write(raw)
		}
		return b.String()
	}
	if len(r.Params.System) > 0 {
		out = append(out, Turn{"system", texts(r.Params.System)})
	}
	if si := r.Params.SystemInstruction; si != nil {
		out = append(out, Turn{"system", texts(si.Parts)})
	}
	for _, m := range r.Params.Messages {
		out = append(out, Turn{m.Role, texts(m.Content)})
	}
	for _, c := range r.Params.Contents {
		role := c.Role
		if role == "model" {
			role = "assistant"
		}
		out = append(out, Turn{role, texts(c.Parts)})
	}
	return out
}

func chop(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}
