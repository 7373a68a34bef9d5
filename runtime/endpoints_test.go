package runtime

import (
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/args"
)

// loopbackOnly is a transport that refuses every host but a loopback
// address, and remembers the hosts it refused: a request meant for a local
// test server that went to api.openai.com instead fails the test rather
// than reaching the internet.
type loopbackOnly struct {
	mu      sync.Mutex
	refused []string
}

func (l *loopbackOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if ip := net.ParseIP(req.URL.Hostname()); ip == nil || !ip.IsLoopback() {
		l.mu.Lock()
		l.refused = append(l.refused, req.URL.String())
		l.mu.Unlock()
		return nil, errors.New("test transport: refusing non-loopback host " + req.URL.Host)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestEndpointRouting runs a two-agent spec for every way a model's
// endpoint can be declared or implied, with OPENAI_BASE_URL pointing at a
// decoy server and OPENAI_API_KEY set, and once more with OPENAI_BASE_URL
// unset. Each agent's calls must reach exactly the server the spec names
// (the decoy only where the spec implies the built-in default), with the key
// of that endpoint and no other.
func TestEndpointRouting(t *testing.T) {
	const (
		openaiKey   = "sk-openai-env-key-must-stay-home"
		declaredKey = "sk-declared-endpoint-key"
	)
	agents := func(a, b string) string {
		return "agents:\n  a: {name: Alice" + a + "}\n  b: {name: Bob" + b + "}\n"
	}
	tail := `templates:
  define:
    answer: "KEY={{.Agent.ID}}/r{{.Round}}/answer hello"
nodes:
  answer: {kind: ask, agents: [a, b], template: answer, record: answer NODEMODEL}
flow: [answer]
`
	tests := []struct {
		name string
		head string // endpoints, models, agents; @URL@ is the declared server's URL
		node string // extra keys of the node
		// where each agent's call must go: "declared" or "builtin" (the
		// implicit default endpoint: OPENAI_BASE_URL, else api.openai.com)
		a, b string
		key  string // the Authorization the declared server must see, "" for none
	}{
		{
			name: "declared default endpoint, no models",
			head: "endpoints:\n  default: {base_url: @URL@, requests_per_minute: 120}\n" + agents("", ""),
			a:    "declared", b: "declared",
		},
		{
			name: "declared default endpoint with its own key, no models",
			head: "endpoints:\n  default: {base_url: @URL@, api_key_env: DECLARED_KEY}\n" + agents("", ""),
			a:    "declared", b: "declared", key: "Bearer " + declaredKey,
		},
		{
			name: "declared default endpoint, default model without endpoint",
			head: "endpoints:\n  default: {base_url: @URL@}\nmodels:\n  default: {model: local-model}\n" + agents("", ""),
			a:    "declared", b: "declared",
		},
		{
			name: "declared default endpoint, default model as a plain name",
			head: "endpoints:\n  default: {base_url: @URL@}\nmodels:\n  default: local-model\n" + agents("", ""),
			a:    "declared", b: "declared",
		},
		{
			name: "declared default endpoint, agent model without endpoint",
			head: "endpoints:\n  default: {base_url: @URL@}\nmodels:\n  m: {model: local-model}\n" + agents(", model: m", ""),
			a:    "declared", b: "declared",
		},
		{
			name: "named endpoint, default model names it",
			head: "endpoints:\n  local: {base_url: @URL@}\nmodels:\n  default: {model: local-model, endpoint: local}\n" + agents("", ""),
			a:    "declared", b: "declared",
		},
		{
			name: "named endpoint for one agent, the other on the implicit default",
			head: "endpoints:\n  local: {base_url: @URL@}\nmodels:\n  m: {model: local-model, endpoint: local}\n" + agents(", model: m", ""),
			a:    "declared", b: "builtin",
		},
		{
			name: "node model names an endpoint",
			head: "endpoints:\n  local: {base_url: @URL@}\nmodels:\n  m: {model: local-model, endpoint: local}\n" + agents("", ""),
			node: ", model: m",
			a:    "declared", b: "declared",
		},
		{
			name: "nothing declared",
			head: agents("", ""),
			a:    "builtin", b: "builtin",
		},
	}
	for _, tt := range tests {
		for _, withBaseURL := range []bool{true, false} {
			name := tt.name + "/OPENAI_BASE_URL unset"
			if withBaseURL {
				name = tt.name + "/OPENAI_BASE_URL set"
			}
			t.Run(name, func(t *testing.T) {
				declared := llmtest.New(t, keyed(answerOf))
				decoy := llmtest.New(t, keyed(answerOf))
				src := "version: 1\nname: routing\n" + strings.ReplaceAll(tt.head, "@URL@", declared.URL) +
					strings.ReplaceAll(tail, " NODEMODEL", tt.node)
				plan := loadPlan(t, writeSpec(t, t.TempDir(), src))
				env := map[string]string{"OPENAI_API_KEY": openaiKey, "DECLARED_KEY": declaredKey}
				if withBaseURL {
					env["OPENAI_BASE_URL"] = decoy.URL
				}
				guard := &loopbackOnly{}
				_, _, err := execute(t, plan, Options{
					Settings: Settings{Getenv: func(k string) string { return env[k] }},
					Seams:    Seams{HTTPClient: &http.Client{Transport: guard}, Sleep: noSleep},
				})
				wantErr := !withBaseURL && (tt.a == "builtin" || tt.b == "builtin")
				if wantErr != (err != nil) {
					t.Fatalf("run error = %v, want an error: %v", err, wantErr)
				}
				want := map[string]string{"a": tt.a, "b": tt.b}
				reached := map[string]bool{}
				for _, r := range declared.Requests() {
					agent := strings.SplitN(callKey(r), "/", 2)[0]
					reached[agent] = true
					if want[agent] != "declared" {
						t.Errorf("agent %s's call reached the declared server; it belongs on the implicit default endpoint", agent)
					}
					if auth := r.Header.Get("Authorization"); auth != tt.key {
						t.Errorf("declared server got Authorization %q, want %q", auth, tt.key)
					}
				}
				for _, r := range decoy.Requests() {
					agent := strings.SplitN(callKey(r), "/", 2)[0]
					reached[agent] = true
					if want[agent] != "builtin" {
						t.Errorf("agent %s's call went to OPENAI_BASE_URL, not to the endpoint the spec names", agent)
					}
					if auth := r.Header.Get("Authorization"); auth != "Bearer "+openaiKey {
						t.Errorf("implicit default endpoint got Authorization %q, want the OPENAI_API_KEY", auth)
					}
				}
				for _, u := range guard.refused {
					if !strings.HasPrefix(u, "https://api.openai.com/v1/") || (tt.a != "builtin" && tt.b != "builtin") {
						t.Errorf("a request tried %s", u)
					}
				}
				if !wantErr {
					for agent := range want {
						if !reached[agent] {
							t.Errorf("agent %s's call reached no server", agent)
						}
					}
				}
			})
		}
	}
}

// TestDotEnvNextToSpec: the .env next to the spec is read as other tools
// read it (a comment after a value is no part of it, quotes and export are
// understood), the environment wins over it, and a file that cannot be
// parsed stops the run before it starts, naming the file.
func TestDotEnvNextToSpec(t *testing.T) {
	srv := llmtest.NewProvider(t, llmtest.OpenAI("sk-abc"), keyed(answerOf))
	dir := t.TempDir()
	path := writeSpec(t, dir, "version: 1\nname: dotenv\nendpoints:\n  default: {base_url: '"+srv.URL+"', api_key_env: OPENAI_API_KEY, headers: {X-Team: '${TEAM}'}}\n"+
		"agents: {a: {}}\ntemplates: {define: {t: \"KEY=a/r0/answer hi\"}}\nnodes: {answer: {kind: ask, agents: [a], template: t}}\nflow: [answer]\n")
	env := "# keys\nOPENAI_API_KEY=sk-abc # personal key\nexport TEAM='research # one'\n"
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	plan := loadPlan(t, path)
	if _, _, err := execute(t, plan, Options{
		Settings: Settings{Getenv: func(string) string { return "" }},
		Seams:    Seams{Sleep: noSleep},
	}); err != nil {
		t.Fatalf("run: %v", err)
	}
	r := srv.Requests()[0]
	if got := r.Header.Get("Authorization"); got != "Bearer sk-abc" {
		t.Errorf("Authorization = %q, want the key without the comment", got)
	}
	if got := r.Header.Get("X-Team"); got != "research # one" {
		t.Errorf("X-Team = %q", got)
	}

	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("OPENAI_API_KEY=\"sk-abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Start(plan, Options{Settings: Settings{RunsDir: t.TempDir(), Getenv: func(string) string { return "" }}})
	var fe *args.FlagError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), filepath.Join(dir, ".env")) {
		t.Errorf("broken .env: error %v, want a args.FlagError naming the file", err)
	}
}
