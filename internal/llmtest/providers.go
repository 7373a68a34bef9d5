package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// A Provider makes the server answer like a particular OpenAI-compatible
// product: where it serves the API, how it wants the key, which request
// fields and response formats it takes, and the exact texts (and statuses,
// and shapes) of its refusals, so that a client is tested against the
// errors users really see. The presets below are written from each
// product's documented behaviour and from error messages users report;
// each preset's comment says what it emulates.
type Provider struct {
	Name string
	// Prefix is the path the API is served under; Server.URL is the server
	// root plus Prefix. Empty means "/v1".
	Prefix string
	// AlsoRoot serves the API at /chat/completions too (llama.cpp).
	AlsoRoot bool
	// Azure serves Azure OpenAI's classic layout instead of Prefix:
	// /openai/deployments/NAME/chat/completions?api-version=V. Server.URL
	// is then the resource root.
	Azure *Azure
	// Key, when set, must arrive in one of KeyHeaders ("Authorization"
	// means "Bearer KEY"); nil KeyHeaders means Authorization only.
	Key        string
	KeyHeaders []string
	// Unauthorized answers a missing or wrong key; got is what arrived.
	Unauthorized func(got string) Refusal
	// Formats are the response_format types taken; nil takes all.
	Formats []string
	// FormatRefused answers a response_format type not in Formats.
	FormatRefused func(typ string) Refusal
	// StrictSchemas refuses json_schema with strict true unless every
	// object of the schema is closed (additionalProperties false), as
	// OpenAI does.
	StrictSchemas bool
	// Reasoning selects the models that get OpenAI's reasoning-model
	// rules: max_tokens refused, and temperature or top_p other than 1
	// refused. It is given the model (Azure: the deployment's model).
	Reasoning func(model string) bool
	// Fields, when set, are the request fields the server knows: any other
	// is refused with UnknownField (OpenAI). nil ignores unknown fields, as
	// most local servers do.
	Fields       map[string]bool
	UnknownField func(name string) Refusal
	// Refuse lists request fields refused outright, with their refusal
	// (Azure's older api-versions and max_completion_tokens, say).
	Refuse map[string]Refusal
	// Models, when set, are the model names served; others get
	// ModelNotFound.
	Models        []string
	ModelNotFound func(model string) Refusal
	// NoUsage never reports usage, streaming or not (mock-llm).
	NoUsage bool
	// TruncateAtLimit cuts a reply longer than the request's token limit
	// (four characters a token) and reports finish_reason "length".
	TruncateAtLimit bool
	// StreamComments sends an SSE comment line before every event
	// (OpenRouter's ": OPENROUTER PROCESSING" keep-alives).
	StreamComments bool
	// NotFound answers a path the server does not serve.
	NotFound func(method, path string) Refusal
}

// Azure describes an Azure OpenAI resource's classic surface.
type Azure struct {
	// Deployments maps each deployment name to the model behind it.
	Deployments map[string]string
	// Versions are the api-versions accepted.
	Versions []string
	// NoSchemaBefore and NoCompletionTokensBefore are the first versions
	// that take json_schema and max_completion_tokens; older ones refuse
	// them as Azure does. Versions compare as text (YYYY-MM-DD...).
	NoSchemaBefore           string
	NoCompletionTokensBefore string
}

// Refusal is an error response: status, content type and body as sent.
type Refusal struct {
	Status      int
	ContentType string // "" means application/json
	Body        string
}

// openAIError is the body OpenAI (and most servers copying it) send.
func openAIError(status int, message, typ string, param, code any) Refusal {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "param": param, "code": code}})
	return Refusal{Status: status, Body: string(body)}
}

// openAIFields are the request fields of OpenAI's Chat Completions API.
var openAIFields = setOf("model", "messages", "temperature", "top_p", "n", "stream", "stream_options", "stop",
	"max_tokens", "max_completion_tokens", "presence_penalty", "frequency_penalty", "logit_bias", "logprobs",
	"top_logprobs", "user", "response_format", "seed", "tools", "tool_choice", "parallel_tool_calls",
	"reasoning_effort", "service_tier", "store", "metadata", "modalities", "prediction", "audio",
	"web_search_options", "verbosity", "prompt_cache_key", "safety_identifier", "functions", "function_call")

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// OpenAIReasoning reports whether OpenAI treats a model as a reasoning
// model (o1, o3, o4-mini, gpt-5 and their versions; not gpt-5-chat).
func OpenAIReasoning(model string) bool {
	m := strings.ToLower(model)
	return strings.HasPrefix(m, "gpt-5") && !strings.Contains(m, "-chat") ||
		len(m) >= 2 && m[0] == 'o' && m[1] >= '1' && m[1] <= '9'
}

// OpenAI emulates api.openai.com: Bearer key, unknown fields refused,
// reasoning models refuse max_tokens and sampling parameters, strict
// schemas must be closed, and a wrong path answers "Invalid URL".
func OpenAI(key string) Provider {
	return Provider{
		Name: "openai", Prefix: "/v1", Key: key,
		Unauthorized: func(got string) Refusal {
			if got == "" {
				return openAIError(401, "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.", "invalid_request_error", nil, nil)
			}
			return openAIError(401, "Incorrect API key provided: "+maskKey(got)+". You can find your API key at https://platform.openai.com/account/api-keys.", "invalid_request_error", nil, "invalid_api_key")
		},
		StrictSchemas: true,
		Reasoning:     OpenAIReasoning,
		Fields:        openAIFields,
		UnknownField: func(name string) Refusal {
			return openAIError(400, "Unrecognized request argument supplied: "+name, "invalid_request_error", nil, nil)
		},
		ModelNotFound: func(model string) Refusal {
			return openAIError(404, "The model `"+model+"` does not exist or you do not have access to it.", "invalid_request_error", nil, "model_not_found")
		},
		NotFound: func(method, path string) Refusal {
			return openAIError(404, fmt.Sprintf("Invalid URL (%s %s)", method, path), "invalid_request_error", nil, nil)
		},
	}
}

// maskKey shows a key the way OpenAI's 401 does: its ends only.
func maskKey(k string) string {
	if len(k) <= 8 {
		return "***"
	}
	return k[:3] + "*****" + k[len(k)-4:]
}

func azureError(status int, code, message string) Refusal {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"code": code, "message": message}})
	return Refusal{Status: status, Body: string(body)}
}

// AzureClassic emulates an Azure OpenAI resource's classic deployment
// surface: the key in an api-key header, an api-version on every request,
// deployments by name (a deployment of a reasoning model gets OpenAI's
// reasoning rules whatever it is called), and Azure's error texts.
func AzureClassic(key string, az Azure) Provider {
	p := OpenAI(key)
	p.Name = "azure"
	p.Prefix = ""
	p.Azure = &az
	p.KeyHeaders = []string{"api-key"}
	p.Unauthorized = func(string) Refusal {
		return azureError(401, "401", "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.")
	}
	p.ModelNotFound = func(string) Refusal {
		return azureError(404, "DeploymentNotFound", "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.")
	}
	p.NotFound = func(string, string) Refusal { return azureError(404, "404", "Resource not found") }
	return p
}

// AzureV1 emulates Azure OpenAI's /openai/v1 surface: OpenAI's rules, the
// deployment name as the model, the key as api-key or Bearer.
func AzureV1(key string, deployments map[string]string) Provider {
	p := AzureClassic(key, Azure{Deployments: deployments})
	p.Name = "azure-v1"
	p.Azure = nil
	p.Prefix = "/openai/v1"
	p.KeyHeaders = []string{"api-key", "Authorization"}
	p.Models = nil
	for name := range deployments {
		p.Models = append(p.Models, name)
	}
	sort.Strings(p.Models)
	p.Reasoning = func(model string) bool { return OpenAIReasoning(deployments[model]) }
	return p
}

// OpenRouter emulates openrouter.ai: the API under /api/v1, Bearer key,
// vendor/model names, extra fields (provider routing, reasoning) taken,
// keep-alive comments in streams.
func OpenRouter(key string, models ...string) Provider {
	return Provider{
		Name: "openrouter", Prefix: "/api/v1", Key: key,
		Unauthorized: func(string) Refusal {
			return Refusal{Status: 401, Body: `{"error":{"message":"No auth credentials found","code":401}}`}
		},
		Models: models,
		ModelNotFound: func(model string) Refusal {
			body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": model + " is not a valid model ID", "code": 400}})
			return Refusal{Status: 400, Body: string(body)}
		},
		StreamComments: true,
	}
}

// Ollama emulates Ollama's OpenAI-compatible API: no key, unknown fields
// ignored, Go's plain-text 404 for other paths, and "try pulling it first"
// for a model it does not have.
func Ollama(models ...string) Provider {
	return Provider{
		Name: "ollama", Prefix: "/v1", Models: models,
		ModelNotFound: func(model string) Refusal {
			return openAIError(404, fmt.Sprintf("model %q not found, try pulling it first", model), "api_error", nil, nil)
		},
		NotFound: func(string, string) Refusal {
			return Refusal{Status: 404, ContentType: "text/plain", Body: "404 page not found"}
		},
	}
}

// VLLM emulates vLLM's OpenAI-compatible server: extra sampling fields
// (top_k, repetition_penalty...) taken, FastAPI's {"detail": "Not Found"}
// for other paths, and its own error object for a model it does not serve.
func VLLM(models ...string) Provider {
	return Provider{
		Name: "vllm", Prefix: "/v1", Models: models,
		ModelNotFound: func(model string) Refusal {
			body, _ := json.Marshal(map[string]any{"object": "error", "message": "The model `" + model + "` does not exist.", "type": "NotFoundError", "param": nil, "code": 404})
			return Refusal{Status: 404, Body: string(body)}
		},
		NotFound: func(string, string) Refusal { return Refusal{Status: 404, Body: `{"detail":"Not Found"}`} },
	}
}

// LMStudio emulates LM Studio's server: response_format json_schema or
// text only, refused with its own message, and 200 with an error for a path
// it does not serve.
func LMStudio() Provider {
	return Provider{
		Name: "lmstudio", Prefix: "/v1",
		Formats: []string{"json_schema", "text"},
		FormatRefused: func(string) Refusal {
			return Refusal{Status: 400, Body: `{"error":"'response_format.type' must be 'json_schema' or 'text'"}`}
		},
		NotFound: func(method, path string) Refusal {
			return Refusal{Status: 200, Body: fmt.Sprintf(`{"error":"Unexpected endpoint or method. (%s %s)"}`, method, path)}
		},
	}
}

// LlamaCpp emulates llama.cpp's llama-server: the API at /v1 and at the
// root, any model name, json_object and json_schema taken.
func LlamaCpp() Provider {
	return Provider{
		Name: "llama.cpp", Prefix: "/v1", AlsoRoot: true,
		NotFound: func(string, string) Refusal {
			return Refusal{Status: 404, Body: `{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}`}
		},
	}
}

// NewProvider starts a server that answers with h under p's rules, and
// registers t.Cleanup(Close).
func NewProvider(t testing.TB, p Provider, h Handler) *Server {
	t.Helper()
	s := start(t, h, &p)
	switch {
	case p.Azure != nil:
		s.URL = s.Root
	case p.Prefix == "":
		s.URL = s.Root + "/v1"
	default:
		s.URL = s.Root + p.Prefix
	}
	return s
}

var azurePath = regexp.MustCompile(`^/openai/deployments/([^/]+)/chat/completions$`)

// route finds the model a request to path is for under the provider's
// rules ("" when the body names it), or the refusal for a path not served.
func (p *Provider) route(r *http.Request) (deployment string, refusal *Refusal) {
	notFound := func() *Refusal {
		if p.NotFound == nil {
			ref := openAIError(404, fmt.Sprintf("llmtest: unknown path %s", r.URL.Path), "invalid_request_error", nil, nil)
			return &ref
		}
		ref := p.NotFound(r.Method, r.URL.Path)
		return &ref
	}
	if p.Azure != nil {
		m := azurePath.FindStringSubmatch(r.URL.Path)
		if m == nil {
			return "", notFound()
		}
		v := r.URL.Query().Get("api-version")
		if v == "" {
			ref := azureError(404, "404", "Resource not found")
			return "", &ref
		}
		if !slices.Contains(p.Azure.Versions, v) {
			ref := azureError(400, "BadRequest", "API version not supported")
			return "", &ref
		}
		return m[1], nil
	}
	prefix := p.Prefix
	if prefix == "" {
		prefix = "/v1"
	}
	if r.URL.Path == prefix+"/chat/completions" || p.AlsoRoot && r.URL.Path == "/chat/completions" {
		return "", nil
	}
	return "", notFound()
}

// authorize checks the key.
func (p *Provider) authorize(h http.Header) *Refusal {
	if p.Key == "" {
		return nil
	}
	headers := p.KeyHeaders
	if headers == nil {
		headers = []string{"Authorization"}
	}
	got := ""
	for _, name := range headers {
		v := h.Get(name)
		if strings.EqualFold(name, "Authorization") {
			if k, ok := strings.CutPrefix(v, "Bearer "); ok {
				v = k
			} else {
				v = ""
			}
		}
		if v == p.Key {
			return nil
		}
		if v != "" {
			got = v
		}
	}
	ref := openAIError(401, "llmtest: wrong or missing key", "invalid_request_error", nil, nil)
	if p.Unauthorized != nil {
		ref = p.Unauthorized(got)
	}
	return &ref
}

// check applies the provider's request rules; model is the model the
// request is for (the deployment's, on Azure).
func (p *Provider) check(req *Request, deployment string) *Refusal {
	model := req.Model
	if p.Azure != nil {
		m, ok := p.Azure.Deployments[deployment]
		if !ok {
			ref := p.ModelNotFound(deployment)
			return &ref
		}
		model = m
	} else if p.Models != nil && !slices.Contains(p.Models, req.Model) {
		ref := openAIError(404, "llmtest: unknown model "+req.Model, "invalid_request_error", nil, nil)
		if p.ModelNotFound != nil {
			ref = p.ModelNotFound(req.Model)
		}
		return &ref
	}
	names := make([]string, 0, len(req.Fields))
	for name := range req.Fields {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if ref, ok := p.Refuse[name]; ok {
			return &ref
		}
		if p.Fields != nil && !p.Fields[name] {
			ref := p.UnknownField(name)
			return &ref
		}
	}
	if p.Azure != nil {
		v := ""
		if req.Query != nil {
			v = req.Query.Get("api-version")
		}
		if _, ok := req.Fields["max_completion_tokens"]; ok && v < p.Azure.NoCompletionTokensBefore {
			ref := openAIError(400, "Unrecognized request argument supplied: max_completion_tokens", "invalid_request_error", nil, nil)
			return &ref
		}
		if req.ResponseFormat == "json_schema" && v < p.Azure.NoSchemaBefore {
			ref := openAIError(400, "response_format value as json_schema is enabled only for api versions 2024-08-01-preview and later", "invalid_request_error", nil, nil)
			return &ref
		}
	}
	if p.Reasoning != nil && p.Reasoning(model) {
		if _, ok := req.Fields["max_tokens"]; ok {
			ref := openAIError(400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "invalid_request_error", "max_tokens", "unsupported_parameter")
			return &ref
		}
		for _, name := range []string{"temperature", "top_p"} {
			var v float64
			if raw, ok := req.Fields[name]; ok && json.Unmarshal(raw, &v) == nil && v != 1 {
				ref := openAIError(400, fmt.Sprintf("Unsupported value: '%s' does not support %v with this model. Only the default (1) value is supported.", name, v), "invalid_request_error", name, "unsupported_value")
				return &ref
			}
		}
	} else if p.Fields != nil {
		if _, ok := req.Fields["reasoning_effort"]; ok {
			ref := openAIError(400, "Unsupported parameter: 'reasoning_effort' is not supported with this model.", "invalid_request_error", "reasoning_effort", "unsupported_parameter")
			return &ref
		}
	}
	if req.ResponseFormat != "" && p.Formats != nil && !slices.Contains(p.Formats, req.ResponseFormat) {
		ref := p.FormatRefused(req.ResponseFormat)
		return &ref
	}
	if p.StrictSchemas && req.ResponseFormat == "json_schema" && req.Strict && !closedSchema(req.JSONSchema) {
		ref := openAIError(400, fmt.Sprintf("Invalid schema for response_format '%s': In context=(), 'additionalProperties' is required to be supplied and to be false.", req.SchemaName), "invalid_request_error", "response_format", nil)
		return &ref
	}
	return nil
}

// closedSchema reports whether every object of a schema sets
// additionalProperties false, as OpenAI's strict mode demands.
func closedSchema(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	var closed func(any) bool
	closed = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			if x["type"] == "object" && x["additionalProperties"] != false {
				return false
			}
			for _, e := range x {
				if !closed(e) {
					return false
				}
			}
		case []any:
			for _, e := range x {
				if !closed(e) {
					return false
				}
			}
		}
		return true
	}
	return closed(v)
}

// adjust applies the provider's reply rules.
func (p *Provider) adjust(req Request, rep Reply) Reply {
	if p.TruncateAtLimit && req.MaxTokens > 0 && len(rep.Content) > 4*req.MaxTokens {
		rep.Content = rep.Content[:4*req.MaxTokens]
		rep.FinishReason = "length"
	}
	return rep
}

func (r Refusal) write(w http.ResponseWriter) {
	ct := r.ContentType
	if ct == "" {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(r.Status)
	_, _ = w.Write([]byte(r.Body))
}
