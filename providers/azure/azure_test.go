package azure_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/providers/azure"
	"github.com/debate-runner/runner/runtime/llm"
)

// These tests run the client against internal/llmtest's server that
// answers with Azure's classic rules and its own error texts.

func providerClient(srv *llmtest.Server, key string, edit func(*llm.Endpoint)) *llm.Client {
	ep := llm.Endpoint{Name: "ep", BaseURL: srv.URL, APIKey: key, MaxRetries: 2, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}
	if edit != nil {
		edit(&ep)
	}
	return llm.New(ep)
}

func settings(version string) map[string]string { return map[string]string{"api_version": version} }

func ok(content string) llmtest.Handler {
	return func(llmtest.Request) llmtest.Reply { return llmtest.Reply{Content: content} }
}

func simple(model string) llm.Request {
	return llm.Request{Model: model, Messages: []llm.Message{{Role: "user", Content: "hello"}}}
}

func asError(t *testing.T, err error) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not *llm.Error", err, err)
	}
	return e
}

func TestAzureClassicDeployments(t *testing.T) {
	const key = "azure-key-0123456789"
	srv := llmtest.NewProvider(t, llmtest.AzureClassic(key, llmtest.Azure{
		Deployments: map[string]string{"prod-4o": "gpt-4o", "reasoner": "o3"},
		Versions:    []string{"2024-10-21"},
	}), ok(`{"a":1}`))
	c := providerClient(srv, key, func(ep *llm.Endpoint) { ep.Provider, ep.Settings = azure.Kind{}, settings("2024-10-21") })
	req := simple("gpt-4o")
	req.Deployment = "prod-4o"
	if _, err := c.Complete(context.Background(), req, nil); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	r := srv.Requests()[0]
	if r.Path != "/openai/deployments/prod-4o/chat/completions" || r.Query.Get("api-version") != "2024-10-21" {
		t.Errorf("request went to %s?%s", r.Path, r.Query.Encode())
	}
	if r.Header.Get("api-key") != key || r.Header.Get("Authorization") != "" {
		t.Errorf("api-key %q, Authorization %q; want the key in api-key only", r.Header.Get("api-key"), r.Header.Get("Authorization"))
	}

	// A deployment of a reasoning model, named anything and given as the
	// model: max_tokens is refused with OpenAI's text, the field is swapped
	// once and remembered.
	req = simple("reasoner")
	req.MaxTokens = 100
	resp, err := c.Complete(context.Background(), req, nil)
	if err != nil {
		t.Fatalf("reasoning deployment: %v", err)
	}
	if resp.Attempts != 2 || len(resp.Adapted) != 1 || !strings.Contains(resp.Adapted[0], "max_completion_tokens") {
		t.Errorf("attempts %d, adapted %q; want one swap to max_completion_tokens", resp.Attempts, resp.Adapted)
	}
	n := srv.Count()
	resp, err = c.Complete(context.Background(), req, nil)
	if err != nil || resp.Attempts != 1 || len(resp.Adapted) != 0 || srv.Count() != n+1 {
		t.Errorf("second call: err %v, attempts %d, adapted %q; want one request, the field learned", err, resp.Attempts, resp.Adapted)
	}
	if _, ok := srv.Requests()[n].Fields["max_completion_tokens"]; !ok {
		t.Errorf("second call sent %s", srv.Requests()[n].Body)
	}

	// An unknown deployment: Azure's 404, not retried, with a hint.
	req = simple("gpt-4o")
	req.Deployment = "nope"
	_, err = c.Complete(context.Background(), req, nil)
	e := asError(t, err)
	if e.Status != 404 || e.Attempts != 1 || !strings.Contains(e.Error(), "DeploymentNotFound") && !strings.Contains(e.Error(), "deployment for this resource does not exist") || !strings.Contains(e.Hint, `"nope"`) {
		t.Errorf("unknown deployment: %v", e)
	}

	// The wrong header (Bearer) is refused with Azure's 401 text.
	bearer := providerClient(srv, key, func(ep *llm.Endpoint) {
		ep.Provider, ep.Settings, ep.KeyHeader = azure.Kind{}, settings("2024-10-21"), "Authorization"
	})
	_, err = bearer.Complete(context.Background(), req, nil)
	if e := asError(t, err); e.Status != 401 || !strings.Contains(e.Error(), "Access denied") || strings.Contains(e.Error(), key) {
		t.Errorf("bearer key on classic Azure: %v", e)
	}
}

func TestAzureOldAPIVersionRefusals(t *testing.T) {
	const key = "azure-key-0123456789"
	srv := llmtest.NewProvider(t, llmtest.AzureClassic(key, llmtest.Azure{
		Deployments:              map[string]string{"chat": "gpt-4o"},
		Versions:                 []string{"2024-02-01"},
		NoSchemaBefore:           "2024-08-01-preview",
		NoCompletionTokensBefore: "2024-09-01-preview",
	}), ok(`{"answer": 4}`))
	c := providerClient(srv, key, func(ep *llm.Endpoint) { ep.Provider, ep.Settings = azure.Kind{}, settings("2024-02-01") })
	req := simple("chat")
	req.MaxTokens, req.TokenField = 50, llm.MaxCompletionTokensField
	req.JSON = &llm.JSONReply{Schema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"integer"}},"required":["answer"],"additionalProperties":false}`)}
	resp, err := c.Complete(context.Background(), req, nil)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	// One refusal of max_completion_tokens, one of json_schema, then it
	// goes through with max_tokens and json_object.
	if resp.Attempts != 3 || len(resp.Adapted) != 2 {
		t.Fatalf("attempts %d, adapted %q", resp.Attempts, resp.Adapted)
	}
	last := srv.Requests()[2]
	if _, ok := last.Fields["max_tokens"]; !ok || last.ResponseFormat != "json_object" {
		t.Errorf("last request: %s", last.Body)
	}
}
