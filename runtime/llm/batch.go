package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// BatchHeader is the header of a reply that a batching transport (package
// runtime/batch) took from a provider's batch: the batch's id. The client
// copies it into Response.Batch, and the call's reply is priced as batched.
const BatchHeader = "Runner-Batch"

// BatchSharedHeader marks a batched reply whose request another caller
// (another run of the sweep asking the same) put in the batch: the
// provider answered, and billed, the request once, for that caller. The
// client copies it into Response.BatchShared, and the reply costs nothing
// more.
const BatchSharedHeader = "Runner-Batch-Shared"

// Batcher is a provider kind with a batch API: many requests sent as one
// file, answered within a day at a lower price (`runner run --batch`).
type Batcher interface {
	// BatchAPI is the kind's batch API at the endpoint that req, one of
	// the client's requests (its URL, its key header), is addressed to,
	// reached with hc.
	BatchAPI(req *http.Request, hc *http.Client) (BatchAPI, error)
}

// BatchRequest is one request of a batch: its id in the batch, and the
// Chat Completions body the client would have sent on its own.
type BatchRequest struct {
	ID   string
	Body []byte
}

// BatchState is what a provider says of a batch it was sent.
type BatchState struct {
	// Status is the provider's own word (validating, in_progress, ended...).
	Status string
	// Ended is set once the batch will answer no more: its results can be
	// read (a batch that failed, expired or was cancelled has ended too;
	// its requests without a result are sent on their own).
	Ended bool
	// Done and Failed count the requests answered and failed so far, of
	// Total.
	Done, Failed, Total int
}

// BatchResult is one request's outcome in an ended batch: a Chat
// Completions reply body, or why the batch did not answer it (Err: errored,
// expired, cancelled), in which case the request is sent on its own.
type BatchResult struct {
	Body []byte
	Err  string
}

// BatchAPI is a provider's batch API at one endpoint.
type BatchAPI interface {
	// Submit sends the requests as one batch and returns its id.
	Submit(ctx context.Context, reqs []BatchRequest) (string, error)
	// Poll says how the batch is doing.
	Poll(ctx context.Context, id string) (BatchState, error)
	// Results are the outcomes of an ended batch's requests by their id;
	// a request missing from them was not answered.
	Results(ctx context.Context, id string) (map[string]BatchResult, error)
}

// BatchHeaders are the headers of a client's request that a batch API's
// requests carry too (the key, a gateway's headers), without those of the
// body.
func BatchHeaders(h http.Header) http.Header {
	out := http.Header{}
	for name, vs := range h {
		switch http.CanonicalHeaderKey(name) {
		case "Content-Type", "Accept", "Cache-Control", "Content-Length", "Accept-Encoding":
		default:
			out[name] = append([]string(nil), vs...)
		}
	}
	return out
}

// BatchCall makes one request of a batch API: body (nil for none) of type
// contentType, the reply's JSON decoded into out (nil: kept in raw). A
// status outside 2xx is an error with the start of the body (the key never
// appears in it: it goes in a header).
func BatchCall(ctx context.Context, hc *http.Client, method, url string, h http.Header, contentType string, body []byte, out any) (raw []byte, err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	for name, vs := range h {
		req.Header[name] = vs
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("%s %s: %w", method, req.URL.Path, errorFrom(resp))
	}
	raw, err = io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the reply: %w", method, req.URL.Path, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("%s %s: decoding the reply: %w", method, req.URL.Path, err)
		}
	}
	return raw, nil
}

// StatusOf is the HTTP status of a failed request of a batch API
// (BatchCall's errors), 0 when it got none (the network failed).
func StatusOf(err error) int {
	var ae *openai.APIError
	if errors.As(err, &ae) {
		return ae.HTTPStatusCode
	}
	var he *HTTPError
	if errors.As(err, &he) {
		return he.StatusCode
	}
	return 0
}

// BatchSite is where a batch API answers: the base URL its paths are
// below, the headers every request carries (BatchHeaders) and the client
// that reaches it. The kinds' batch APIs are only their wire format over
// it.
type BatchSite struct {
	Base   url.URL
	Header http.Header
	HC     *http.Client
}

// URL is path below the site's base URL.
func (s BatchSite) URL(path string) string {
	u := s.Base
	u.Path += path
	return u.String()
}

// Call is BatchCall to path below the site (a full URL when it has a
// scheme), with the site's headers and client.
func (s BatchSite) Call(ctx context.Context, method, path, contentType string, body []byte, out any) ([]byte, error) {
	where := path
	if !strings.Contains(path, "://") {
		where = s.URL(path)
	}
	return BatchCall(ctx, s.HC, method, where, s.Header, contentType, body, out)
}
