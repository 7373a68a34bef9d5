// Package azure is the provider kind `azure`: Azure OpenAI's classic
// surface, BASE/openai/deployments/DEPLOYMENT/chat/completions with an
// api-version and an api-key header. It speaks Chat Completions otherwise.
package azure

import (
	_ "embed"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/spec"
)

//go:embed settings.json
var settings []byte

// Kind is the azure provider kind.
type Kind struct{ llm.ChatCompletions }

// Name implements spec.Provider.
func (Kind) Name() string { return "azure" }

// Description implements spec.Provider.
func (Kind) Description() string {
	return "Azure OpenAI classic deployment URLs with api_version and an api-key header."
}

// Settings implements spec.Provider: api_version.
func (Kind) Settings() []byte { return settings }

// Doc implements spec.Provider.
func (Kind) Doc() spec.ProviderDoc {
	return spec.ProviderDoc{
		Speaks:    "Chat Completions at `BASE/openai/deployments/DEPLOYMENT/chat/completions?api-version=V`, key in `api-key`",
		Settings:  "`base_url: https://NAME.openai.azure.com`, `api_version`, `api_key_env`; the model's `deployment:`",
		Test:      "`TestCompatAzureClassic`",
		GenAIName: "azure.ai.openai",
	}
}

// TakesDeployments implements spec.DeploymentTaker.
func (Kind) TakesDeployments() bool { return true }

// Check implements spec.Provider.
func (Kind) Check(e *spec.EndpointCheck) {
	if _, ok := e.Settings["api_version"]; !ok {
		e.Errorf(e.Pos, "kind azure needs api_version (e.g. api_version: 2024-10-21)")
	}
	switch u := e.URL; {
	case u == nil:
	case strings.Contains(u.Path, "/deployments/"):
		e.Errorf(e.BaseURL.Pos, "for kind azure, base_url is the resource (https://NAME.openai.azure.com); the deployment is the model's deployment (or its model)")
	case u.RawQuery != "":
		e.Errorf(e.BaseURL.Pos, "for kind azure, give the api-version as api_version, not in base_url")
	}
}

// Base implements llm.Protocol: the resource's URL, without /openai.
func (k Kind) Base(base string, s map[string]string) (*url.URL, error) {
	u, err := k.ChatCompletions.Base(base, s)
	if err != nil {
		return nil, err
	}
	if s["api_version"] == "" {
		return nil, fmt.Errorf("azure endpoint has no api_version")
	}
	u.Path = strings.TrimSuffix(u.Path, "/openai")
	return u, nil
}

// KeyHeader implements llm.Protocol: api-key.
func (Kind) KeyHeader() string { return "api-key" }

// URL implements llm.Protocol: the deployment's path (the model's when it
// names none) with the api-version.
func (Kind) URL(base url.URL, s map[string]string, req *llm.Request) string {
	deployment := req.Deployment
	if deployment == "" {
		deployment = req.Model
	}
	base.Path += "/openai/deployments/" + url.PathEscape(deployment) + "/chat/completions"
	q := base.Query()
	q.Set("api-version", s["api_version"])
	base.RawQuery = q.Encode()
	return base.String()
}

// Hint implements llm.Protocol: a deployment Azure does not know, the key
// and the header it went in.
func (Kind) Hint(f llm.Failure) string {
	switch f.Status {
	case http.StatusNotFound:
		deployment := f.Request.Deployment
		if deployment == "" {
			deployment = f.Request.Model
		}
		return fmt.Sprintf("Azure found no deployment %q at %s with api-version %s: check the deployment name (the model's deployment, else its model) and api_version", deployment, f.Base, f.Settings["api_version"])
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Sprintf("check the API key (sent in the %s header)", f.KeyHeader)
	}
	return ""
}
