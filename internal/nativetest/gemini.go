package nativetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// The gemini server speaks Gemini's generateContent as its documentation
// describes it: POST /v1beta/models/MODEL:generateContent (or
// :streamGenerateContent?alt=sse, answered as server-sent events of
// partial replies) with the key in x-goog-api-key; errors as
// {"error": {"code", "message", "status"}} (400 INVALID_ARGUMENT, 403
// PERMISSION_DENIED, 404 NOT_FOUND, 429 RESOURCE_EXHAUSTED with
// Retry-After, 500 INTERNAL, 503 UNAVAILABLE); implicit caching: the part
// of a request's contents that an earlier request of the same model began
// with is reported as cachedContentTokenCount.

var geminiStatuses = map[int]string{400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}

func geminiError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	if code == 429 {
		w.Header().Set("Retry-After", "2")
	}
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"error":{"code":%d,"message":%q,"status":%q}}`, code, msg, geminiStatuses[code])
}

func (f *Server) gemini(w http.ResponseWriter, r *http.Request) {
	path, ok := strings.CutPrefix(r.URL.Path, "/v1beta/models/")
	model, method, ok2 := strings.Cut(path, ":")
	if r.Method != http.MethodPost || !ok || !ok2 || (method != "generateContent" && method != "streamGenerateContent") {
		geminiError(w, 404, "Method not found: "+r.URL.Path)
		return
	}
	if r.Header.Get("x-goog-api-key") != f.key {
		geminiError(w, 400, "API key not valid. Please pass a valid API key.")
		return
	}
	stream := method == "streamGenerateContent"
	if stream && r.URL.Query().Get("alt") != "sse" {
		geminiError(w, 400, "the fake streams only as server-sent events (alt=sse)")
		return
	}
	body, _ := io.ReadAll(r.Body)
	req := Request{Model: model, Stream: stream, Body: body, Header: r.Header.Clone()}
	if err := json.Unmarshal(body, &req.Params); err != nil {
		geminiError(w, 400, "Invalid JSON payload received. "+err.Error())
		return
	}
	if len(req.Params.Contents) == 0 {
		geminiError(w, 400, "* GenerateContentRequest.contents: contents is not specified")
		return
	}
	for i, c := range req.Params.Contents {
		if c.Role != "user" && c.Role != "model" {
			geminiError(w, 400, fmt.Sprintf("Please use a valid role: user, model. (contents[%d])", i))
			return
		}
		if i > 0 && c.Role == req.Params.Contents[i-1].Role {
			geminiError(w, 400, fmt.Sprintf("contents[%d]: roles must alternate", i))
			return
		}
	}
	if status, hang := f.log(&req); hang {
		<-r.Context().Done()
		return
	} else if status != 0 {
		geminiError(w, status, "the fake's injected "+geminiStatuses[status])
		return
	}
	rep := f.Reply(req)
	usage := rep.Usage
	if usage == "" {
		prompt, cached := f.geminiCount(req)
		out := max(1, len(rep.Text)/4)
		cache := ""
		if cached > 0 {
			cache = fmt.Sprintf(`,"cachedContentTokenCount":%d`, cached)
		}
		usage = fmt.Sprintf(`{"promptTokenCount":%d,"candidatesTokenCount":%d,"totalTokenCount":%d%s}`, prompt, out, prompt+out, cache)
	}
	finish := rep.Stop
	if finish == "" {
		finish = "STOP"
	}
	var parts []any
	if rep.Text != "" {
		parts = append(parts, map[string]any{"text": rep.Text})
	}
	for _, c := range rep.Tools {
		parts = append(parts, map[string]any{"functionCall": map[string]any{"name": c.Name, "args": json.RawMessage(c.Input)}})
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
			for _, c := range rep.Tools {
				ps = append(ps, map[string]any{"functionCall": map[string]any{"name": c.Name, "args": json.RawMessage(c.Input)}})
			}
			event(map[string]any{"candidates": []any{candidate(ps, finish)}, "usageMetadata": json.RawMessage(usage), "modelVersion": model, "responseId": fmt.Sprintf("resp%d", req.N)})
			continue
		}
		event(map[string]any{"candidates": []any{candidate(ps, "")}, "modelVersion": model, "responseId": fmt.Sprintf("resp%d", req.N)})
	}
}

// count is a request's prompt tokens (a token per four bytes of its
// systemInstruction and contents as sent) and how many of them an earlier
// request's bytes began with (implicit caching).
func (f *Server) geminiCount(req Request) (prompt, cached int) {
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
