package spec_test

import (
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/nodes/ask"
	"github.com/debate-runner/runner/spec"
)

// TestModelEndpoints checks which endpoint every model of a plan resolves
// to, for each way a spec can declare or imply it: a model that names its
// endpoint, a model without one (the spec's default endpoint, else the
// built-in one), and the implicit default model, reached through agents,
// nodes and history summaries.
func TestModelEndpoints(t *testing.T) {
	const tail = `templates:
  define:
    t/ask: "Hi"
    t/sum: "Summarize {{.Text}}"
nodes:
  answer: {kind: ask, agents: [a, b], template: t/ask NODEMODEL}
flow: [answer]
`
	builtin := "https://api.openai.com/v1"
	tests := []struct {
		name     string
		head     string
		nodeKeys string // extra keys of the node
		// base URL each of these resolves to: agent a's model, agent b's
		// model, the node's model (when set), the summary model
		a, b, node, summary string
		fromEnv             bool // whether agent b's endpoint reads OPENAI_BASE_URL
	}{
		{
			name: "nothing declared",
			head: "agents: {a: {}, b: {}}\nhistory: {summarize: {over_chars: 10, template: t/sum}}\n",
			a:    builtin, b: builtin, summary: "", fromEnv: true,
		},
		{
			name: "declared default endpoint, no models",
			head: "endpoints:\n  default: {base_url: 'http://127.0.0.1:9/v1', requests_per_minute: 120}\nagents: {a: {}, b: {}}\nhistory: {summarize: {over_chars: 10, template: t/sum}}\n",
			a:    "http://127.0.0.1:9/v1", b: "http://127.0.0.1:9/v1", summary: "",
		},
		{
			name:     "declared default endpoint, models without endpoint",
			head:     "endpoints:\n  default: {base_url: 'http://127.0.0.1:9/v1'}\nmodels:\n  default: llama\n  m: {model: qwen}\nagents: {a: {model: m}, b: {}}\nhistory: {summarize: {over_chars: 10, template: t/sum, model: m}}\n",
			nodeKeys: ", model: m",
			a:        "http://127.0.0.1:9/v1", b: "http://127.0.0.1:9/v1", node: "http://127.0.0.1:9/v1", summary: "http://127.0.0.1:9/v1",
		},
		{
			name:     "named endpoint only where a model names it",
			head:     "endpoints:\n  local: {base_url: 'http://127.0.0.1:9/v1'}\nmodels:\n  m: {model: qwen, endpoint: local}\nagents: {a: {model: m}, b: {}}\nhistory: {summarize: {over_chars: 10, template: t/sum}}\n",
			nodeKeys: ", model: m",
			a:        "http://127.0.0.1:9/v1", b: builtin, node: "http://127.0.0.1:9/v1", summary: "", fromEnv: true,
		},
		{
			name: "default model names another endpoint",
			head: "endpoints:\n  default: {base_url: 'http://127.0.0.1:8/v1'}\n  local: {base_url: 'http://127.0.0.1:9/v1'}\nmodels:\n  default: {model: qwen, endpoint: local}\nagents: {a: {}, b: {}}\nhistory: {summarize: {over_chars: 10, template: t/sum}}\n",
			a:    "http://127.0.0.1:9/v1", b: "http://127.0.0.1:9/v1", summary: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "version: 1\nname: ep\n" + tt.head + strings.ReplaceAll(tail, " NODEMODEL", tt.nodeKeys)
			plan, diags := spec.Compile("ep.yaml", []byte(src), nodes.Registry())
			if diags.HasErrors() {
				t.Fatalf("does not compile:\n%s", diags.Format())
			}
			check := func(what string, m *spec.ModelPlan, want string) {
				t.Helper()
				if m == nil || m.Endpoint == nil {
					t.Fatalf("%s has no model or endpoint", what)
				}
				if m.Endpoint.BaseURL != want {
					t.Errorf("%s goes to %s, want %s", what, m.Endpoint.BaseURL, want)
				}
				if m.Endpoint.FromEnv != (want == builtin) {
					t.Errorf("%s: endpoint reads OPENAI_BASE_URL = %v, want %v", what, m.Endpoint.FromEnv, want == builtin)
				}
				if want != builtin && m.Endpoint.APIKeyEnv == "OPENAI_API_KEY" {
					t.Errorf("%s: a declared endpoint without api_key_env must not send OPENAI_API_KEY", what)
				}
			}
			check("agent a", plan.AgentByID["a"].Model, tt.a)
			check("agent b", plan.AgentByID["b"].Model, tt.b)
			if tt.summary == "" {
				if plan.Summarize.Model != nil {
					t.Errorf("the summary model is %q, want the agent's own", plan.Summarize.Model.Name)
				}
			} else {
				check("the summary model", plan.Summarize.Model, tt.summary)
			}
			if tt.node != "" {
				check("the node model", plan.Nodes["answer"].Config.(*ask.Config).Model, tt.node)
			}
			if plan.AgentByID["b"].Model.Endpoint.FromEnv != tt.fromEnv {
				t.Errorf("agent b reads OPENAI_BASE_URL = %v, want %v", !tt.fromEnv, tt.fromEnv)
			}
		})
	}
}
