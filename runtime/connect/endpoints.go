package connect

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/debate-runner/runner/internal/dotenv"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/batch"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/spec"
)

// Endpoints are a run's connections to the endpoints its plan uses: the
// environment keys and URLs are read from, the clients (from a pool that
// the runs of a sweep share, so limits hold across them), the base URLs
// actually used and the secrets the run must never write.
type Endpoints struct {
	Getenv func(string) string
	// EnvPath is the .env file next to the spec, read for what the
	// environment lacks when the run connects (see ReadDotEnv).
	EnvPath  string
	readOnce bool
	Clients  map[string]*llm.Client
	Pool     *Pool
	Bases    map[string]string // endpoint name -> base URL actually used
	Secrets  []string
}

// New are a run's connections, none made yet: their clients come from
// pool, the environment is read with getenv and the .env file at envPath.
func New(pool *Pool, getenv func(string) string, envPath string) *Endpoints {
	return &Endpoints{Pool: pool, Bases: map[string]string{}, Getenv: getenv, EnvPath: envPath, Clients: map[string]*llm.Client{}}
}

// ReadDotEnv makes Getenv read the .env file next to the spec for variables
// the environment does not set. It is read when the run connects, not
// before: a run that connects nowhere (a dry or embedded one, a replay)
// reads no file.
func (e *Endpoints) ReadDotEnv() error {
	if e.readOnce {
		return nil
	}
	e.readOnce = true
	dot, err := dotenv.Read(e.EnvPath)
	if err != nil {
		return err
	}
	env := e.Getenv
	e.Getenv = func(k string) string {
		if v := env(k); v != "" {
			return v
		}
		return dot[k]
	}
	return nil
}

// Seams are what tests put in place of the network and the clock.
type Seams struct {
	// HTTPClient is used for all endpoints; nil means the default.
	HTTPClient *http.Client
	// Sleep replaces time.Sleep in retries.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Connect creates one client per endpoint of models not yet connected,
// after checking that each has its API key and every environment variable
// its URL and headers name. Calls to endpoints whose kind has a batch API
// go through col when it is set. secret is told each time the secrets
// grow by an endpoint's, so that what the run writes from then on keeps
// them out.
func (e *Endpoints) Connect(models []*spec.ModelPlan, seams Seams, col *batch.Collector, secret func([]string)) error {
	if err := e.ReadDotEnv(); err != nil {
		return &args.FlagError{Flag: ".env file", Err: err}
	}
	for _, m := range models {
		ep := m.Endpoint
		if ep == nil || e.Clients[ep.Name] != nil {
			continue
		}
		base := ep.BaseURL
		if ep.FromEnv {
			if v := e.Getenv("OPENAI_BASE_URL"); v != "" {
				base = strings.TrimRight(v, "/")
			}
		}
		base, err := spec.ExpandEnv(base, e.Getenv)
		if err != nil {
			return &args.FlagError{Flag: "environment", Err: fmt.Errorf("endpoint %q base_url %s: %w", ep.Name, ep.BaseURL, err)}
		}
		proto, err := llm.ProtocolOf(ep)
		if err != nil {
			return err
		}
		key := ""
		if ep.APIKeyEnv != "" {
			key = e.Getenv(ep.APIKeyEnv)
		}
		if key == "" && !IsLocal(proto, base) {
			return &args.FlagError{
				Flag: "environment variable " + ep.APIKeyEnv,
				Err:  fmt.Errorf("endpoint %q (%s) needs an API key: set %s (or put it in a .env file next to the spec)", ep.Name, base, ep.APIKeyEnv),
			}
		}
		if key != "" {
			e.Secrets = append(e.Secrets, key)
		}
		var headers map[string]string
		if len(ep.Headers) > 0 {
			headers = make(map[string]string, len(ep.Headers))
			for name, raw := range ep.Headers {
				v, err := spec.ExpandEnv(raw, e.Getenv)
				if err != nil {
					return &args.FlagError{Flag: "environment", Err: fmt.Errorf("endpoint %q header %s: %w", ep.Name, name, err)}
				}
				if v != raw {
					// What came from the environment is a secret (a gateway
					// key, Azure's api-key): the journal never holds it.
					e.Secrets = append(e.Secrets, v)
				}
				headers[name] = v
			}
		}
		e.Bases[ep.Name] = base
		secret(e.Secrets)
		lep := llm.Endpoint{
			Name: ep.Name, Provider: proto, BaseURL: base, Settings: ep.Settings, APIKey: key, KeyHeader: ep.APIKeyHeader,
			MaxConcurrency: ep.MaxConcurrency, RequestsPerMinute: ep.RequestsPerMinute, TokensPerMinute: ep.TokensPerMinute,
			Timeout: ep.Timeout, MaxRetries: ep.MaxRetries, MaxRetryWait: ep.MaxRetryWait, Headers: headers,
			HTTPClient: seams.HTTPClient, Sleep: seams.Sleep,
		}
		variant := ""
		if b, ok := proto.(llm.Batcher); ok && col != nil {
			variant = fmt.Sprintf("batch %p", col)
			// The calls wait in the provider's batch queue, not the
			// endpoint's limits, for up to a day; a request the batch
			// does not answer is sent on its own with the endpoint's
			// timeout.
			lep.Batch = col.Wrap(b, ep.Timeout)
			lep.Timeout, lep.MaxConcurrency, lep.RequestsPerMinute, lep.TokensPerMinute = batch.MaxWait, 0, 0, 0
		}
		e.Clients[ep.Name] = e.Pool.Client(lep, variant)
	}
	return nil
}

// IsLocal reports whether an endpoint at base runs on this machine, by
// its provider kind (nil: any OpenAI-compatible server).
func IsLocal(p llm.Protocol, base string) bool {
	if p == nil {
		return llm.IsLocal(base)
	}
	return p.Local(base)
}
