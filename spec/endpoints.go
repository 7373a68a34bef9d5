package spec

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/debate-runner/runner/spec/syntax"

	"gopkg.in/yaml.v3"
)

// managedFields are the request fields runner sets itself; extra may not
// set them, so that what a spec says in one place cannot be contradicted in
// another. Each maps to where the spec sets it, if anywhere.
var managedFields = map[string]string{
	"model": "the model's model", "messages": "the prompts", "tools": "the agents' tools", "tool_choice": "",
	"response_format": "json_mode", "stream": "the model's stream", "stream_options": "the endpoint's stream_usage",
	"temperature": "the model's temperature", "top_p": "the model's top_p", "seed": "the model's seed",
	"max_tokens": "the model's max_tokens", "max_completion_tokens": "the model's max_tokens (and max_tokens_field)",
	"reasoning_effort": "the model's reasoning_effort", "n": "",
}

// envRef is a ${NAME} reference in a base URL or header value.
var envRef = regexp.MustCompile(`\$\{([^}]*)\}`)

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// headerName is an HTTP header field name (RFC 9110 token).
var headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")

// ExpandEnv replaces each ${NAME} in s by getenv(NAME). A name without a
// value is an error naming it: an empty key or host would fail later and
// say less.
func ExpandEnv(s string, getenv func(string) string) (string, error) {
	var missing []string
	out := envRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		v := getenv(name)
		if v == "" {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("environment variable %s is not set", strings.Join(missing, ", "))
	}
	return out, nil
}

// checkEnvRefs reports malformed ${...} references in a value.
func (c *compiler) checkEnvRefs(s syntax.Str, what string) {
	rest := s.V
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			return
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			c.r.Errorf(s.Pos, "%s: ${ without a closing } (write ${NAME} to use an environment variable)", what)
			return
		}
		if name := rest[i+2 : i+j]; !envName.MatchString(name) {
			c.r.Errorf(s.Pos, "%s: ${%s} is not an environment variable name (letters, digits and '_')", what, name)
		}
		rest = rest[i+j+1:]
	}
}

func (c *compiler) endpointsAndModels() {
	def := &EndpointPlan{Name: "default", Kind: c.reg.DefaultProvider(), BaseURL: "https://api.openai.com/v1", APIKeyEnv: "OPENAI_API_KEY", FromEnv: true, Timeout: 120 * time.Second, MaxRetries: 4}
	def.Provider, _ = c.reg.Provider(def.Kind)
	c.plan.Endpoints["default"] = def
	defaultTimeout := 120 * time.Second
	defaultRetries := 4
	if t := c.file.Defaults.Timeout; t != "" {
		if d, err := time.ParseDuration(t); err == nil {
			defaultTimeout = d
			def.Timeout = d
		}
	}
	if c.file.Defaults.MaxRetries != nil {
		defaultRetries = *c.file.Defaults.MaxRetries
		def.MaxRetries = defaultRetries
	}
	for _, k := range c.file.Endpoints.Keys {
		e := c.file.Endpoints.Values[k.V]
		ep := &EndpointPlan{
			Name: k.V, Kind: c.reg.DefaultProvider(), BaseURL: strings.TrimRight(e.BaseURL.V, "/"),
			APIKeyEnv: e.APIKeyEnv, APIKeyHeader: e.APIKeyHeader.V,
			MaxConcurrency: e.MaxConcurrency, RequestsPerMinute: e.RequestsPerMinute, TokensPerMinute: e.TokensPerMinute,
			Timeout: defaultTimeout, MaxRetries: defaultRetries,
			JSONMode: e.JSONMode.V, MaxTokensField: e.MaxTokensField.V, NoStreamUsage: e.StreamUsage != nil && !*e.StreamUsage,
		}
		if e.Kind.Set {
			ep.Kind = e.Kind.V
		}
		if len(e.Settings) > 0 {
			ep.Settings = map[string]string{}
			for name, v := range e.Settings {
				ep.Settings[name] = v.V
			}
		}
		if e.Timeout.Set {
			d, err := time.ParseDuration(e.Timeout.V)
			if err != nil || d <= 0 {
				c.r.Errorf(e.Timeout.Pos, "endpoint %q: timeout %q is not a positive duration such as 90s or 2m", k.V, e.Timeout.V)
			} else {
				ep.Timeout = d
			}
		}
		if e.MaxRetries != nil {
			ep.MaxRetries = *e.MaxRetries
		}
		if e.MaxRetryWait.Set {
			d, err := time.ParseDuration(e.MaxRetryWait.V)
			if err != nil || d <= 0 {
				c.r.Errorf(e.MaxRetryWait.Pos, "endpoint %q: max_retry_wait %q is not a positive duration such as 30s or 5m", k.V, e.MaxRetryWait.V)
			} else {
				ep.MaxRetryWait = d
			}
		}
		c.checkEndpoint(k, e, ep)
		if e.Headers.Len() > 0 {
			ep.Headers = map[string]string{}
			for _, h := range e.Headers.Keys {
				v := e.Headers.Values[h.V]
				if !headerName.MatchString(h.V) {
					c.r.Errorf(h.Pos, "endpoint %q: %q is not an HTTP header name (letters, digits and -)", k.V, h.V)
				}
				c.checkEnvRefs(*v, fmt.Sprintf("endpoint %q header %s", k.V, h.V))
				ep.Headers[h.V] = v.V
			}
		}
		ep.Extra = c.requestFields(e.Extra, fmt.Sprintf("endpoint %q", k.V))
		c.plan.Endpoints[k.V] = ep
	}
	names := c.file.Endpoints.Names()
	if !c.file.Endpoints.Has("default") {
		names = append(names, "default")
	}
	for _, k := range c.file.Models.Keys {
		m := c.file.Models.Values[k.V]
		mp := &ModelPlan{
			Name: k.V, Model: m.Model, Deployment: m.Deployment.V, Temperature: m.Temperature, TopP: m.TopP,
			MaxTokens: m.MaxTokens, Seed: m.Seed, Stream: m.Stream, Price: m.Price,
			ReasoningEffort: m.ReasoningEffort.V, JSONMode: m.JSONMode.V, MaxTokensField: m.MaxTokensField.V,
			Omit: m.Omit.Values(), CacheBreakpoints: m.PromptCache.V == "breakpoints",
		}
		epName := "default"
		if m.Endpoint.Set {
			epName = m.Endpoint.V
		}
		ep, ok := c.plan.Endpoints[epName]
		if !ok {
			c.r.Errorf(m.Endpoint.Pos, "model %q uses unknown endpoint %q%s", k.V, epName, syntax.DidYouMean(epName, names))
		}
		mp.Endpoint = ep
		if m.Deployment.Set && ep != nil && !c.takesDeployments(ep.Kind) {
			c.r.Errorf(m.Deployment.Pos, "model %q: deployment applies only to endpoints of kind %s (endpoint %q is %s); on other endpoints the model name is what the server knows", k.V, strings.Join(c.deploymentKinds(), " or "), ep.Name, ep.Kind)
		}
		mp.Extra = c.requestFields(m.Extra, fmt.Sprintf("model %q", k.V))
		if mp.Price == nil && !c.unpriced(ep) {
			mp.Price = BuiltinPrice(m.Model)
		}
		c.plan.Models[k.V] = mp
	}
	if _, ok := c.plan.Models["default"]; !ok {
		// The implicit model goes to the spec's own default endpoint when it
		// declares one: prompts must never reach a host the user did not
		// name, billed to a key they did not give for it.
		c.plan.Models["default"] = &ModelPlan{Name: "default", Model: "gpt-4o-mini", Endpoint: c.plan.Endpoints["default"], Price: BuiltinPrice("gpt-4o-mini")}
	}
	// A kind every spec may use without declaring it (the offline model)
	// is an endpoint and a model of its name, unless the spec uses the
	// name: `runner run --offline` puts that model in place of every other.
	for _, p := range c.reg.Providers() {
		b, ok := p.(Builtin)
		if !ok || !b.Builtin() {
			continue
		}
		name := p.Name()
		if _, taken := c.plan.Endpoints[name]; taken {
			continue
		}
		if _, taken := c.plan.Models[name]; taken {
			continue
		}
		ep := &EndpointPlan{Name: name, Kind: name, Provider: p, Timeout: defaultTimeout}
		c.plan.Endpoints[name] = ep
		c.plan.Models[name] = &ModelPlan{Name: name, Model: name, Endpoint: ep}
	}
}

// checkEndpoint reports settings of an endpoint that cannot work together,
// and what the HTTP client would refuse at the first call.
func (c *compiler) checkEndpoint(k syntax.Str, e *syntax.Endpoint, ep *EndpointPlan) {
	who := fmt.Sprintf("endpoint %q", k.V)
	for _, h := range e.Headers.Keys {
		v := e.Headers.Values[h.V]
		if i := strings.IndexFunc(v.V, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }); i >= 0 {
			c.r.Errorf(h.Pos, "%s: header %q holds a control character (%U); a header value is one line of text", who, h.V, []rune(v.V[i:])[0])
		}
	}
	c.checkEnvRefs(e.BaseURL, who+" base_url")
	base := envRef.ReplaceAllString(ep.BaseURL, "x")
	u, err := url.Parse(base)
	if e.BaseURL.Set && !strings.HasPrefix(ep.BaseURL, "${") && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		c.r.Errorf(e.BaseURL.Pos, "%s: base_url %q is not an http:// or https:// URL", who, e.BaseURL.V)
		return
	}
	if !e.BaseURL.Set || strings.HasPrefix(ep.BaseURL, "${") {
		u = nil
	}
	c.checkProvider(k, e, ep, u)
}

// takesDeployments reports whether models of endpoints of the kind may
// name a deployment.
func (c *compiler) takesDeployments(kind string) bool {
	p, ok := c.reg.Provider(kind)
	if !ok {
		return true // the unknown kind is reported
	}
	d, ok := p.(DeploymentTaker)
	return ok && d.TakesDeployments()
}

// deploymentKinds are the provider kinds whose models take a deployment.
func (c *compiler) deploymentKinds() []string {
	var out []string
	for _, p := range c.reg.Providers() {
		if c.takesDeployments(p.Name()) {
			out = append(out, p.Name())
		}
	}
	return out
}

// unpriced reports whether the calls of an endpoint are never priced at a
// model's list price: its kind's (a simulated model), or a server on this
// machine (its base URL as written is local by its kind's rule), whose
// calls cost nothing unless the model declares a price.
func (c *compiler) unpriced(ep *EndpointPlan) bool {
	if ep == nil {
		return false
	}
	p, ok := c.reg.Provider(ep.Kind)
	if !ok {
		return false
	}
	if u, ok := p.(Unpriced); ok && u.Unpriced() {
		return true
	}
	return !ep.FromEnv && ep.BaseURL != "" && !strings.Contains(ep.BaseURL, "${") && p.Local(ep.BaseURL)
}

// requestFields converts extra: to JSON, refusing fields runner sets itself.
func (c *compiler) requestFields(m syntax.Map[syntax.RequestField], who string) []RequestParam {
	var out []RequestParam
	for _, k := range m.Keys {
		if where, ok := managedFields[k.V]; ok {
			if where == "" {
				c.r.Errorf(k.Pos, "%s: extra field %q is set by runner and cannot be passed through", who, k.V)
			} else {
				c.r.Errorf(k.Pos, "%s: extra field %q is set by runner from %s; set it there", who, k.V, where)
			}
			continue
		}
		n := m.Values[k.V].Node
		v, err := jsonValue(n)
		if err != nil {
			c.r.Errorf(syntax.NodePos(n), "%s: extra field %q: %v", who, k.V, err)
			continue
		}
		out = append(out, RequestParam{Name: k.V, Value: v})
	}
	return out
}

// jsonValue converts a YAML value to JSON, refusing what JSON cannot hold.
func jsonValue(n *yaml.Node) (json.RawMessage, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	v, err := jsonable(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// jsonable checks that a decoded YAML value has a JSON form: mappings with
// text keys, no timestamps or binary.
func jsonable(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			ev, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			x[k] = ev
		}
		return x, nil
	case map[any]any:
		return nil, fmt.Errorf("a mapping with keys that are not text has no JSON form")
	case []any:
		for i, e := range x {
			ev, err := jsonable(e)
			if err != nil {
				return nil, err
			}
			x[i] = ev
		}
		return x, nil
	case nil, bool, string, int, int64, uint64, float64:
		return x, nil
	}
	return nil, fmt.Errorf("a %T has no JSON form; quote it to send it as text", v)
}
