package llm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/debate-runner/runner/spec"
)

// Provider is a provider kind as the client sees it, beside what the
// loader sees of it (spec.Provider): where a request goes and how it is
// authorised, how a reply's usage is read, which failures are worth a
// retry and how long the server asks to wait, what to tell the user after
// a failure, and whether its endpoints run on this machine. A kind is a
// package in providers/ that implements it (most by embedding
// ChatCompletions and changing what differs) and one line in
// providers/registry.go.
type Provider interface {
	spec.Provider
	Protocol
}

// Protocol is the client's side of a provider kind (see Provider).
type Protocol interface {
	// Base checks and normalises an endpoint's base URL for the kind's
	// requests, given the kind's settings; an error is reported by every
	// call of the endpoint.
	Base(base string, settings map[string]string) (*url.URL, error)
	// KeyHeader is the header an API key goes in when the endpoint names
	// none; "Authorization" sends it as a Bearer token.
	KeyHeader() string
	// URL is where a request goes.
	URL(base url.URL, settings map[string]string, req *Request) string
	// Usage reads a reply's usage member (never empty or null). An error
	// keeps the reply, with its usage marked unreadable.
	Usage(raw json.RawMessage) (Usage, error)
	// Retryable reports whether an error status may succeed if sent again.
	Retryable(status int) bool
	// RetryAfter is the wait a response's headers ask for, 0 for none.
	RetryAfter(h http.Header, now time.Time) time.Duration
	// Hint says what to check after a failed call, "" for nothing.
	Hint(f Failure) string
	// Local reports whether the endpoint at base runs on this machine: it
	// needs no key, and its calls are not priced at a hosted model's list
	// price.
	Local(base string) bool
	// Transport answers the kind's requests in-process (a simulated
	// model); nil sends them over the network.
	Transport() http.RoundTripper
}

// Usage is what a reply says it used.
type Usage struct {
	PromptTokens, CompletionTokens int
	// CachedTokens and CacheWriteTokens are parts of PromptTokens.
	CachedTokens, CacheWriteTokens int
}

// Failure is a failed call, for Provider.Hint.
type Failure struct {
	// Base is the endpoint's base URL as normalised, Settings its kind's
	// settings, KeyHeader where its key went.
	Base      *url.URL
	Settings  map[string]string
	KeyHeader string
	Request   *Request
	Status    int    // the last response's status, 0 for none
	Message   string // the error's message, lower case
}

// ChatCompletions is OpenAI's Chat Completions as most servers speak it:
// BASE/chat/completions with a Bearer key, OpenAI's usage object, retries
// on 408, 409, 425, 429 and 5xx with the wait retry-after-ms or
// Retry-After asks. Provider kinds embed it and change what differs.
type ChatCompletions struct{}

// Base implements Provider: an absolute http(s) URL, without a trailing
// slash.
func (ChatCompletions) Base(base string, _ map[string]string) (*url.URL, error) {
	u, err := url.Parse(base)
	switch {
	case err != nil:
		return nil, fmt.Errorf("invalid base URL: %w", err)
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return nil, fmt.Errorf("base URL %q is not an absolute http(s) URL", base)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// KeyHeader implements Provider: a Bearer token.
func (ChatCompletions) KeyHeader() string { return "Authorization" }

// URL implements Provider: BASE/chat/completions, a query in the base URL
// kept.
func (ChatCompletions) URL(base url.URL, _ map[string]string, _ *Request) string {
	base.Path += "/chat/completions"
	return base.String()
}

// Usage implements Provider with DecodeUsage.
func (ChatCompletions) Usage(raw json.RawMessage) (Usage, error) { return DecodeUsage(raw) }

// Retryable implements Provider: timeouts, conflicts, rate limits and
// server errors.
func (ChatCompletions) Retryable(status int) bool { return retryableStatus(status) }

// RetryAfter implements Provider: retry-after-ms (OpenAI, Azure), then
// Retry-After in seconds or as an HTTP date.
func (ChatCompletions) RetryAfter(h http.Header, now time.Time) time.Duration {
	return retryAfter(h, now)
}

// Hint implements Provider: the /v1 a base URL lacks, the key for a
// refused one.
func (ChatCompletions) Hint(f Failure) string {
	if f.Base != nil && !strings.HasSuffix(f.Base.Path, "/v1") && (f.Status == http.StatusNotFound || f.Status == http.StatusMethodNotAllowed || strings.Contains(f.Message, "unexpected endpoint")) {
		base := f.Base.String()
		return fmt.Sprintf("the base URL %s does not end in /v1, where OpenAI-compatible servers answer; try %s/v1", base, base)
	}
	if f.Status == http.StatusUnauthorized || f.Status == http.StatusForbidden {
		if f.KeyHeader != "Authorization" {
			return fmt.Sprintf("check the API key (sent in the %s header)", f.KeyHeader)
		}
		return "check the API key"
	}
	return ""
}

// Local implements Provider with IsLocal.
func (ChatCompletions) Local(base string) bool { return IsLocal(base) }

// Transport implements Provider: the network.
func (ChatCompletions) Transport() http.RoundTripper { return nil }

// DecodeUsage reads OpenAI's usage object: prompt_tokens,
// completion_tokens, prompt_tokens_details.cached_tokens and the cache
// writes gateways report (prompt_tokens_details.cache_write_tokens, or
// cache_creation_input_tokens). A count may be a JSON number with no
// fraction (12.0, 1.2e3) or a string of digits, as some servers send it;
// a count that is negative, fractional, too large for a context window or
// neither number nor digits is an error (a *UsageError), so that it is
// never added to a run's usage or budget.
func DecodeUsage(raw json.RawMessage) (Usage, error) {
	var u struct {
		Prompt     json.RawMessage `json:"prompt_tokens"`
		Completion json.RawMessage `json:"completion_tokens"`
		Creation   json.RawMessage `json:"cache_creation_input_tokens"`
		Details    *struct {
			Cached json.RawMessage `json:"cached_tokens"`
			Write  json.RawMessage `json:"cache_write_tokens"`
		} `json:"prompt_tokens_details"`
	}
	if err := json.Unmarshal(raw, &u); err != nil {
		return Usage{}, &UsageError{Raw: raw, Reason: "it is not a usage object: " + err.Error()}
	}
	var out Usage
	var bad []string
	count := func(name string, v json.RawMessage, into *int) {
		n, err := tokenCount(v)
		if err != nil {
			bad = append(bad, name+" "+err.Error())
			return
		}
		*into = n
	}
	count("prompt_tokens", u.Prompt, &out.PromptTokens)
	count("completion_tokens", u.Completion, &out.CompletionTokens)
	writes := 0
	count("cache_creation_input_tokens", u.Creation, &writes)
	if u.Details != nil {
		count("prompt_tokens_details.cached_tokens", u.Details.Cached, &out.CachedTokens)
		w := 0
		count("prompt_tokens_details.cache_write_tokens", u.Details.Write, &w)
		if w > 0 {
			writes = w
		}
	}
	out.CacheWriteTokens = writes
	if len(bad) > 0 {
		return Usage{}, &UsageError{Raw: raw, Reason: strings.Join(bad, "; ")}
	}
	if out.CachedTokens > out.PromptTokens || out.CacheWriteTokens > out.PromptTokens {
		return Usage{}, &UsageError{Raw: raw, Reason: fmt.Sprintf("cached (%d) or written (%d) tokens exceed the prompt's %d", out.CachedTokens, out.CacheWriteTokens, out.PromptTokens)}
	}
	return out, nil
}

// MaxUsageTokens bounds a token count a reply may report: beyond any
// model's context window, a count is not believed.
const MaxUsageTokens = 100_000_000

// TokenCount reads one token count of a reply's usage by DecodeUsage's
// rules (whole floats and strings of digits accepted; negative,
// fractional, absurd or non-numeric counts refused), for provider kinds
// whose usage object has other names: absent or null is 0.
func TokenCount(v json.RawMessage) (int, error) { return tokenCount(v) }

// tokenCount reads one count: absent or null is 0.
func tokenCount(v json.RawMessage) (int, error) {
	s := strings.TrimSpace(string(v))
	if s == "" || s == "null" {
		return 0, nil
	}
	if s[0] == '"' {
		var text string
		if json.Unmarshal(v, &text) != nil {
			return 0, fmt.Errorf("is %s, not a count", s)
		}
		text = strings.TrimSpace(text)
		if text == "" || strings.Trim(text, "0123456789") != "" || len(text) > 12 {
			return 0, fmt.Errorf("is %s, not a count", s)
		}
		s = text
	}
	var f float64
	if err := json.Unmarshal([]byte(s), &f); err != nil {
		return 0, fmt.Errorf("is %s, not a count", s)
	}
	switch {
	case f < 0:
		return 0, fmt.Errorf("is negative (%s)", s)
	case f != float64(int64(f)):
		return 0, fmt.Errorf("is %s, not a whole number", s)
	case f > MaxUsageTokens:
		return 0, fmt.Errorf("is %s, beyond any model's context", s)
	}
	return int(f), nil
}

// UsageError is a reply's usage that could not be read or was not
// believed; the reply is kept, and its tokens are counted with a tokenizer.
type UsageError struct {
	Raw    json.RawMessage
	Reason string
}

func (e *UsageError) Error() string { return "unreadable usage: " + e.Reason }

// ProtocolOf is the client side of an endpoint's provider kind: every kind
// of package providers implements Provider, the loader's side and the
// client's. nil (ChatCompletions) for an endpoint without a kind.
func ProtocolOf(ep *spec.EndpointPlan) (Protocol, error) {
	if ep.Provider == nil {
		return nil, nil
	}
	p, ok := ep.Provider.(Protocol)
	if !ok {
		return nil, fmt.Errorf("endpoint %q: provider kind %q has no client side (llm.Protocol)", ep.Name, ep.Kind)
	}
	return p, nil
}

// Simulated reports whether an endpoint's provider kind makes its replies
// rather than asking a model (the offline model): runs that use it say so.
func Simulated(ep *spec.EndpointPlan) bool {
	if ep == nil || ep.Provider == nil {
		return false
	}
	s, ok := ep.Provider.(spec.Simulated)
	return ok && s.Simulated()
}
