// Package llm is the runtime's model client: Chat Completions against any
// OpenAI-compatible server (OpenAI, OpenRouter, Azure's classic deployments
// and its /openai/v1 surface, Ollama, vLLM, LM Studio, llama.cpp, ...), with
// the per-endpoint concurrency, request-rate and token-rate limits,
// per-attempt timeouts and retries that a long multi-agent run needs.
//
// Requests and replies use github.com/sashabaranov/go-openai's wire types,
// but the HTTP exchange is the client's own (wire.go): go-openai refuses
// some requests before sending them (a temperature for a model whose name
// starts with gpt-5, max_tokens for o-series names) that the server behind
// an alias or proxy would accept, it cannot send fields it does not model
// (reasoning_effort for any model, top_k, provider routing), and it cannot
// reach Azure's classic deployment URLs with an api-key header.
//
// Servers differ in what they accept; the client adapts once per endpoint
// (adapt.go): a refused response_format steps down from json_schema to
// json_object to none, a refused token-limit field is swapped, a refused
// stream_options is dropped, and what was learned holds for later calls.
//
// One Client is meant per configured endpoint: its limits and what it learned
// are shared by every goroutine that calls Complete on it, and by nothing
// else.
package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/debate-runner/runner/nodes/kit"
)

// Defaults applied by New to zero fields of an Endpoint.
const (
	DefaultTimeout     = 120 * time.Second
	DefaultBackoffBase = 500 * time.Millisecond
	DefaultBackoffMax  = 30 * time.Second
	// DefaultMaxRetryWait bounds the total time one call waits between its
	// attempts: a server asking for an hour's pause (Retry-After: 3600)
	// must not hold a run for an hour.
	DefaultMaxRetryWait = 2 * time.Minute
	// DefaultCompletionEstimate is the completion size assumed by the
	// tokens-per-minute limiter when a request sets no MaxTokens.
	DefaultCompletionEstimate = 512
)

// Endpoint describes one OpenAI-compatible server and the limits the client
// must keep towards it.
type Endpoint struct {
	Name    string
	BaseURL string // e.g. https://api.openai.com/v1 or http://localhost:11434/v1
	// Provider is the endpoint's provider kind (a Provider); nil means
	// ChatCompletions as OpenAI speaks it.
	Provider Protocol `json:"-"`
	// Settings are the settings only the provider kind takes (azure's
	// api_version).
	Settings map[string]string
	// APIKey is sent in the provider kind's key header (a Bearer token,
	// azure's api-key), or in the header KeyHeader names. It is
	// never logged and never put into errors or events; empty sends no key
	// (see IsLocal).
	APIKey string `json:"-"`
	// KeyHeader overrides the header the key goes in; "Authorization"
	// means the Bearer scheme, any other name gets the bare key.
	KeyHeader string
	// MaxConcurrency bounds in-flight requests; 0 means unlimited.
	MaxConcurrency int
	// RequestsPerMinute limits the requests of all callers of the client
	// together; 0 means unlimited. Requests are spaced evenly (see
	// Schedule), never in a burst, so no minute holds more than the limit
	// from the first request on, and providers that enforce the limit over
	// shorter windows see an even rate.
	RequestsPerMinute int
	// TokensPerMinute limits estimated prompt+completion tokens over any
	// minute (see Schedule); 0 means unlimited. Each attempt reserves its
	// estimate before it is sent; when the reported usage turns out
	// larger, the excess is charged afterwards.
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
	// MaxRetryWait bounds the waits between one call's attempts, added up;
	// 0 means DefaultMaxRetryWait. A wait that would pass it (a long
	// Retry-After) fails the call at once instead.
	MaxRetryWait time.Duration
	// Headers are extra request headers (OpenRouter's HTTP-Referer and
	// X-Title, a gateway's key, ...). Their values may be secrets: they are
	// never logged.
	Headers map[string]string `json:"-"`
	// HTTPClient is used for all requests when set; it is not modified.
	HTTPClient *http.Client `json:"-"`
	// Batch, when set, sends the client's requests through the transport
	// it returns (runner run --batch, see package runtime/batch): next is
	// the client's own transport (the kind's translation included), direct
	// the HTTP client for the provider's other APIs.
	Batch func(next http.RoundTripper, direct *http.Client) http.RoundTripper `json:"-"`
	// Gate, when set, admits every attempt instead of the limits above
	// (MaxConcurrency, RequestsPerMinute, TokensPerMinute), which it holds
	// for many clients together: the workers of a Temporal cluster. The
	// client then keeps no limits of its own.
	Gate Gate `json:"-"`

	// Sleep waits between attempts; tests inject it to observe waits
	// without spending them. nil means a timer that honours ctx.
	Sleep func(ctx context.Context, d time.Duration) error `json:"-"`
	// Rand returns a jitter factor in [0, 1); nil means math/rand/v2.
	Rand func() float64 `json:"-"`
}

// String describes the endpoint without its key or header values, so that
// printing an Endpoint with %v or %+v cannot leak a secret.
func (e Endpoint) String() string {
	key := "none"
	if e.APIKey != "" {
		key = "set"
	}
	kind := "openai"
	if p, ok := e.Provider.(interface{ Name() string }); ok {
		kind = p.Name()
	}
	return fmt.Sprintf("llm.Endpoint{Name:%q Kind:%s BaseURL:%q APIKey:%s MaxConcurrency:%d RequestsPerMinute:%d TokensPerMinute:%d Timeout:%s MaxRetries:%d}",
		e.Name, kind, e.BaseURL, key, e.MaxConcurrency, e.RequestsPerMinute, e.TokensPerMinute, e.Timeout, e.MaxRetries)
}

// GoString is String, so that %#v does not leak the key either.
func (e Endpoint) GoString() string { return e.String() }

// Message is one chat message sent to the model.
type Message struct {
	Role       string // system, user, assistant or tool
	Content    string
	Name       string
	ToolCallID string         // for Role "tool": the call being answered
	ToolCalls  []kit.ToolCall // for Role "assistant": calls the model made earlier
	// CacheSplit, when above 0 and below len(Content), is where the
	// message's stable start ends ({{cacheBreak}} in its template): with
	// CacheBreakpoints the message goes as two text parts, the first
	// marked as a cache breakpoint. Without, it changes nothing. It is not
	// part of a request's key (calls.RequestKey): the reply does not
	// depend on it.
	CacheSplit int `json:"-"`
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema of the arguments; empty means no arguments
}

// JSONMode says which response_format a request for JSON starts with.
type JSONMode string

// JSON modes, from the most to the least constrained.
const (
	// JSONAuto sends json_schema when the reply has a schema, else
	// json_object.
	JSONAuto JSONMode = "auto"
	// JSONSchema sends json_schema; a reply without a schema gets one that
	// accepts any object.
	JSONSchema JSONMode = "schema"
	// JSONObject sends json_object.
	JSONObject JSONMode = "object"
	// JSONNone sends no response_format; the reply is still parsed as JSON.
	JSONNone JSONMode = "none"
)

// JSONReply asks for a reply in JSON.
type JSONReply struct {
	// Schema is the JSON Schema of the reply; nil for any JSON object.
	Schema json.RawMessage
	// Name names the schema for json_schema; "" means "reply".
	Name string
	// Mode is where to start; "" means JSONAuto.
	Mode JSONMode
}

// Token-limit fields.
const (
	MaxTokensField           = "max_tokens"
	MaxCompletionTokensField = "max_completion_tokens"
)

// Field is a request field the client does not model, sent as given.
type Field struct {
	Name  string
	Value json.RawMessage // JSON
}

// Request is one chat completion to perform.
type Request struct {
	Model string
	// Deployment is the deployment the model is served from, for kinds
	// that take one (azure); "" means Model.
	Deployment  string
	Messages    []Message
	Temperature *float64 // nil leaves the server default
	TopP        *float64 // nil leaves the server default
	MaxTokens   int      // 0 leaves the server default
	// TokenField is the field MaxTokens is sent in: MaxTokensField or
	// MaxCompletionTokensField; "" picks by model name (see TokenFieldFor).
	TokenField      string
	Seed            *int
	ReasoningEffort string // reasoning_effort, when not ""
	Tools           []Tool
	// JSON asks for a JSON reply (response_format); nil asks for none.
	JSON *JSONReply
	// CacheBreakpoints sends the system prompt, the end of the turns a
	// thread already sent and the whole request as content parts marked
	// cache_control {type: ephemeral}, for providers that cache a prompt
	// only where it is marked (see cacheBreakpoints).
	CacheBreakpoints bool
	// Continued says the next request extends this one (a thread's turn):
	// with CacheBreakpoints the end of its last message is a breakpoint.
	Continued bool
	// Extra are more request fields, sent after the ones above (which
	// they must not repeat): top_k, provider routing, chat_template_kwargs...
	Extra []Field
	// Stream uses the streaming API and reassembles content, tool calls and
	// usage into the same Response a non-streaming call returns.
	Stream bool
	// NoStreamUsage leaves out stream_options.include_usage, for servers
	// that refuse it; usage is then estimated.
	NoStreamUsage bool
	// OnDelta, when set with Stream, receives text deltas as they arrive,
	// for live progress. Deltas of an attempt that later fails have already
	// been delivered; the retried attempt starts its text from the beginning.
	OnDelta func(string) `json:"-"`
}

// Response is the result of a successful completion.
type Response struct {
	Content          string
	ToolCalls        []kit.ToolCall
	FinishReason     string
	Model            string // as reported by the server
	PromptTokens     int
	CompletionTokens int
	// CachedTokens are the prompt tokens the provider served from its
	// prompt cache (a part of PromptTokens), as it reported them.
	CachedTokens int
	// CacheWriteTokens are the prompt tokens the provider wrote to its
	// prompt cache (a part of PromptTokens), as it reported them:
	// OpenRouter's prompt_tokens_details.cache_write_tokens, or
	// cache_creation_input_tokens as gateways in front of Anthropic send it.
	CacheWriteTokens int
	// UsageEstimated is set when the server reported no usage, or usage
	// that could not be read, and the token counts were computed with a
	// tokenizer (see package tokens).
	UsageEstimated bool
	// UsageError says why the usage the server sent was not read (not a
	// count, negative, beyond any context), and UsageRaw is that usage as
	// sent; the reply is kept all the same.
	UsageError string
	UsageRaw   json.RawMessage
	Latency    time.Duration // of the successful attempt
	// Attempts counts the requests sent: 1, plus retries, plus the
	// requests sent again with a changed shape (see Adapted).
	Attempts int
	// Adapted says what the client changed in the request because the
	// endpoint refused it, for a warning; each change is reported by the
	// first call that learned it, and later calls start from it.
	Adapted []string
	// Batch is the id of the provider's batch that answered the request
	// (the BatchHeader of the reply), "" for a request answered on its own.
	Batch string
	// BatchShared says another caller's identical request was the one
	// the batch answered and billed (BatchSharedHeader).
	BatchShared bool
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
	provider  Protocol
	settings  map[string]string
	base      *url.URL
	key       string
	keyHeader string
	headers   map[string]string
	secrets   []string // key and header values, redacted from errors
	http      *http.Client
	urlErr    error // a BaseURL that can never work, reported by every call
	timeout   time.Duration
	retries   int
	maxWait   time.Duration
	backoff   [2]time.Duration // base, ceiling
	sleep     func(context.Context, time.Duration) error
	rand      func() float64

	gate  Gate
	slots chan struct{} // nil when MaxConcurrency is unlimited
	rate  *rateLimiter  // nil when neither rate is limited

	learned learned
}

// New returns a client for ep, filling defaults for zero fields. A BaseURL
// that is not an absolute http(s) URL is reported by every Complete call.
func New(ep Endpoint) *Client {
	c := &Client{
		name:     ep.Name,
		provider: ep.Provider,
		settings: ep.Settings,
		key:      ep.APIKey,
		headers:  ep.Headers,
		timeout:  ep.Timeout,
		retries:  max(ep.MaxRetries, 0),
		maxWait:  ep.MaxRetryWait,
		backoff:  [2]time.Duration{ep.BackoffBase, ep.BackoffMax},
		sleep:    ep.Sleep,
		rand:     ep.Rand,
	}
	if c.provider == nil {
		c.provider = ChatCompletions{}
	}
	c.keyHeader = ep.KeyHeader
	if c.keyHeader == "" {
		c.keyHeader = c.provider.KeyHeader()
	}
	if ep.APIKey != "" {
		c.secrets = append(c.secrets, ep.APIKey)
	}
	for _, v := range ep.Headers {
		if len(v) >= 8 { // short values (a title, "1") are not worth hiding, and would redact common words
			c.secrets = append(c.secrets, v)
		}
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxWait <= 0 {
		c.maxWait = DefaultMaxRetryWait
	}
	if c.backoff[0] <= 0 {
		c.backoff[0] = DefaultBackoffBase
	}
	if c.backoff[1] <= 0 {
		c.backoff[1] = DefaultBackoffMax
	}
	if c.sleep == nil {
		c.sleep = sleepContext
	}
	if c.rand == nil {
		c.rand = rand.Float64
	}
	if c.gate = ep.Gate; c.gate != nil {
		ep.MaxConcurrency, ep.RequestsPerMinute, ep.TokensPerMinute = 0, 0, 0
	}
	if ep.MaxConcurrency > 0 {
		c.slots = make(chan struct{}, ep.MaxConcurrency)
	}
	if ep.RequestsPerMinute > 0 || ep.TokensPerMinute > 0 {
		c.rate = &rateLimiter{rpm: max(ep.RequestsPerMinute, 0), tpm: max(ep.TokensPerMinute, 0)}
	}
	c.base, c.urlErr = c.provider.Base(ep.BaseURL, ep.Settings)

	c.http = ep.HTTPClient
	if t := c.provider.Transport(); t != nil {
		// The kind answers in-process: no test's client stands in for it.
		c.http = &http.Client{Transport: t}
	}
	if c.http == nil {
		// The default transport keeps only two idle connections per host,
		// which would make every burst of concurrent calls redial.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = max(ep.MaxConcurrency, 64)
		c.http = &http.Client{Transport: tr}
	}
	if ep.Batch != nil {
		direct := ep.HTTPClient
		if direct == nil {
			direct = &http.Client{}
		}
		next := c.http.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		c.http = &http.Client{Transport: ep.Batch(next, direct)}
	}
	c.learned.init()
	return c
}

// Complete performs req, retrying retryable failures up to the endpoint's
// MaxRetries. A request the endpoint refuses for a field it does not take
// (see adapt.go) is sent again at once with that field changed; that is no
// retry. onRetry, if not nil, is called after each failed attempt that will
// be retried, before the wait. A failure is always an *Error.
func (c *Client) Complete(ctx context.Context, req Request, onRetry func(Attempt)) (Response, error) {
	if c.urlErr != nil {
		return Response{}, c.fail(&req, 0, 0, false, c.urlErr)
	}
	sh := c.learned.shape(&req)
	cost := estimateTokens(&req)
	var (
		last    *attemptState // of the previous failed attempt, for errors while waiting
		adapted []string
		retries int
		waited  time.Duration
	)
	for n := 1; ; n++ {
		leave, err := c.admit(ctx, cost)
		if err != nil {
			return Response{}, c.failWaiting(&req, n-1, last, err)
		}
		st := &attemptState{usage: c.provider.Usage}
		resp, err := c.attempt(ctx, st, &req, sh)
		leave()
		if err == nil {
			if resp.PromptTokens == 0 && resp.CompletionTokens == 0 || resp.UsageError != "" {
				estimateUsage(&req, &resp)
			}
			c.settleTokens(cost, resp.PromptTokens+resp.CompletionTokens)
			resp.Attempts = n
			resp.Adapted = adapted
			return resp, nil
		}
		retryable := st.retryable(ctx, err, c.provider.Retryable) // on the original chain, before redaction
		err = c.redact(err)
		if ctx.Err() != nil {
			return Response{}, c.fail(&req, n, st.status, false, cancelled(ctx, err))
		}
		if !retryable {
			if next, note, ok := c.learned.adapt(&req, sh, st.status, err); ok {
				sh = next
				if note != "" {
					adapted = append(adapted, fmt.Sprintf("endpoint %q: %s", c.name, note))
				}
				last = st
				last.err = err
				continue
			}
		}
		if !retryable || retries >= c.retries {
			e := c.fail(&req, n, st.status, retryable, err)
			e.Hint = c.hint(&req, st, err)
			return Response{}, e
		}
		retries++
		wait := backoff(retries, c.backoff[0], c.backoff[1], c.rand())
		if st.retryAfter > c.maxWait-waited {
			// Waiting less than the server asked would only be refused
			// again; waiting that long passes the call's limit.
			e := c.fail(&req, n, st.status, true, fmt.Errorf("%w; the server asks to wait %s before retrying, more than the %s this call may still wait (max_retry_wait %s)", err, st.retryAfter.Round(time.Millisecond), (c.maxWait-waited).Round(time.Millisecond), c.maxWait))
			return Response{}, e
		}
		wait = min(max(wait, st.retryAfter), c.maxWait-waited)
		if wait <= 0 && waited > 0 {
			return Response{}, c.fail(&req, n, st.status, true, fmt.Errorf("%w; this call already waited %s between attempts, its limit (max_retry_wait)", err, c.maxWait))
		}
		waited += wait
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
func (c *Client) attempt(ctx context.Context, st *attemptState, req *Request, sh shape) (Response, error) {
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	start := time.Now()
	resp, err := c.send(actx, st, req, sh)
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
