// Package gemini is the provider kind `gemini`: Google's Gemini API
// (generateContent) spoken natively, by a small client of its own over
// net/http (google.golang.org/genai would bring a large dependency for
// two calls), at BASE/v1beta/models/MODEL:generateContent with the key in
// x-goog-api-key.
//
// As for kind anthropic, the engine builds a Chat Completions body; this
// kind's transport turns it into a generateContent request (system
// prompts as systemInstruction, assistant turns as role "model", tool
// calls as functionCall parts and results as functionResponse parts, max
// tokens, temperature and top_p in generationConfig, a JSON reply's schema
// as responseJsonSchema), sends it, and turns the reply, or its event
// stream (streamGenerateContent?alt=sse), back into a Chat Completions
// reply whose usage member is Gemini's usageMetadata as sent. Its batch
// mode (batch.go) serves `runner run --batch`.
package gemini

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

// Kind is the gemini provider kind.
type Kind struct{ llm.ChatCompletions }

// Name implements spec.Provider.
func (Kind) Name() string { return "gemini" }

// Description implements spec.Provider.
func (Kind) Description() string {
	return "Google's Gemini API (generateContent) at BASE/v1beta/models/MODEL:generateContent with an x-goog-api-key header."
}

// Settings implements spec.Provider: base_url required. Retries are Chat
// Completions': 429 (RESOURCE_EXHAUSTED), 5xx (INTERNAL, UNAVAILABLE), after
// the wait Retry-After asks.
func (Kind) Settings() []byte { return settings }

// Doc implements spec.Provider.
func (Kind) Doc() spec.ProviderDoc {
	return spec.ProviderDoc{
		Speaks:    "Gemini's `BASE/v1beta/models/MODEL:generateContent` (and `:streamGenerateContent?alt=sse`), key in `x-goog-api-key`; system prompt as `systemInstruction`, usage from `usageMetadata` with cached tokens",
		Settings:  "`base_url: https://generativelanguage.googleapis.com`, `api_key_env: GEMINI_API_KEY`",
		Test:      "`TestNativeDebateEndToEnd`",
		GenAIName: "gcp.gemini",
	}
}

// Check implements spec.Provider.
func (Kind) Check(e *spec.EndpointCheck) {
	e.Refuse("api_version", "api_version applies only to kind azure (kind gemini speaks v1beta)")
	if u := e.URL; u != nil && strings.Contains(u.Path, ":generateContent") {
		e.Errorf(e.BaseURL.Pos, "for kind gemini, base_url is the API's root (https://generativelanguage.googleapis.com), without the model's path")
	}
}

// Base implements llm.Protocol: the API's root, a trailing /v1beta
// dropped.
func (k Kind) Base(base string, s map[string]string) (*url.URL, error) {
	u, err := k.ChatCompletions.Base(base, s)
	if err != nil {
		return nil, err
	}
	u.Path = strings.TrimSuffix(u.Path, "/v1beta")
	return u, nil
}

// KeyHeader implements llm.Protocol: x-goog-api-key.
func (Kind) KeyHeader() string { return "x-goog-api-key" }

// URL implements llm.Protocol: the model's generateContent, or
// streamGenerateContent with alt=sse for a streamed call.
func (Kind) URL(base url.URL, _ map[string]string, req *llm.Request) string {
	model := strings.TrimPrefix(req.Model, "models/")
	method := ":generateContent"
	if req.Stream {
		method = ":streamGenerateContent"
		base.RawQuery = "alt=sse"
	}
	base.Path += "/v1beta/models/" + url.PathEscape(model) + method
	return base.String()
}

// Usage implements llm.Protocol: Gemini's usageMetadata.
func (Kind) Usage(raw json.RawMessage) (llm.Usage, error) { return DecodeUsage(raw) }

// DecodeUsage reads Gemini's usageMetadata: promptTokenCount (which
// includes cachedContentTokenCount), candidatesTokenCount and
// thoughtsTokenCount (thinking is billed as output), each count by
// llm.TokenCount's rules.
func DecodeUsage(raw json.RawMessage) (llm.Usage, error) {
	var u struct {
		Prompt     json.RawMessage `json:"promptTokenCount"`
		Candidates json.RawMessage `json:"candidatesTokenCount"`
		Thoughts   json.RawMessage `json:"thoughtsTokenCount"`
		Cached     json.RawMessage `json:"cachedContentTokenCount"`
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
	prompt, out := count("promptTokenCount", u.Prompt), count("candidatesTokenCount", u.Candidates)
	thoughts, cached := count("thoughtsTokenCount", u.Thoughts), count("cachedContentTokenCount", u.Cached)
	if len(bad) > 0 {
		return llm.Usage{}, &llm.UsageError{Raw: raw, Reason: strings.Join(bad, "; ")}
	}
	if cached > prompt {
		return llm.Usage{}, &llm.UsageError{Raw: raw, Reason: fmt.Sprintf("cachedContentTokenCount (%d) exceeds promptTokenCount (%d)", cached, prompt)}
	}
	if out+thoughts > llm.MaxUsageTokens {
		return llm.Usage{}, &llm.UsageError{Raw: raw, Reason: "the output's tokens are beyond any model's context"}
	}
	return llm.Usage{PromptTokens: prompt, CompletionTokens: out + thoughts, CachedTokens: cached}, nil
}

// Hint implements llm.Protocol.
func (Kind) Hint(f llm.Failure) string {
	switch f.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return "check the API key (sent in the x-goog-api-key header)"
	case http.StatusBadRequest:
		if strings.Contains(f.Message, "api key") {
			return "check the API key (sent in the x-goog-api-key header)"
		}
	case http.StatusNotFound:
		return "Gemini found no such model: check the model's name (e.g. gemini-2.5-flash) and that base_url is the API's root (https://generativelanguage.googleapis.com)"
	}
	return ""
}

// Transport implements llm.Protocol: the translation to and from
// generateContent, over the network.
func (Kind) Transport() http.RoundTripper { return newTransport(nil) }
