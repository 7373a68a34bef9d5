package anthropic

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/debate-runner/runner/runtime/llm"
)

// batchesPath is where Message Batches are made, below the base URL.
const batchesPath = "/v1/messages/batches"

// apiVersion is the anthropic-version the batch requests send (the SDK
// sends the same with each message).
const apiVersion = "2023-06-01"

// BatchAPI implements llm.Batcher: Anthropic's Message Batches beside the
// endpoint's Messages API.
func (Kind) BatchAPI(req *http.Request, hc *http.Client) (llm.BatchAPI, error) {
	u := *req.URL
	path, ok := strings.CutSuffix(u.Path, messagesPath)
	if !ok {
		return nil, fmt.Errorf("batch: %s is no Messages URL", u.Path)
	}
	u.Path, u.RawPath, u.RawQuery, u.User = path, "", "", nil
	h := llm.BatchHeaders(req.Header)
	if h.Get("anthropic-version") == "" {
		h.Set("anthropic-version", apiVersion)
	}
	return &batches{site: llm.BatchSite{Base: u, Header: h, HC: hc}}, nil
}

// batches is the Message Batches API at one base URL.
type batches struct{ site llm.BatchSite }

// messageBatch is a batch as the API describes it.
type messageBatch struct {
	ID               string `json:"id"`
	ProcessingStatus string `json:"processing_status"`
	ResultsURL       string `json:"results_url"`
	RequestCounts    struct {
		Processing int `json:"processing"`
		Succeeded  int `json:"succeeded"`
		Errored    int `json:"errored"`
		Canceled   int `json:"canceled"`
		Expired    int `json:"expired"`
	} `json:"request_counts"`
}

// Submit implements llm.BatchAPI: each request translated to the Messages
// parameters it would have been sent as (never streamed), under its id.
func (b *batches) Submit(ctx context.Context, reqs []llm.BatchRequest) (string, error) {
	type request struct {
		CustomID string          `json:"custom_id"`
		Params   json.RawMessage `json:"params"`
	}
	body := struct {
		Requests []request `json:"requests"`
	}{}
	for _, r := range reqs {
		params, _, err := Translate(r.Body)
		if err != nil {
			return "", fmt.Errorf("batch request %s: %w", r.ID, err)
		}
		raw, err := json.Marshal(params)
		if err != nil {
			return "", fmt.Errorf("batch request %s: %w", r.ID, err)
		}
		body.Requests = append(body.Requests, request{r.ID, raw})
	}
	data, err := json.Marshal(body)
	if err != nil {
		return "", err
	}
	var batch messageBatch
	if _, err := b.site.Call(ctx, http.MethodPost, batchesPath, "application/json", data, &batch); err != nil {
		return "", err
	}
	if batch.ID == "" {
		return "", fmt.Errorf("POST %s: the reply names no batch", batchesPath)
	}
	return batch.ID, nil
}

// Poll implements llm.BatchAPI: the batch has ended when its processing
// status is "ended" (in_progress and canceling have not).
func (b *batches) Poll(ctx context.Context, id string) (llm.BatchState, error) {
	var batch messageBatch
	if _, err := b.site.Call(ctx, http.MethodGet, batchesPath+"/"+url.PathEscape(id), "", nil, &batch); err != nil {
		return llm.BatchState{}, err
	}
	c := batch.RequestCounts
	return llm.BatchState{
		Status: batch.ProcessingStatus, Ended: batch.ProcessingStatus == "ended",
		Done: c.Succeeded, Failed: c.Errored + c.Canceled + c.Expired,
		Total: c.Processing + c.Succeeded + c.Errored + c.Canceled + c.Expired,
	}, nil
}

// Results implements llm.BatchAPI: the lines at the batch's results_url,
// each message turned into the Chat Completions reply it would have been.
func (b *batches) Results(ctx context.Context, id string) (map[string]llm.BatchResult, error) {
	var batch messageBatch
	if _, err := b.site.Call(ctx, http.MethodGet, batchesPath+"/"+url.PathEscape(id), "", nil, &batch); err != nil {
		return nil, err
	}
	where := batch.ResultsURL
	if where == "" {
		where = b.site.URL(batchesPath + "/" + url.PathEscape(id) + "/results")
	}
	raw, err := b.site.Call(ctx, http.MethodGet, where, "", nil, nil)
	if err != nil {
		return nil, err
	}
	out := map[string]llm.BatchResult{}
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
			Result   struct {
				Type    string          `json:"type"`
				Message json.RawMessage `json:"message"`
				Error   *struct {
					Error struct {
						Type    string `json:"type"`
						Message string `json:"message"`
					} `json:"error"`
				} `json:"error"`
			} `json:"result"`
		}
		if err := json.Unmarshal(text, &line); err != nil {
			return nil, fmt.Errorf("batch %s results, line %d: %w", id, n, err)
		}
		if line.CustomID == "" {
			continue
		}
		switch line.Result.Type {
		case "succeeded":
			body, err := DecodeMessage(line.Result.Message)
			if err != nil {
				out[line.CustomID] = llm.BatchResult{Err: err.Error()}
				continue
			}
			out[line.CustomID] = llm.BatchResult{Body: body}
		case "errored":
			why := "errored"
			if e := line.Result.Error; e != nil {
				why = strings.TrimSpace(e.Error.Type + ": " + e.Error.Message)
			}
			out[line.CustomID] = llm.BatchResult{Err: why}
		default: // canceled, expired
			out[line.CustomID] = llm.BatchResult{Err: line.Result.Type}
		}
	}
	return out, sc.Err()
}
