package gemini_test

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

// fake is a local server that speaks Gemini's generateContent as its
// documentation describes it: POST /v1beta/models/MODEL:generateContent
// (or :streamGenerateContent?alt=sse, answered as server-sent events of
// partial replies) with the key in x-goog-api-key; errors as
// {"error": {"code", "message", "status"}} (400 INVALID_ARGUMENT, 403
// PERMISSION_DENIED, 404 NOT_FOUND, 429 RESOURCE_EXHAUSTED with
// Retry-After, 500 INTERNAL, 503 UNAVAILABLE); implicit caching: the part
// of a request's contents that an earlier request of the same model began
// with is reported as cachedContentTokenCount.
type fake struct {
	srv *httptest.Server
	key string

	mu       sync.Mutex
	requests []fakeRequest
	seen     []string // earlier requests' bodies, for implicit caching
	fail     func(n int, req fakeRequest) int
	reply    func(req fakeRequest) fakeReply
}

type fakeRequest struct {
	N      int
	Model  string
	Stream bool
	Body   []byte
	Header http.Header
	Params struct {
		Contents []struct {
			Role  string            `json:"role"`
			Parts []json.RawMessage `json:"parts"`
		} `json:"contents"`
		SystemInstruction *struct {
			Parts []json.RawMessage `json:"parts"`
		} `json:"systemInstruction"`
		GenerationConfig map[string]json.RawMessage `json:"generationConfig"`
		Tools            []json.RawMessage          `json:"tools"`
	}
}

type fakeReply struct {
	Text   string
	Calls  []fakeCall
	Finish string // "" for STOP
	Usage  string // sent instead of the counts the fake makes
}

type fakeCall struct{ Name, Args string }

var statuses = map[int]string{400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}

func newFake(t testing.TB, key string, reply func(fakeRequest) fakeReply) *fake {
	f := &fake{key: key, reply: reply}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) Requests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.requests...)
}

func apiError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	if code == 429 {
		w.Header().Set("Retry-After", "2")
	}
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"error":{"code":%d,"message":%q,"status":%q}}`, code, msg, statuses[code])
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	path, ok := strings.CutPrefix(r.URL.Path, "/v1beta/models/")
	model, method, ok2 := strings.Cut(path, ":")
	if r.Method != http.MethodPost || !ok || !ok2 || (method != "generateContent" && method != "streamGenerateContent") {
		apiError(w, 404, "Method not found: "+r.URL.Path)
		return
	}
	if r.Header.Get("x-goog-api-key") != f.key {
		apiError(w, 400, "API key not valid. Please pass a valid API key.")
		return
	}
	stream := method == "streamGenerateContent"
	if stream && r.URL.Query().Get("alt") != "sse" {
		apiError(w, 400, "the fake streams only as server-sent events (alt=sse)")
		return
	}
	body, _ := io.ReadAll(r.Body)
	req := fakeRequest{Model: model, Stream: stream, Body: body, Header: r.Header.Clone()}
	if err := json.Unmarshal(body, &req.Params); err != nil {
		apiError(w, 400, "Invalid JSON payload received. "+err.Error())
		return
	}
	if len(req.Params.Contents) == 0 {
		apiError(w, 400, "* GenerateContentRequest.contents: contents is not specified")
		return
	}
	for i, c := range req.Params.Contents {
		if c.Role != "user" && c.Role != "model" {
			apiError(w, 400, fmt.Sprintf("Please use a valid role: user, model. (contents[%d])", i))
			return
		}
		if i > 0 && c.Role == req.Params.Contents[i-1].Role {
			apiError(w, 400, fmt.Sprintf("contents[%d]: roles must alternate", i))
			return
		}
	}
	f.mu.Lock()
	req.N = len(f.requests) + 1
	f.requests = append(f.requests, req)
	fail := f.fail
	f.mu.Unlock()
	if fail != nil {
		if code := fail(req.N, req); code != 0 {
			apiError(w, code, "the fake's injected "+statuses[code])
			return
		}
	}
	rep := f.reply(req)
	usage := rep.Usage
	if usage == "" {
		prompt, cached := f.count(req)
		out := max(1, len(rep.Text)/4)
		cache := ""
		if cached > 0 {
			cache = fmt.Sprintf(`,"cachedContentTokenCount":%d`, cached)
		}
		usage = fmt.Sprintf(`{"promptTokenCount":%d,"candidatesTokenCount":%d,"totalTokenCount":%d%s}`, prompt, out, prompt+out, cache)
	}
	finish := rep.Finish
	if finish == "" {
		finish = "STOP"
	}
	var parts []any
	if rep.Text != "" {
		parts = append(parts, map[string]any{"text": rep.Text})
	}
	for _, c := range rep.Calls {
		parts = append(parts, map[string]any{"functionCall": map[string]any{"name": c.Name, "args": json.RawMessage(c.Args)}})
	}
	candidate := func(ps []any, finish string) map[string]any {
		c := map[string]any{"content": map[string]any{"role": "model", "parts": ps}, "index": 0}
		if finish != "" {
			c["finishReason"] = finish
		}
		return c
	}
	if !stream {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		json.NewEncoder(w).Encode(map[string]any{
			"candidates": []any{candidate(parts, finish)}, "usageMetadata": json.RawMessage(usage),
			"modelVersion": model, "responseId": fmt.Sprintf("resp%d", req.N),
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(v any) {
		data, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\r\n\r\n", data)
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	// Text in pieces, each event a partial reply with the usage so far;
	// function calls whole; the finish reason and the full usage last.
	pieces := chop(rep.Text, 9)
	for i, p := range pieces {
		ps := []any{map[string]any{"text": p}}
		if i == len(pieces)-1 {
			for _, c := range rep.Calls {
				ps = append(ps, map[string]any{"functionCall": map[string]any{"name": c.Name, "args": json.RawMessage(c.Args)}})
			}
			event(map[string]any{"candidates": []any{candidate(ps, finish)}, "usageMetadata": json.RawMessage(usage), "modelVersion": model, "responseId": fmt.Sprintf("resp%d", req.N)})
			continue
		}
		event(map[string]any{"candidates": []any{candidate(ps, "")}, "modelVersion": model, "responseId": fmt.Sprintf("resp%d", req.N)})
	}
}

func chop(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// count is a request's prompt tokens (a token per four bytes of its
// systemInstruction and contents as sent) and how many of them an earlier
// request's bytes began with (implicit caching).
func (f *fake) count(req fakeRequest) (prompt, cached int) {
	var b strings.Builder
	if si := req.Params.SystemInstruction; si != nil {
		for _, p := range si.Parts {
			b.Write(p)
		}
	}
	for _, c := range req.Params.Contents {
		for _, p := range c.Parts {
			b.Write(p)
		}
	}
	text := b.String()
	f.mu.Lock()
	defer f.mu.Unlock()
	common := 0
	for _, s := range f.seen {
		n := 0
		for n < len(s) && n < len(text) && s[n] == text[n] {
			n++
		}
		common = max(common, n)
	}
	f.seen = append(f.seen, text)
	return max(1, len(text)/4), common / 4
}
