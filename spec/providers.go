package spec

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/debate-runner/runner/spec/syntax"
)

// Provider is a provider kind (an endpoint's `kind:`) as the loader sees it:
// its name, its line in the schema, the JSON Schema fragment of the
// settings only its endpoints take, its row of docs/providers.md, and the
// checks of an endpoint of its kind. Provider kinds live in package
// providers, one package each, which also implement the runtime side
// (llm.Provider); the loader knows them only through a Registry.
type Provider interface {
	// Name is the value of an endpoint's `kind:`.
	Name() string
	// Description is one sentence for the schema and the manual.
	Description() string
	// Settings is the JSON Schema fragment of the endpoint settings only
	// this kind takes ({"properties": {...}}; nil for none). They are
	// added to the endpoint's schema, and an endpoint of another kind that
	// sets one is refused.
	Settings() []byte
	// Doc is the kind's row in docs/providers.md.
	Doc() ProviderDoc
	// Check reports what an endpoint of this kind cannot work with.
	Check(e *EndpointCheck)
	// Local reports whether the endpoint at base (as written, ${NAME}
	// references not expanded) runs on this machine: it needs no key, and
	// its models get no built-in list price.
	Local(base string) bool
}

// ProviderDoc is a provider kind's row in the table of kinds in
// docs/providers.md.
type ProviderDoc struct {
	// Speaks is the API the kind speaks and where its requests go.
	Speaks string
	// Settings are what an endpoint of the kind is given.
	Settings string
	// Test names the test that drives the kind end to end.
	Test string
	// GenAIName is the kind's gen_ai.provider.name in traces (OpenTelemetry's
	// GenAI conventions) when the endpoint's host names no known provider.
	GenAIName string
}

// DeploymentTaker is implemented by provider kinds whose models may name a
// deployment (the model's `deployment:`); the others refuse it.
type DeploymentTaker interface{ TakesDeployments() bool }

// Unpriced is implemented by provider kinds whose calls cost nothing and
// are never priced at a model's list price (a simulated model): their
// models get no built-in price.
type Unpriced interface{ Unpriced() bool }

// Simulated is implemented by provider kinds whose replies are made by
// runner rather than asked of a model (the offline model): runs that use
// one say so in their progress, result and reports.
type Simulated interface{ Simulated() bool }

// Builtin is implemented by provider kinds that every spec may use
// without declaring an endpoint: the loader adds an endpoint and a model
// named after the kind (unless the spec declares one of that name), which
// `runner run --offline` puts in place of every model.
type Builtin interface{ Builtin() bool }

// EndpointCheck is an endpoint of a provider's kind being checked.
type EndpointCheck struct {
	// Name is the endpoint's name, Pos where it is declared.
	Name string
	Pos  syntax.Pos
	// BaseURL is base_url as written (Set false when not given), and URL
	// it parsed with ${NAME} references replaced (nil when it is not an
	// absolute http(s) URL, which the loader has reported).
	BaseURL syntax.Str
	URL     *url.URL
	// Settings are the kind-specific settings given (see
	// Provider.Settings), by name.
	Settings map[string]syntax.Str

	r       *syntax.Reporter
	refused map[string]bool
}

// Errorf reports an error at pos (the endpoint's position when pos is
// zero), prefixed with the endpoint's name.
func (e *EndpointCheck) Errorf(pos syntax.Pos, format string, args ...any) {
	if pos == (syntax.Pos{}) {
		pos = e.Pos
	}
	e.r.Errorf(pos, "endpoint %q: %s", e.Name, fmt.Sprintf(format, args...))
}

// Warnf reports a warning at pos, prefixed with the endpoint's name.
func (e *EndpointCheck) Warnf(pos syntax.Pos, format string, args ...any) {
	if pos == (syntax.Pos{}) {
		pos = e.Pos
	}
	e.r.Warnf(pos, "endpoint %q: %s", e.Name, fmt.Sprintf(format, args...))
}

// Refuse reports a setting of another kind given to this endpoint, with
// what the kind would say about it; the loader then says nothing more of
// it.
func (e *EndpointCheck) Refuse(setting, why string) {
	s, ok := e.Settings[setting]
	if !ok {
		return
	}
	if e.refused == nil {
		e.refused = map[string]bool{}
	}
	e.refused[setting] = true
	e.Errorf(s.Pos, "%s", why)
}

// Providers lists the provider kinds of the registry in registration order.
func (r *Registry) Providers() []Provider { return append([]Provider(nil), r.providers...) }

// Provider returns the provider kind of that name.
func (r *Registry) Provider(name string) (Provider, bool) {
	for _, p := range r.providers {
		if p.Name() == name {
			return p, true
		}
	}
	return nil, false
}

// ProviderNames lists the provider kinds' names in registration order.
func (r *Registry) ProviderNames() []string {
	out := make([]string, len(r.providers))
	for i, p := range r.providers {
		out[i] = p.Name()
	}
	return out
}

// DefaultProvider is the kind of an endpoint that names none, and of the
// built-in default endpoint: the first registered.
func (r *Registry) DefaultProvider() string {
	if len(r.providers) == 0 {
		return ""
	}
	return r.providers[0].Name()
}

// settingOwner is the provider kind that declares a setting, "" for none.
func (r *Registry) settingOwner(setting string) string {
	for _, p := range r.providers {
		if slices.Contains(syntax.FragmentProperties(p.Settings()), setting) {
			return p.Name()
		}
	}
	return ""
}

// checkProvider runs the endpoint's provider kind's checks and refuses
// the settings of other kinds the kind said nothing of.
func (c *compiler) checkProvider(k syntax.Str, e *syntax.Endpoint, ep *EndpointPlan, u *url.URL) {
	p, ok := c.reg.Provider(ep.Kind)
	if !ok {
		pos := e.Kind.Pos
		if !e.Kind.Set {
			pos = k.Pos
		}
		c.r.Errorf(pos, "endpoint %q: unknown kind %q (kinds: %s)%s", k.V, ep.Kind, strings.Join(c.reg.ProviderNames(), ", "), syntax.DidYouMean(ep.Kind, c.reg.ProviderNames()))
		return
	}
	ep.Provider = p
	chk := &EndpointCheck{Name: k.V, Pos: k.Pos, BaseURL: e.BaseURL, URL: u, Settings: e.Settings, r: c.r}
	p.Check(chk)
	own := syntax.FragmentProperties(p.Settings())
	for _, name := range syntax.SortedKeys(e.Settings) {
		if chk.refused[name] || slices.Contains(own, name) {
			continue
		}
		if owner := c.reg.settingOwner(name); owner != "" {
			c.r.Errorf(e.Settings[name].Pos, "endpoint %q: %s applies only to kind %s", k.V, name, owner)
		}
	}
}
