// Package openai is the provider kind `openai`: OpenAI's Chat Completions
// as OpenAI and the servers that copy it speak it (OpenRouter, Azure's
// /openai/v1 surface, Ollama, vLLM, LM Studio, llama.cpp, gateways):
// BASE/chat/completions with a Bearer key. It is the kind of an endpoint
// that names none.
package openai

import (
	"strings"

	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/spec"
)

// Kind is the openai provider kind.
type Kind struct{ llm.ChatCompletions }

// Name implements spec.Provider.
func (Kind) Name() string { return "openai" }

// Description implements spec.Provider.
func (Kind) Description() string {
	return "BASE/chat/completions with a Bearer key (OpenAI, OpenRouter, Azure /openai/v1, Ollama, vLLM, LM Studio, llama.cpp)."
}

// Settings implements spec.Provider: none of its own, and base_url
// required.
func (Kind) Settings() []byte { return []byte(`{"required": ["base_url"]}`) }

// Doc implements spec.Provider.
func (Kind) Doc() spec.ProviderDoc {
	return spec.ProviderDoc{
		Speaks:    "OpenAI's Chat Completions at `BASE/chat/completions`, key as `Authorization: Bearer`",
		Settings:  "`base_url` (default `https://api.openai.com/v1`, or `OPENAI_BASE_URL`), `api_key_env`; no key for a local server",
		Test:      "`TestCompatOpenAI`",
		GenAIName: "openai",
	}
}

// Check implements spec.Provider: azure's settings and classic Azure URLs
// are pointed at kind azure.
func (Kind) Check(e *spec.EndpointCheck) {
	e.Refuse("api_version", "api_version applies only to kind azure (Azure's /openai/v1 surface needs none)")
	if u := e.URL; u != nil && (strings.Contains(u.Path, "/openai/deployments/") || u.Query().Has("api-version")) {
		e.Warnf(e.BaseURL.Pos, "this looks like a classic Azure OpenAI URL; use kind: azure with the resource URL as base_url, api_version, and the deployment on the model")
	}
}
