package runtime

import "github.com/debate-runner/runner/runtime/llm"

// endpoints are a run's connections to the endpoints its plan uses: the
// environment keys and URLs are read from, the clients (from a pool that
// the runs of a sweep share, so limits hold across them), the base URLs
// actually used and the secrets the run must never write.
type endpoints struct {
	getenv func(string) string
	// dotEnvErr is why the .env next to the spec could not be read; a run
	// that connects to an endpoint reports it.
	dotEnvErr error
	clients   map[string]*llm.Client
	pool      *ClientPool
	bases     map[string]string // endpoint name -> base URL actually used
	secrets   []string
}
