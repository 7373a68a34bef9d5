package runtime

import (
	"github.com/debate-runner/runner/internal/dotenv"
	"github.com/debate-runner/runner/runtime/llm"
)

// endpoints are a run's connections to the endpoints its plan uses: the
// environment keys and URLs are read from, the clients (from a pool that
// the runs of a sweep share, so limits hold across them), the base URLs
// actually used and the secrets the run must never write.
type endpoints struct {
	getenv func(string) string
	// envPath is the .env file next to the spec, read for what the
	// environment lacks when the run connects (see readDotEnv).
	envPath  string
	readOnce bool
	clients  map[string]*llm.Client
	pool     *ClientPool
	bases    map[string]string // endpoint name -> base URL actually used
	secrets  []string
}

// readDotEnv makes getenv read the .env file next to the spec for variables
// the environment does not set. It is read when the run connects, not
// before: a run that connects nowhere (a dry or embedded one, a replay)
// reads no file.
func (e *endpoints) readDotEnv() error {
	if e.readOnce {
		return nil
	}
	e.readOnce = true
	dot, err := dotenv.Read(e.envPath)
	if err != nil {
		return err
	}
	env := e.getenv
	e.getenv = func(k string) string {
		if v := env(k); v != "" {
			return v
		}
		return dot[k]
	}
	return nil
}
