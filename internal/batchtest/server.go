// Package batchtest is a local server for tests that speaks the batch APIs
// as OpenAI, Anthropic and Gemini document them: OpenAI's Files and Batches (a JSONL
// file uploaded for purpose "batch", a batch that goes validating,
// in_progress, finalizing and ends completed, expired, failed or
// cancelled, its output and error files) and Anthropic's Message Batches
// (in_progress, canceling, ended; each request succeeded, errored,
// canceled or expired; results as JSONL at results_url) and Gemini's batch
// mode (batchGenerateContent with inlined requests, a batch operation
// PENDING, RUNNING, then SUCCEEDED, FAILED, CANCELLED or EXPIRED, its
// inlined responses with each request's key), beside each one's ordinary
// endpoint (Chat Completions, Messages, generateContent) for the requests a batch
// did not answer. It counts what it was sent and what it would bill, so
// that a test can check that no request was paid twice.
package batchtest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Outcome is what a batch does with one of its requests.
type Outcome string

// Outcomes of a request in a batch. Expired and Cancelled requests are
// those of a batch that ran out of time or was cancelled: OpenAI lists
// them in the error file, Anthropic as expired or canceled results.
const (
	Succeed Outcome = "succeeded"
	Error   Outcome = "errored"
	Expire  Outcome = "expired"
	Cancel  Outcome = "canceled"
)

// Server is the fake batch APIs. Its fields are read while it serves;
// set them before the first request, or under Lock.
type Server struct {
	URL string
	// Answer is the text of the reply to a prompt (the last user message).
	Answer func(prompt string) string
	// Outcome is what a batch does with a request (nil: Succeed).
	Outcome func(customID string) Outcome
	// Steps are how many polls a batch stays in progress before it ends
	// (0: 1).
	Steps int

	mu sync.Mutex
	// hold keeps the batches created after the first released in
	// progress until Release.
	hold     bool
	released int
	files    map[string][]byte
	oai      map[string]*oaiBatch
	ant      map[string]*antBatch
	gem      map[string]*gemBatch
	seq      int

	// Submissions counts the batches created; Submitted counts each
	// custom id across them; Billed counts each request (by its id, or
	// the digest of a request sent on its own) that was answered and so
	// paid; Direct counts the requests sent on their own; Polls the
	// polls.
	Submissions int
	Submitted   map[string]int
	Billed      map[string]int
	Direct      int
	Polls       int
}

type oaiBatch struct {
	n               int
	id, status      string
	reqs            []oaiLine
	polls           int
	output, errFile string
	final           string
}

type oaiLine struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

type antBatch struct {
	n          int
	id, status string
	reqs       []antRequest
	polls      int
	results    []byte
}

type antRequest struct {
	CustomID string          `json:"custom_id"`
	Params   json.RawMessage `json:"params"`
}

// New starts a server, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{
		files: map[string][]byte{}, oai: map[string]*oaiBatch{}, ant: map[string]*antBatch{}, gem: map[string]*gemBatch{},
		Submitted: map[string]int{}, Billed: map[string]int{},
		Answer: func(string) string { return "The answer is \\boxed{42}." },
	}
	hs := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

// Lock and Unlock guard the server's fields and counts.
func (s *Server) Lock()   { s.mu.Lock() }
func (s *Server) Unlock() { s.mu.Unlock() }

// Hold keeps every batch in progress (polls do not advance it) until
// Release.
func (s *Server) Hold() { s.mu.Lock(); s.hold, s.released = true, 0; s.mu.Unlock() }

// Release lets batches advance again.
func (s *Server) Release() { s.mu.Lock(); s.hold = false; s.mu.Unlock() }

// ReleaseExisting lets the batches created so far advance, and holds
// those created from now on.
func (s *Server) ReleaseExisting() {
	s.mu.Lock()
	s.hold, s.released = true, s.Submissions
	s.mu.Unlock()
}

// held reports whether the n-th batch created (from 1) may not advance.
func (s *Server) held(n int) bool { return s.hold && n > s.released }

// Pending is the number of batches that have not ended.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, b := range s.oai {
		if b.final == "" {
			n++
		}
	}
	for _, b := range s.ant {
		if b.status != "ended" {
			n++
		}
	}
	for _, b := range s.gem {
		if !b.done {
			n++
		}
	}
	return n
}

// TwiceBilled lists the batch requests (by custom id) billed more than
// once. Requests sent on their own are known only by their content, which
// calls of different agents may share: BilledCount counts them.
func (s *Server) TwiceBilled() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k, n := range s.Billed {
		if n > 1 && !strings.HasPrefix(k, "direct-") {
			out = append(out, fmt.Sprintf("%s (%d times)", k, n))
		}
	}
	return out
}

// BilledCount is the number of requests billed, counting repeats.
func (s *Server) BilledCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.Billed {
		n += c
	}
	return n
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/v1beta/"):
		s.serveGemini(w, r, body)
	case r.Method == http.MethodPost && p == "/v1/chat/completions":
		s.direct(w, body, false)
	case r.Method == http.MethodPost && p == "/v1/messages":
		s.direct(w, body, true)
	case r.Method == http.MethodPost && p == "/v1/files":
		s.upload(w, r, body)
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/v1/files/") && strings.HasSuffix(p, "/content"):
		s.fileContent(w, strings.TrimSuffix(strings.TrimPrefix(p, "/v1/files/"), "/content"))
	case r.Method == http.MethodPost && p == "/v1/batches":
		s.createOpenAI(w, body)
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/v1/batches/"):
		s.pollOpenAI(w, strings.TrimPrefix(p, "/v1/batches/"))
	case r.Method == http.MethodPost && p == "/v1/messages/batches":
		s.createAnthropic(w, body)
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/v1/messages/batches/") && strings.HasSuffix(p, "/results"):
		s.resultsAnthropic(w, strings.TrimSuffix(strings.TrimPrefix(p, "/v1/messages/batches/"), "/results"))
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/v1/messages/batches/"):
		s.pollAnthropic(w, r, strings.TrimPrefix(p, "/v1/messages/batches/"))
	default:
		writeError(w, http.StatusNotFound, "not_found_error", "no route "+r.Method+" "+p)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, kind, msg string) {
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]string{"type": kind, "message": msg}})
}

// prompt is the text of the last user message of a Chat Completions or
// Messages request.
func prompt(body []byte) string {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != "user" {
			continue
		}
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			return text
		}
		var parts []struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(m.Content, &parts)
		var b strings.Builder
		for _, x := range parts {
			b.WriteString(x.Text)
		}
		return b.String()
	}
	return ""
}

// tokens is a stand-in token count: one per four bytes.
func tokens(s string) int { return max(1, len(s)/4) }

func (s *Server) answer(body []byte) (text string, in, out int) {
	text = s.Answer(prompt(body))
	return text, tokens(string(body)), tokens(text)
}

// completion is a Chat Completions reply.
func (s *Server) completion(body []byte) json.RawMessage {
	text, in, out := s.answer(body)
	var req struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &req)
	data, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
		"usage":   map[string]int{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	})
	return data
}

// message is a Messages reply.
func (s *Server) message(body []byte) json.RawMessage {
	text, in, out := s.answer(body)
	var req struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &req)
	data, _ := json.Marshal(map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": req.Model,
		"content":     []any{map[string]string{"type": "text", "text": text}},
		"stop_reason": "end_turn",
		"usage":       map[string]int{"input_tokens": in, "output_tokens": out},
	})
	return data
}

// digest names a request sent on its own by its content.
func digest(body []byte) string {
	sum := sha256.Sum256(body)
	return "direct-" + hex.EncodeToString(sum[:8])
}

func (s *Server) direct(w http.ResponseWriter, body []byte, anthropic bool) {
	s.mu.Lock()
	s.Direct++
	s.Billed[digest(body)]++
	s.mu.Unlock()
	if anthropic {
		w.Header().Set("Content-Type", "application/json")
		w.Write(s.message(body))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(s.completion(body))
}

func (s *Server) nextID(prefix string) string {
	s.seq++
	return fmt.Sprintf("%s_%04d", prefix, s.seq)
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request, body []byte) {
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "not multipart")
		return
	}
	form, err := multipart.NewReader(bytes.NewReader(body), params["boundary"]).ReadForm(32 << 20)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	if v := form.Value["purpose"]; len(v) != 1 || v[0] != "batch" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "purpose must be batch")
		return
	}
	fh := form.File["file"]
	if len(fh) != 1 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "no file")
		return
	}
	f, _ := fh[0].Open()
	data, _ := io.ReadAll(f)
	f.Close()
	s.mu.Lock()
	id := s.nextID("file")
	s.files[id] = data
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "file", "purpose": "batch", "bytes": len(data), "filename": fh[0].Filename})
}

func (s *Server) fileContent(w http.ResponseWriter, id string) {
	s.mu.Lock()
	data, ok := s.files[id]
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "invalid_request_error", "no file "+id)
		return
	}
	w.Header().Set("Content-Type", "application/jsonl")
	w.Write(data)
}

func (s *Server) createOpenAI(w http.ResponseWriter, body []byte) {
	var req struct {
		InputFileID      string `json:"input_file_id"`
		Endpoint         string `json:"endpoint"`
		CompletionWindow string `json:"completion_window"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Endpoint != "/v1/chat/completions" || req.CompletionWindow != "24h" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "bad batch: "+string(body))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.files[req.InputFileID]
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "no file "+req.InputFileID)
		return
	}
	b := &oaiBatch{id: s.nextID("batch"), status: "validating"}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for sc.Scan() {
		var l oaiLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Method != "POST" || l.URL != req.Endpoint || seen[l.CustomID] {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "bad line: "+sc.Text())
			return
		}
		if bytes.Contains(l.Body, []byte(`"stream"`)) {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "stream is not supported in batches")
			return
		}
		seen[l.CustomID] = true
		b.reqs = append(b.reqs, l)
	}
	s.Submissions++
	b.n = s.Submissions
	for _, l := range b.reqs {
		s.Submitted[l.CustomID]++
	}
	s.oai[b.id] = b
	writeJSON(w, http.StatusOK, s.oaiObject(b))
}

func (s *Server) oaiObject(b *oaiBatch) map[string]any {
	done, failed := 0, 0
	if b.final != "" {
		for _, l := range b.reqs {
			if s.outcome(l.CustomID) == Succeed && b.final == "completed" {
				done++
			} else {
				failed++
			}
		}
	}
	o := map[string]any{
		"id": b.id, "object": "batch", "endpoint": "/v1/chat/completions", "status": b.status, "completion_window": "24h",
		"request_counts": map[string]int{"total": len(b.reqs), "completed": done, "failed": failed},
	}
	if b.output != "" {
		o["output_file_id"] = b.output
	}
	if b.errFile != "" {
		o["error_file_id"] = b.errFile
	}
	return o
}

func (s *Server) outcome(id string) Outcome {
	if s.Outcome == nil {
		return Succeed
	}
	return s.Outcome(id)
}

// finalOf is how a batch whose requests have these outcomes ends: expired
// when any expired, cancelled when any was cancelled, else completed
// (errored requests are part of a completed batch).
func (s *Server) finalOf(ids []string) string {
	final := "completed"
	for _, id := range ids {
		switch s.outcome(id) {
		case Expire:
			return "expired"
		case Cancel:
			final = "cancelled"
		}
	}
	return final
}

func (s *Server) pollOpenAI(w http.ResponseWriter, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Polls++
	b, ok := s.oai[id]
	if !ok {
		writeError(w, http.StatusNotFound, "invalid_request_error", "no batch "+id)
		return
	}
	if !s.held(b.n) && b.final == "" {
		b.polls++
		switch {
		case b.status == "validating":
			b.status = "in_progress"
		case b.status == "in_progress" && b.polls > max(s.Steps, 1):
			b.status = "finalizing"
		case b.status == "finalizing":
			s.endOpenAI(b)
		}
	}
	writeJSON(w, http.StatusOK, s.oaiObject(b))
}

// endOpenAI ends a batch: answered requests in its output file (billed),
// the others in its error file. A batch that expired or was cancelled
// answers the requests that had succeeded before it ended.
func (s *Server) endOpenAI(b *oaiBatch) {
	ids := make([]string, len(b.reqs))
	for i, l := range b.reqs {
		ids[i] = l.CustomID
	}
	b.final = s.finalOf(ids)
	b.status = b.final
	var out, errs bytes.Buffer
	for _, l := range b.reqs {
		line := map[string]any{"id": "batch_req_" + l.CustomID, "custom_id": l.CustomID}
		switch o := s.outcome(l.CustomID); o {
		case Succeed:
			s.Billed[l.CustomID]++
			line["response"] = map[string]any{"status_code": 200, "request_id": "req_" + l.CustomID, "body": s.completion(l.Body)}
			line["error"] = nil
			enc(&out, line)
		case Error:
			line["response"] = map[string]any{"status_code": 400, "request_id": "req_" + l.CustomID, "body": map[string]any{"error": map[string]string{"message": "fake refusal", "type": "invalid_request_error"}}}
			line["error"] = nil
			enc(&errs, line)
		default:
			line["response"] = nil
			code := "batch_expired"
			if o == Cancel {
				code = "batch_cancelled"
			}
			line["error"] = map[string]string{"code": code, "message": "This request could not be executed before the batch " + string(o) + "."}
			enc(&errs, line)
		}
	}
	if out.Len() > 0 {
		b.output = s.nextID("file")
		s.files[b.output] = out.Bytes()
	}
	if errs.Len() > 0 {
		b.errFile = s.nextID("file")
		s.files[b.errFile] = errs.Bytes()
	}
}

func enc(w *bytes.Buffer, v any) {
	data, _ := json.Marshal(v)
	w.Write(data)
	w.WriteByte('\n')
}

func (s *Server) createAnthropic(w http.ResponseWriter, body []byte) {
	var req struct {
		Requests []antRequest `json:"requests"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Requests) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "bad batch")
		return
	}
	seen := map[string]bool{}
	for _, r := range req.Requests {
		var p struct {
			Model     string `json:"model"`
			MaxTokens int    `json:"max_tokens"`
			Stream    *bool  `json:"stream"`
		}
		if err := json.Unmarshal(r.Params, &p); err != nil || p.Model == "" || p.MaxTokens <= 0 || p.Stream != nil || seen[r.CustomID] || r.CustomID == "" || len(r.CustomID) > 64 {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "bad request in batch: "+string(r.Params))
			return
		}
		seen[r.CustomID] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := &antBatch{id: s.nextID("msgbatch"), status: "in_progress", reqs: req.Requests}
	s.Submissions++
	b.n = s.Submissions
	for _, r := range b.reqs {
		s.Submitted[r.CustomID]++
	}
	s.ant[b.id] = b
	writeJSON(w, http.StatusOK, s.antObject(b, ""))
}

func (s *Server) antObject(b *antBatch, host string) map[string]any {
	counts := map[string]int{"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
	for _, r := range b.reqs {
		if b.status != "ended" {
			counts["processing"]++
			continue
		}
		counts[string(s.outcome(r.CustomID))]++
	}
	o := map[string]any{"id": b.id, "type": "message_batch", "processing_status": b.status, "request_counts": counts, "results_url": nil}
	if b.status == "ended" && host != "" {
		o["results_url"] = "http://" + host + "/v1/messages/batches/" + b.id + "/results"
	}
	return o
}

func (s *Server) pollAnthropic(w http.ResponseWriter, r *http.Request, id string) {
	if r.Header.Get("anthropic-version") == "" || r.Header.Get("x-api-key") == "" {
		writeError(w, http.StatusUnauthorized, "authentication_error", "missing anthropic-version or x-api-key")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Polls++
	b, ok := s.ant[id]
	if !ok {
		writeError(w, http.StatusNotFound, "not_found_error", "no batch "+id)
		return
	}
	if !s.held(b.n) && b.status != "ended" {
		b.polls++
		switch {
		case b.status == "in_progress" && b.polls > max(s.Steps, 1):
			b.status = "canceling"
			ids := make([]string, len(b.reqs))
			for i, r := range b.reqs {
				ids[i] = r.CustomID
			}
			if s.finalOf(ids) != "cancelled" {
				s.endAnthropic(b)
			}
		case b.status == "canceling":
			s.endAnthropic(b)
		}
	}
	writeJSON(w, http.StatusOK, s.antObject(b, r.Host))
}

func (s *Server) endAnthropic(b *antBatch) {
	b.status = "ended"
	var out bytes.Buffer
	for _, r := range b.reqs {
		var result any
		switch o := s.outcome(r.CustomID); o {
		case Succeed:
			s.Billed[r.CustomID]++
			result = map[string]any{"type": "succeeded", "message": s.message(r.Params)}
		case Error:
			result = map[string]any{"type": "errored", "error": map[string]any{"type": "error", "error": map[string]string{"type": "invalid_request_error", "message": "fake refusal"}}}
		default:
			result = map[string]any{"type": string(o)}
		}
		enc(&out, map[string]any{"custom_id": r.CustomID, "result": result})
	}
	b.results = out.Bytes()
}

func (s *Server) resultsAnthropic(w http.ResponseWriter, id string) {
	s.mu.Lock()
	b, ok := s.ant[id]
	var data []byte
	ended := false
	if ok {
		data, ended = b.results, b.status == "ended"
	}
	s.mu.Unlock()
	if !ended {
		writeError(w, http.StatusNotFound, "not_found_error", "no results for "+id)
		return
	}
	w.Header().Set("Content-Type", "application/binary")
	w.Write(data)
}
