// Package llm is the runtime's model client: Chat Completions through
// github.com/sashabaranov/go-openai against any OpenAI-compatible base URL
// (OpenAI, OpenRouter, Azure's /openai/v1, Ollama, vLLM, ...), with the
// per-endpoint concurrency, request-rate and token-rate limits, per-attempt
// timeouts and retries that a long multi-agent run needs.
//
// One Client is meant per configured endpoint: its limits are shared by every
// goroutine that calls Complete on it, and by nothing else.
package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"golang.org/x/time/rate"
)

// Defaults applied by New to zero fields of an Endpoint.
const (
	DefaultTimeout     = 120 * time.Second
	DefaultBackoffBase = 500 * time.Millisecond
	DefaultBackoffMax  = 30 * time.Second
	// DefaultCompletionEstimate is the completion size assumed by the
	// tokens-per-minute limiter when a request sets no MaxTokens.
	DefaultCompletionEstimate = 512
)

// Endpoint describes one OpenAI-compatible server and the limits the client
// must keep towards it.
type Endpoint struct {
	Name    string
	BaseURL string // e.g. https://api.openai.com/v1 or http://localhost:11434/v1
	// APIKey is sent as "Authorization: Bearer <key>". It is never logged and
	// never put into errors or events; empty sends no Authorization header
	// (see IsLocal).
	APIKey string `json:"-"`
	// MaxConcurrency bounds in-flight requests; 0 means unlimited.
	MaxConcurrency int
	// RequestsPerMinute is a token bucket shared by all callers of the
	// client; 0 means unlimited. Its burst is one second's worth (at least
	// one request), because providers enforce per-minute limits over
	// shorter windows and a full minute's burst would invite 429s.
	RequestsPerMinute int
	// TokensPerMinute limits estimated prompt+completion tokens; 0 means
	// unlimited. Each attempt reserves its estimate before it is sent; when
	// the reported usage turns out larger, the excess is charged afterwards.
	TokensPerMinute int
	// Timeout bounds one attempt, streaming included; 0 means 120s.
	Timeout time.Duration
	// MaxRetries is the number of attempts after the first on retryable
	// errors; 0 (or negative) means none.
	MaxRetries int
	// BackoffBase and BackoffMax shape the exponential backoff with full
	// jitter: the wait before retry n is uniform in [0, min(BackoffMax,
	// BackoffBase*2^(n-1))). Zero values mean 500ms and 30s.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// Headers are extra request headers (OpenRouter's HTTP-Referer and
	// X-Title, a gateway's routing header, ...).
	Headers map[string]string `json:"-"`
	// HTTPClient is used for all requests when set; it is not modified.
	HTTPClient *http.Client `json:"-"`

	// Sleep waits between attempts; tests inject it to observe waits
	// without spending them. nil means a timer that honours ctx.
	Sleep func(ctx context.Context, d time.Duration) error `json:"-"`
	// Rand returns a jitter factor in [0, 1); nil means math/rand/v2.
	Rand func() float64 `json:"-"`
}

// String describes the endpoint without its key, so that printing an
// Endpoint with %v or %+v cannot leak the secret.
func (e Endpoint) String() string {
	key := "none"
	if e.APIKey != "" {
		key = "set"
	}
	return fmt.Sprintf("llm.Endpoint{Name:%q BaseURL:%q APIKey:%s MaxConcurrency:%d RequestsPerMinute:%d TokensPerMinute:%d Timeout:%s MaxRetries:%d}",
		e.Name, e.BaseURL, key, e.MaxConcurrency, e.RequestsPerMinute, e.TokensPerMinute, e.Timeout, e.MaxRetries)
}

// GoString is String, so that %#v does not leak the key either.
func (e Endpoint) GoString() string { return e.String() }

// Message is one chat message sent to the model.
type Message struct {
	Role       string // system, user, assistant or tool
	Content    string
	Name       string
	ToolCallID string     // for Role "tool": the call being answered
	ToolCalls  []ToolCall // for Role "assistant": calls the model made earlier
}

// ToolCall is a function call made by the model.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON text, as produced by the model
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema of the arguments; empty means no arguments
}

// Request is one chat completion to perform.
type Request struct {
	Model       string
	Messages    []Message
	Temperature *float64 // nil leaves the server default
	TopP        *float64 // nil leaves the server default
	MaxTokens   int      // 0 leaves the server default
	Seed        *int
	Tools       []Tool
	JSONMode    bool // response_format {"type":"json_object"}
	// Stream uses the streaming API and reassembles content, tool calls and
	// usage (stream_options.include_usage) into the same Response a
	// non-streaming call returns.
	Stream bool
	// OnDelta, when set with Stream, receives text deltas as they arrive,
	// for live progress. Deltas of an attempt that later fails have already
	// been delivered; the retried attempt starts its text from the beginning.
	OnDelta func(string)
}

// Response is the result of a successful completion.
type Response struct {
	Content          string
	ToolCalls        []ToolCall
	FinishReason     string
	Model            string // as reported by the server
	PromptTokens     int
	CompletionTokens int
	Latency          time.Duration // of the successful attempt
	Attempts         int           // 1 + retries
}

// Attempt describes one failed attempt that is about to be retried, for the
// journal. Err is already redacted of the API key.
type Attempt struct {
	N         int // 1-based number of the failed attempt
	Err       error
	Status    int // HTTP status of the response, 0 if none arrived
	Retryable bool
	Wait      time.Duration // how long the client waits before the next attempt
}

// Client performs chat completions against one endpoint. It is safe for
// concurrent use; its limits are shared by all callers.
type Client struct {
	name      string
	key       string
	api       *openai.Client
	urlErr    error // a BaseURL that can never work, reported by every call
	timeout   time.Duration
	retries   int
	base, max time.Duration
	sleep     func(context.Context, time.Duration) error
	rand      func() float64

	slots chan struct{} // nil when MaxConcurrency is unlimited
	rpm   *rate.Limiter // nil when unlimited
	tpm   *rate.Limiter // nil when unlimited
}

// New returns a client for ep, filling defaults for zero fields. A BaseURL
// that is not an absolute http(s) URL is reported by every Complete call.
func New(ep Endpoint) *Client {
	c := &Client{
		name:    ep.Name,
		key:     ep.APIKey,
		timeout: ep.Timeout,
		retries: max(ep.MaxRetries, 0),
		base:    ep.BackoffBase,
		max:     ep.BackoffMax,
		sleep:   ep.Sleep,
		rand:    ep.Rand,
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.base <= 0 {
		c.base = DefaultBackoffBase
	}
	if c.max <= 0 {
		c.max = DefaultBackoffMax
	}
	if c.sleep == nil {
		c.sleep = sleepContext
	}
	if c.rand == nil {
		c.rand = rand.Float64
	}
	if ep.MaxConcurrency > 0 {
		c.slots = make(chan struct{}, ep.MaxConcurrency)
	}
	if ep.RequestsPerMinute > 0 {
		c.rpm = rate.NewLimiter(rate.Limit(ep.RequestsPerMinute)/60, max(1, ep.RequestsPerMinute/60))
	}
	if ep.TokensPerMinute > 0 {
		c.tpm = rate.NewLimiter(rate.Limit(ep.TokensPerMinute)/60, ep.TokensPerMinute)
	}
	if u, err := url.Parse(ep.BaseURL); err != nil {
		c.urlErr = fmt.Errorf("invalid base URL: %w", err)
	} else if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		c.urlErr = fmt.Errorf("base URL %q is not an absolute http(s) URL", ep.BaseURL)
	}

	hc := ep.HTTPClient
	if hc == nil {
		// The default transport keeps only two idle connections per host,
		// which would make every burst of concurrent calls redial.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = max(ep.MaxConcurrency, 64)
		hc = &http.Client{Transport: tr}
	}
	cfg := openai.DefaultConfig(ep.APIKey) // go-openai omits Authorization for an empty key
	cfg.BaseURL = ep.BaseURL
	cfg.HTTPClient = &recordingDoer{client: hc, headers: ep.Headers}
	c.api = openai.NewClientWithConfig(cfg)
	return c
}

// Complete performs req, retrying retryable failures up to the endpoint's
// MaxRetries. onRetry, if not nil, is called after each failed attempt that
// will be retried, before the wait. A failure is always an *Error.
func (c *Client) Complete(ctx context.Context, req Request, onRetry func(Attempt)) (Response, error) {
	if c.urlErr != nil {
		return Response{}, c.fail(&req, 0, 0, false, c.urlErr)
	}
	creq := buildRequest(&req)
	cost := estimateTokens(&req)
	var last *attemptState // of the previous failed attempt, for errors while waiting
	for n := 1; ; n++ {
		if err := c.admit(ctx, cost); err != nil {
			return Response{}, c.failWaiting(&req, n-1, last, err)
		}
		st := &attemptState{}
		resp, err := c.attempt(ctx, st, creq, req.OnDelta)
		c.release()
		if err == nil {
			c.settleTokens(cost, resp.PromptTokens+resp.CompletionTokens)
			resp.Attempts = n
			return resp, nil
		}
		retryable := st.retryable(ctx, err) // on the original chain, before redaction
		err = redact(err, c.key)
		if ctx.Err() != nil {
			return Response{}, c.fail(&req, n, st.status, false, cancelled(ctx, err))
		}
		if !retryable || n > c.retries {
			return Response{}, c.fail(&req, n, st.status, retryable, err)
		}
		wait := max(backoff(n, c.base, c.max, c.rand()), st.retryAfter)
		if onRetry != nil {
			onRetry(Attempt{N: n, Err: err, Status: st.status, Retryable: true, Wait: wait})
		}
		if serr := c.sleep(ctx, wait); serr != nil {
			return Response{}, c.fail(&req, n, st.status, false, fmt.Errorf("waiting %s to retry: %w (after: %w)", wait, serr, err))
		}
		last = st
		last.err = err
	}
}

// attempt sends one request; the caller holds a slot and rate tokens.
func (c *Client) attempt(ctx context.Context, st *attemptState, creq openai.ChatCompletionRequest, onDelta func(string)) (Response, error) {
	actx, cancel := context.WithTimeout(context.WithValue(ctx, stateKey{}, st), c.timeout)
	defer cancel()
	start := time.Now()
	var (
		resp Response
		err  error
	)
	if creq.Stream {
		resp, err = c.stream(actx, creq, onDelta)
	} else {
		resp, err = c.once(actx, creq)
	}
	resp.Latency = time.Since(start)
	return resp, err
}

// fail builds the *Error returned by Complete.
func (c *Client) fail(req *Request, attempts, status int, retryable bool, err error) *Error {
	return &Error{Endpoint: c.name, Model: req.Model, Attempts: attempts, Status: status, Retryable: retryable, Err: err}
}

// failWaiting reports a failure while waiting for a slot or rate tokens;
// the previous attempt's error, if any, stays in the chain.
func (c *Client) failWaiting(req *Request, attempts int, last *attemptState, err error) *Error {
	status := 0
	if last != nil {
		status = last.status
		err = fmt.Errorf("%w (after: %w)", err, last.err)
	}
	return c.fail(req, attempts, status, false, err)
}

// sleepContext waits for d or until ctx is done.
func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
