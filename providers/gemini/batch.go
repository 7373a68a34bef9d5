package gemini

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/runtime/llm"
)

// modelsPath is where a model's methods are, below the base URL.
const modelsPath = "/v1beta/models/"

// BatchAPI implements llm.Batcher: Gemini's batch mode beside the
// endpoint's generateContent, for the model the request names (a batch
// is one model's: the collector gathers a wave per model URL).
func (Kind) BatchAPI(req *http.Request, hc *http.Client) (llm.BatchAPI, error) {
	u := *req.URL
	i := strings.Index(u.Path, modelsPath)
	if i < 0 {
		return nil, fmt.Errorf("batch: %s is no generateContent URL", u.Path)
	}
	model, _, ok := strings.Cut(u.Path[i+len(modelsPath):], ":")
	if !ok || model == "" {
		return nil, fmt.Errorf("batch: %s names no model", u.Path)
	}
	u.Path, u.RawPath, u.RawQuery, u.User = u.Path[:i], "", "", nil
	return &batches{site: llm.BatchSite{Base: u, Header: llm.BatchHeaders(req.Header), HC: hc}, model: model}, nil
}

// batches is Gemini's batch mode for one model at one base URL.
type batches struct {
	site  llm.BatchSite
	model string
}

// operation is a batch as batchGenerateContent and batches.get describe
// it: a long-running operation whose metadata is the batch (its state and
// counts) and whose response, once done, holds the inlined responses.
type operation struct {
	Name     string `json:"name"`
	Done     bool   `json:"done"`
	Metadata struct {
		State      string `json:"state"`
		BatchStats struct {
			Requests   count `json:"requestCount"`
			Successful count `json:"successfulRequestCount"`
			Failed     count `json:"failedRequestCount"`
			Pending    count `json:"pendingRequestCount"`
		} `json:"batchStats"`
		Output *batchOutput `json:"output"`
	} `json:"metadata"`
	Response *batchOutput `json:"response"`
	Error    *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// batchOutput holds the inlined responses, in the order of the requests,
// each with the metadata it was sent with.
type batchOutput struct {
	Inlined struct {
		Responses []struct {
			Metadata struct {
				Key string `json:"key"`
			} `json:"metadata"`
			Response json.RawMessage `json:"response"`
			Error    *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"inlinedResponses"`
	} `json:"inlinedResponses"`
}

// count is an int64 as Google's JSON sends it: a string of digits (or a
// number).
type count int

func (c *count) UnmarshalJSON(b []byte) error {
	n, err := strconv.Atoi(strings.Trim(string(b), `"`))
	if err != nil {
		return fmt.Errorf("count %s: %w", b, err)
	}
	*c = count(n)
	return nil
}

// state is a batch's state without its prefix (BATCH_STATE_ in the REST
// API, JOB_STATE_ in Google's SDKs): PENDING, RUNNING, SUCCEEDED, FAILED,
// CANCELLED, EXPIRED.
func state(s string) string {
	for _, p := range []string{"BATCH_STATE_", "JOB_STATE_"} {
		s = strings.TrimPrefix(s, p)
	}
	return s
}

// Submit implements llm.BatchAPI: each request translated to the
// generateContent body it would have been sent as, inlined with its id
// as the metadata key.
func (b *batches) Submit(ctx context.Context, reqs []llm.BatchRequest) (string, error) {
	type inlined struct {
		Request  json.RawMessage   `json:"request"`
		Metadata map[string]string `json:"metadata"`
	}
	var list []inlined
	for _, r := range reqs {
		body, err := Translate(r.Body)
		if err != nil {
			return "", fmt.Errorf("batch request %s: %w", r.ID, err)
		}
		list = append(list, inlined{Request: body, Metadata: map[string]string{"key": r.ID}})
	}
	var req struct {
		Batch struct {
			DisplayName string `json:"displayName"`
			InputConfig struct {
				Requests struct {
					Requests []inlined `json:"requests"`
				} `json:"requests"`
			} `json:"inputConfig"`
		} `json:"batch"`
	}
	req.Batch.DisplayName = "runner " + reqs[0].ID
	req.Batch.InputConfig.Requests.Requests = list
	data, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	var op operation
	if _, err := b.site.Call(ctx, http.MethodPost, modelsPath+url.PathEscape(b.model)+":batchGenerateContent", "application/json", data, &op); err != nil {
		return "", err
	}
	if !strings.HasPrefix(op.Name, "batches/") {
		return "", fmt.Errorf("POST %s:batchGenerateContent: the reply names no batch (%q)", b.model, op.Name)
	}
	return op.Name, nil
}

func (b *batches) get(ctx context.Context, id string) (operation, error) {
	var op operation
	if !strings.HasPrefix(id, "batches/") {
		return op, fmt.Errorf("batch: %q is no Gemini batch name", id)
	}
	_, err := b.site.Call(ctx, http.MethodGet, "/v1beta/batches/"+url.PathEscape(strings.TrimPrefix(id, "batches/")), "", nil, &op)
	return op, err
}

// Poll implements llm.BatchAPI: the batch has ended when its operation is
// done or its state is final (SUCCEEDED, FAILED, CANCELLED, EXPIRED).
func (b *batches) Poll(ctx context.Context, id string) (llm.BatchState, error) {
	op, err := b.get(ctx, id)
	if err != nil {
		return llm.BatchState{}, err
	}
	return stateOf(op), nil
}

// stateOf is how a batch operation is doing.
func stateOf(op operation) llm.BatchState {
	s := state(op.Metadata.State)
	c := op.Metadata.BatchStats
	ended := op.Done
	switch s {
	case "SUCCEEDED", "FAILED", "CANCELLED", "EXPIRED":
		ended = true
	}
	return llm.BatchState{Status: strings.ToLower(s), Ended: ended, Done: int(c.Successful), Failed: int(c.Failed), Total: int(c.Requests)}
}

// Results implements llm.BatchAPI: the inlined responses of the done
// batch (under response, or the batch's output), each turned into the
// Chat Completions reply it would have been; a response with an error, or
// one missing (a batch that failed, expired or was cancelled), was not
// answered.
func (b *batches) Results(ctx context.Context, id string) (map[string]llm.BatchResult, error) {
	op, err := b.get(ctx, id)
	if err != nil {
		return nil, err
	}
	out := map[string]llm.BatchResult{}
	output := op.Response
	if output == nil {
		output = op.Metadata.Output
	}
	if output == nil {
		return out, nil
	}
	for i, r := range output.Inlined.Responses {
		key := r.Metadata.Key
		if key == "" {
			return nil, fmt.Errorf("batch %s: inlined response %d has no metadata key", id, i)
		}
		switch {
		case r.Error != nil:
			out[key] = llm.BatchResult{Err: fmt.Sprintf("error %d: %s", r.Error.Code, r.Error.Message)}
		case len(r.Response) == 0:
			out[key] = llm.BatchResult{Err: "no response"}
		default:
			body, err := DecodeResponse(r.Response)
			if err != nil {
				out[key] = llm.BatchResult{Err: err.Error()}
				continue
			}
			out[key] = llm.BatchResult{Body: body}
		}
	}
	return out, nil
}
