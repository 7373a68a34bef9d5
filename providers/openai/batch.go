package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"

	"github.com/debate-runner/runner/runtime/llm"
)

// BatchAPI implements llm.Batcher: OpenAI's Batch API beside the endpoint's
// Chat Completions (BASE/files, BASE/batches).
func (Kind) BatchAPI(req *http.Request, hc *http.Client) (llm.BatchAPI, error) {
	u := *req.URL
	path, ok := strings.CutSuffix(u.Path, "/chat/completions")
	if !ok {
		return nil, fmt.Errorf("batch: %s is no Chat Completions URL", u.Path)
	}
	u.Path, u.RawPath, u.RawQuery, u.User = path, "", "", nil
	// The batch file names the endpoint by its path from the host:
	// /v1/chat/completions at OpenAI.
	return &batches{site: llm.BatchSite{Base: u, Header: llm.BatchHeaders(req.Header), HC: hc}, endpoint: path + "/chat/completions"}, nil
}

// batches is OpenAI's Batch API at one base URL.
type batches struct {
	site     llm.BatchSite
	endpoint string
}

// batchObject is a batch as the API describes it.
type batchObject struct {
	ID            string `json:"id"`
	Status        string `json:"status"`
	OutputFileID  string `json:"output_file_id"`
	ErrorFileID   string `json:"error_file_id"`
	RequestCounts struct {
		Total     int `json:"total"`
		Completed int `json:"completed"`
		Failed    int `json:"failed"`
	} `json:"request_counts"`
}

// Submit implements llm.BatchAPI: the requests as a JSONL file uploaded
// for purpose "batch", then a batch of it with a 24-hour window.
func (b *batches) Submit(ctx context.Context, reqs []llm.BatchRequest) (string, error) {
	var file bytes.Buffer
	for _, r := range reqs {
		body, err := unstreamed(r.Body)
		if err != nil {
			return "", fmt.Errorf("batch request %s: %w", r.ID, err)
		}
		line, err := json.Marshal(struct {
			CustomID string          `json:"custom_id"`
			Method   string          `json:"method"`
			URL      string          `json:"url"`
			Body     json.RawMessage `json:"body"`
		}{r.ID, http.MethodPost, b.endpoint, body})
		if err != nil {
			return "", err
		}
		file.Write(line)
		file.WriteByte('\n')
	}
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	if err := mw.WriteField("purpose", "batch"); err != nil {
		return "", err
	}
	fw, err := mw.CreateFormFile("file", "requests.jsonl")
	if err != nil {
		return "", err
	}
	fw.Write(file.Bytes())
	if err := mw.Close(); err != nil {
		return "", err
	}
	var uploaded struct {
		ID string `json:"id"`
	}
	if _, err := b.site.Call(ctx, http.MethodPost, "/files", mw.FormDataContentType(), form.Bytes(), &uploaded); err != nil {
		return "", err
	}
	create, _ := json.Marshal(map[string]any{
		"input_file_id": uploaded.ID, "endpoint": b.endpoint, "completion_window": "24h",
		"metadata": map[string]string{"made_by": "runner"},
	})
	var batch batchObject
	if _, err := b.site.Call(ctx, http.MethodPost, "/batches", "application/json", create, &batch); err != nil {
		return "", err
	}
	if batch.ID == "" {
		return "", fmt.Errorf("POST /batches: the reply names no batch")
	}
	return batch.ID, nil
}

// unstreamed is a request body without streaming, which a batch does not
// take.
func unstreamed(body []byte) (json.RawMessage, error) {
	if !bytes.Contains(body, []byte(`"stream`)) {
		return body, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	delete(m, "stream")
	delete(m, "stream_options")
	return json.Marshal(m)
}

// Poll implements llm.BatchAPI: the batch has ended once completed,
// failed, expired or cancelled.
func (b *batches) Poll(ctx context.Context, id string) (llm.BatchState, error) {
	var batch batchObject
	if _, err := b.site.Call(ctx, http.MethodGet, "/batches/"+url.PathEscape(id), "", nil, &batch); err != nil {
		return llm.BatchState{}, err
	}
	return stateOf(&batch), nil
}

func stateOf(batch *batchObject) llm.BatchState {
	st := llm.BatchState{Status: batch.Status, Done: batch.RequestCounts.Completed, Failed: batch.RequestCounts.Failed, Total: batch.RequestCounts.Total}
	switch batch.Status {
	case "completed", "failed", "expired", "cancelled":
		st.Ended = true
	}
	return st
}

// Results implements llm.BatchAPI: the lines of the batch's output file
// (answered requests) and of its error file (requests that failed or
// expired).
func (b *batches) Results(ctx context.Context, id string) (map[string]llm.BatchResult, error) {
	var batch batchObject
	if _, err := b.site.Call(ctx, http.MethodGet, "/batches/"+url.PathEscape(id), "", nil, &batch); err != nil {
		return nil, err
	}
	out := map[string]llm.BatchResult{}
	for _, file := range []string{batch.OutputFileID, batch.ErrorFileID} {
		if file == "" {
			continue
		}
		raw, err := b.site.Call(ctx, http.MethodGet, "/files/"+url.PathEscape(file)+"/content", "", nil, nil)
		if err != nil {
			return nil, err
		}
		if err := readOutput(raw, out); err != nil {
			return nil, fmt.Errorf("batch %s, file %s: %w", id, file, err)
		}
	}
	return out, nil
}

// readOutput reads a batch output or error file: one line per request,
// its response (status and body) or its error.
func readOutput(raw []byte, out map[string]llm.BatchResult) error {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64*1024), len(raw)+1)
	n := 0
	for sc.Scan() {
		n++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var line struct {
			CustomID string `json:"custom_id"`
			Response *struct {
				StatusCode int             `json:"status_code"`
				Body       json.RawMessage `json:"body"`
			} `json:"response"`
			Error *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(text, &line); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if line.CustomID == "" {
			continue
		}
		switch {
		case line.Response != nil && line.Response.StatusCode == http.StatusOK && line.Error == nil:
			out[line.CustomID] = llm.BatchResult{Body: line.Response.Body}
		case line.Error != nil:
			out[line.CustomID] = llm.BatchResult{Err: strings.TrimSpace(line.Error.Code + ": " + line.Error.Message)}
		case line.Response != nil:
			out[line.CustomID] = llm.BatchResult{Err: fmt.Sprintf("status %d: %s", line.Response.StatusCode, snippet(line.Response.Body))}
		default:
			out[line.CustomID] = llm.BatchResult{Err: "no response"}
		}
	}
	return sc.Err()
}

func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
