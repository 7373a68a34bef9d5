package runtime

import (
	"errors"
	"strings"
	"testing"

	"github.com/debate-runner/runner/runtime/launch"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/args"
)

// TestOnlyUsedEndpointsNeedKeys: the compiler records the models nodes
// call, and a run connects to those endpoints only. An agent that no node
// uses, on an endpoint whose key is not set, does not stop the run; once a
// node uses it, the missing key stops the run before it starts.
func TestOnlyUsedEndpointsNeedKeys(t *testing.T) {
	srv := llmtest.New(t, keyed(answerOf))
	const extra = `endpoints:
  remote: {base_url: "https://remote.invalid/v1", api_key_env: REMOTE_TEST_KEY}
models:
  far: {model: far-model, endpoint: remote}
`
	base := strings.Replace(string(mustRead(t, "testdata/simple.yaml")), "  b: {name: Bob}\n", "  b: {name: Bob}\n  idle: {name: Idle, model: far}\n", 1)
	plan := loadPlan(t, writeSpec(t, t.TempDir(), base+"\n"+extra))
	if _, ok := plan.AgentByID["idle"]; !ok {
		t.Fatal("the spec lost its idle agent")
	}
	for _, m := range plan.UsedModels {
		if m.Name == "far" {
			t.Fatal("a model no node uses is among the plan's used models")
		}
	}
	if _, _, err := execute(t, plan, Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}},
		Settings: Settings{Getenv: envFor(srv.URL)},
	}); err != nil {
		t.Fatalf("a run whose unused agent's endpoint has no key failed: %v", err)
	}

	// The same agent in a node: its endpoint's key is needed.
	used := loadPlan(t, writeSpec(t, t.TempDir(), strings.Replace(base, "agents: [a, b]", "agents: [a, b, idle]", 1)+"\n"+extra))
	_, err := Start(used, Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}},
		Settings: Settings{RunsDir: t.TempDir(), Getenv: envFor(srv.URL)},
	})
	var fe *args.FlagError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "REMOTE_TEST_KEY") {
		t.Fatalf("a used endpoint without its key: %v, want a *args.FlagError naming REMOTE_TEST_KEY", err)
	}
}
