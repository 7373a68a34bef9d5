// Package anthropic is the provider kind `anthropic`: Anthropic's Messages
// API spoken natively, through Anthropic's official Go SDK
// (github.com/anthropics/anthropic-sdk-go/v2), at BASE/v1/messages with the
// key in x-api-key.
//
// The engine builds every request as a Chat Completions body (the one
// request shape journal, replay, resume and the response cache know); this
// kind's transport turns that body into a Messages request (the system
// prompt as the `system` field, roles, tool calls and results, cache
// breakpoints where the request marks them, max_tokens, a JSON reply's
// schema as output_config.format), sends it with the SDK (its own retries
// off: the engine retries, by this kind's rules), and turns the Message or
// its event stream back into a Chat Completions reply. The reply's usage
// member is Anthropic's usage object as the server sent it, read by Usage
// with the engine's rules for counts.
package anthropic

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/spec"
)

//go:embed settings.json
var settings []byte

// DefaultBase is Anthropic's API.
const DefaultBase = "https://api.anthropic.com"

// Kind is the anthropic provider kind.
type Kind struct{ llm.ChatCompletions }

// Name implements spec.Provider.
func (Kind) Name() string { return "anthropic" }

// Description implements spec.Provider.
func (Kind) Description() string {
	return "Anthropic's Messages API at BASE/v1/messages with an x-api-key header, through Anthropic's Go SDK."
}

// Settings implements spec.Provider: none of its own, and base_url
// required. Retries (Retryable, RetryAfter) are Chat Completions': 408,
// 409, 425, 429 (rate_limit_error) and 5xx, 529 (overloaded_error)
// included, after the wait Retry-After asks.
func (Kind) Settings() []byte { return settings }

// Doc implements spec.Provider.
func (Kind) Doc() spec.ProviderDoc {
	return spec.ProviderDoc{
		Speaks:    "Anthropic's Messages API at `BASE/v1/messages` (Anthropic's Go SDK), key in `x-api-key`; system prompt as `system`, cache breakpoints as `cache_control`, usage with cache reads and writes",
		Settings:  "`base_url: https://api.anthropic.com`, `api_key_env: ANTHROPIC_API_KEY`; `extra: {thinking: ...}` for extended thinking",
		Test:      "`TestNativeDebateEndToEnd`",
		GenAIName: "anthropic",
	}
}

// Check implements spec.Provider.
func (Kind) Check(e *spec.EndpointCheck) {
	e.Refuse("api_version", "api_version applies only to kind azure (kind anthropic sends anthropic-version itself)")
	if u := e.URL; u != nil && strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1/messages") {
		e.Errorf(e.BaseURL.Pos, "for kind anthropic, base_url is the API's root (https://api.anthropic.com), without /v1/messages")
	}
}

// Base implements llm.Protocol: the API's root, a trailing /v1 dropped
// (the SDK adds /v1/messages).
func (k Kind) Base(base string, s map[string]string) (*url.URL, error) {
	u, err := k.ChatCompletions.Base(base, s)
	if err != nil {
		return nil, err
	}
	u.Path = strings.TrimSuffix(u.Path, "/v1")
	return u, nil
}

// KeyHeader implements llm.Protocol: x-api-key.
func (Kind) KeyHeader() string { return "x-api-key" }

// URL implements llm.Protocol: BASE/v1/messages.
func (Kind) URL(base url.URL, _ map[string]string, _ *llm.Request) string {
	base.Path += messagesPath
	return base.String()
}

// messagesPath is where the SDK sends a message, below the base URL.
const messagesPath = "/v1/messages"

// Usage implements llm.Protocol: Anthropic's usage object. input_tokens
// counts only the prompt tokens after the last cache breakpoint; the
// prompt is those, the tokens read from the cache and those written to
// it.
func (Kind) Usage(raw json.RawMessage) (llm.Usage, error) { return DecodeUsage(raw) }

// DecodeUsage reads Anthropic's usage object (input_tokens, output_tokens,
// cache_read_input_tokens, cache_creation_input_tokens) into llm.Usage,
// each count by llm.TokenCount's rules: a count that cannot be believed is
// an *llm.UsageError, and nothing of the object is counted.
func DecodeUsage(raw json.RawMessage) (llm.Usage, error) {
	var u struct {
		Input    json.RawMessage `json:"input_tokens"`
		Output   json.RawMessage `json:"output_tokens"`
		Read     json.RawMessage `json:"cache_read_input_tokens"`
		Creation json.RawMessage `json:"cache_creation_input_tokens"`
	}
	if err := json.Unmarshal(raw, &u); err != nil {
		return llm.Usage{}, &llm.UsageError{Raw: raw, Reason: "it is not a usage object: " + err.Error()}
	}
	var bad []string
	count := func(name string, v json.RawMessage) int {
		n, err := llm.TokenCount(v)
		if err != nil {
			bad = append(bad, name+" "+err.Error())
		}
		return n
	}
	input, output := count("input_tokens", u.Input), count("output_tokens", u.Output)
	read, written := count("cache_read_input_tokens", u.Read), count("cache_creation_input_tokens", u.Creation)
	if len(bad) > 0 {
		return llm.Usage{}, &llm.UsageError{Raw: raw, Reason: strings.Join(bad, "; ")}
	}
	prompt := input + read + written
	if prompt > llm.MaxUsageTokens {
		return llm.Usage{}, &llm.UsageError{Raw: raw, Reason: fmt.Sprintf("the prompt's %d tokens are beyond any model's context", prompt)}
	}
	return llm.Usage{PromptTokens: prompt, CompletionTokens: output, CachedTokens: read, CacheWriteTokens: written}, nil
}

// Hint implements llm.Protocol.
func (Kind) Hint(f llm.Failure) string {
	switch f.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return "check the API key (sent in the x-api-key header; Anthropic's keys start with sk-ant-)"
	case http.StatusNotFound:
		return "Anthropic found no such model or path: check the model's name (e.g. claude-sonnet-4-5) and that base_url is the API's root (https://api.anthropic.com)"
	case 529:
		return "Anthropic's API is overloaded; the call was retried as the endpoint's max_retries allow"
	}
	return ""
}

// Transport implements llm.Protocol: the translation to and from the
// Messages API, over the network.
func (Kind) Transport() http.RoundTripper { return newTransport(nil) }
