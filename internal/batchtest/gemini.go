package batchtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// gemBatch is a Gemini batch: its requests, state and, once done, its
// inlined responses.
type gemBatch struct {
	n         int
	name      string
	model     string
	state     string
	done      bool
	keys      []string
	reqs      []json.RawMessage
	polls     int
	responses []any
}

// Gemini's states, as its REST API names them.
const (
	gemPending   = "BATCH_STATE_PENDING"
	gemRunning   = "BATCH_STATE_RUNNING"
	gemSucceeded = "BATCH_STATE_SUCCEEDED"
	gemCancelled = "BATCH_STATE_CANCELLED"
	gemExpired   = "BATCH_STATE_EXPIRED"
)

func gemError(w http.ResponseWriter, code int, status, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{"code": code, "message": msg, "status": status}})
}

// serveGemini answers below /v1beta/: a model's generateContent (a
// request sent on its own) and batchGenerateContent, and batches.get.
func (s *Server) serveGemini(w http.ResponseWriter, r *http.Request, body []byte) {
	if r.Header.Get("x-goog-api-key") == "" {
		gemError(w, http.StatusForbidden, "PERMISSION_DENIED", "Method doesn't allow unregistered callers. Please use an API key.")
		return
	}
	p := r.URL.Path
	if rest, ok := strings.CutPrefix(p, "/v1beta/models/"); ok && r.Method == http.MethodPost {
		model, method, _ := strings.Cut(rest, ":")
		switch method {
		case "generateContent":
			s.mu.Lock()
			s.Direct++
			s.Billed[digest(body)]++
			s.mu.Unlock()
			writeJSON(w, http.StatusOK, json.RawMessage(s.generated(body, model)))
			return
		case "batchGenerateContent":
			s.createGemini(w, model, body)
			return
		}
	}
	if id, ok := strings.CutPrefix(p, "/v1beta/batches/"); ok && r.Method == http.MethodGet {
		s.pollGemini(w, "batches/"+id)
		return
	}
	gemError(w, http.StatusNotFound, "NOT_FOUND", "no route "+r.Method+" "+p)
}

// geminiPrompt is the text of the last user turn of a generateContent
// request.
func geminiPrompt(body []byte) string {
	var req struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"contents"`
	}
	_ = json.Unmarshal(body, &req)
	for i := len(req.Contents) - 1; i >= 0; i-- {
		if c := req.Contents[i]; c.Role == "user" {
			var b strings.Builder
			for _, p := range c.Parts {
				b.WriteString(p.Text)
			}
			return b.String()
		}
	}
	return ""
}

// generated is a generateContent reply.
func (s *Server) generated(body []byte, model string) []byte {
	text := s.Answer(geminiPrompt(body))
	in, out := tokens(string(body)), tokens(text)
	data, _ := json.Marshal(map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]string{"text": text}}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]int{"promptTokenCount": in, "candidatesTokenCount": out, "totalTokenCount": in + out},
		"modelVersion":  model, "responseId": "resp-fake",
	})
	return data
}

func (s *Server) createGemini(w http.ResponseWriter, model string, body []byte) {
	var req struct {
		Batch struct {
			DisplayName string `json:"displayName"`
			InputConfig struct {
				Requests struct {
					Requests []struct {
						Request  json.RawMessage `json:"request"`
						Metadata struct {
							Key string `json:"key"`
						} `json:"metadata"`
					} `json:"requests"`
				} `json:"requests"`
			} `json:"inputConfig"`
		} `json:"batch"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Batch.DisplayName == "" || len(req.Batch.InputConfig.Requests.Requests) == 0 {
		gemError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "* BatchGenerateContentRequest.batch: displayName and inputConfig are required")
		return
	}
	b := &gemBatch{model: model, state: gemPending}
	seen := map[string]bool{}
	for i, r := range req.Batch.InputConfig.Requests.Requests {
		var gr struct {
			Contents []json.RawMessage `json:"contents"`
		}
		if err := json.Unmarshal(r.Request, &gr); err != nil || len(gr.Contents) == 0 || r.Metadata.Key == "" || seen[r.Metadata.Key] {
			gemError(w, http.StatusBadRequest, "INVALID_ARGUMENT", fmt.Sprintf("* requests[%d]: a request with contents and a key of its own is required", i))
			return
		}
		seen[r.Metadata.Key] = true
		b.keys = append(b.keys, r.Metadata.Key)
		b.reqs = append(b.reqs, r.Request)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Submissions++
	b.n = s.Submissions
	b.name = "batches/" + strconv.Itoa(1000+s.Submissions)
	for _, k := range b.keys {
		s.Submitted[k]++
	}
	s.gem[b.name] = b
	writeJSON(w, http.StatusOK, s.gemOperation(b))
}

// gemOperation is the batch as an operation: its metadata the batch with
// its state and counts (int64s as strings), and once done its inlined
// responses.
func (s *Server) gemOperation(b *gemBatch) map[string]any {
	stats := map[string]string{"requestCount": strconv.Itoa(len(b.keys))}
	if b.done {
		ok, failed := 0, 0
		for _, k := range b.keys {
			if s.outcome(k) == Succeed && b.state == gemSucceeded {
				ok++
			} else {
				failed++
			}
		}
		stats["successfulRequestCount"], stats["failedRequestCount"] = strconv.Itoa(ok), strconv.Itoa(failed)
	} else {
		stats["pendingRequestCount"] = strconv.Itoa(len(b.keys))
	}
	meta := map[string]any{
		"@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
		"name":  b.name, "displayName": "runner", "model": "models/" + b.model, "state": b.state, "batchStats": stats,
	}
	op := map[string]any{"name": b.name, "metadata": meta, "done": b.done}
	if b.done && b.responses != nil {
		op["response"] = map[string]any{
			"@type":            "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatchOutput",
			"inlinedResponses": map[string]any{"inlinedResponses": b.responses},
		}
	}
	return op
}

// pollGemini advances a batch that is not held: PENDING, RUNNING for
// Steps polls, then done.
func (s *Server) pollGemini(w http.ResponseWriter, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Polls++
	b, ok := s.gem[name]
	if !ok {
		gemError(w, http.StatusNotFound, "NOT_FOUND", "Requested entity was not found: "+name)
		return
	}
	if !s.held(b.n) && !b.done {
		b.polls++
		switch {
		case b.state == gemPending:
			b.state = gemRunning
		case b.polls > max(s.Steps, 1):
			s.endGemini(b)
		}
	}
	writeJSON(w, http.StatusOK, s.gemOperation(b))
}

// endGemini ends a batch as its requests' outcomes say: expired when any
// expired, cancelled when any was (a cancelled or expired batch answers
// none of its requests), else succeeded, with an error for each errored
// request.
func (s *Server) endGemini(b *gemBatch) {
	b.done = true
	switch s.finalOf(b.keys) {
	case "expired":
		b.state = gemExpired
		return
	case "cancelled":
		b.state = gemCancelled
		return
	}
	b.state = gemSucceeded
	for i, k := range b.keys {
		meta := map[string]string{"key": k}
		if s.outcome(k) != Succeed {
			b.responses = append(b.responses, map[string]any{"metadata": meta, "error": map[string]any{"code": 400, "message": "fake refusal", "status": "INVALID_ARGUMENT"}})
			continue
		}
		s.Billed[k]++
		b.responses = append(b.responses, map[string]any{"metadata": meta, "response": json.RawMessage(s.generated(b.reqs[i], b.model))})
	}
}
