package providers_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/providers"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/spec"
)

func compile(t *testing.T, src string) (*spec.Plan, string) {
	t.Helper()
	plan, diags := spec.Compile("spec.yaml", []byte(src), nodes.Registry())
	return plan, diags.Format()
}

const specOn = `version: 1
name: priced
endpoints:
  here: {base_url: %q%s}
models:
  m: {model: gpt-4o-mini, endpoint: here%s}
agents:
  a: {name: A, model: m}
templates:
  define:
    t/ask: "hi"
nodes:
  answer: {kind: ask, agents: [a], template: t/ask}
flow: [answer]
`

// TestLocalEndpointsAreUnpriced compiles specs whose endpoint is at a
// generated address: a model on this machine's server gets no built-in
// list price (its calls are unpriced, not priced as a hosted model's), a
// hosted one keeps it, and a price the spec declares is kept either way.
func TestLocalEndpointsAreUnpriced(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	local := []string{"localhost", "127.0.0.1", "127.8.9.10", "[::1]", "0.0.0.0", "ollama.localhost"}
	remote := []string{"api.openai.com", "openrouter.ai", "10.0.0.5", "example.localhost.com", "192.168.1.20"}
	for i := 0; i < 40; i++ {
		isLocal := r.IntN(2) == 0
		host := remote[r.IntN(len(remote))]
		if isLocal {
			host = local[r.IntN(len(local))]
		}
		base := fmt.Sprintf("http://%s:%d/v1", host, 1000+r.IntN(60000))
		declared := r.IntN(3) == 0
		price := ""
		if declared {
			price = ", price: {prompt: 0, completion: 0}"
		}
		plan, diags := compile(t, fmt.Sprintf(specOn, base, "", price))
		if plan == nil || strings.Contains(diags, "error") {
			t.Fatalf("%s: %s", base, diags)
		}
		m := plan.Models["m"]
		switch {
		case declared:
			if m.Price == nil || m.Price.Builtin != "" {
				t.Errorf("%s: declared price not kept: %+v", base, m.Price)
			}
		case isLocal:
			if m.Price != nil {
				t.Errorf("%s is on this machine but the model is priced at %+v", base, m.Price)
			}
		default:
			if m.Price == nil || m.Price.Builtin == "" {
				t.Errorf("%s is hosted but the model has no built-in price", base)
			}
		}
	}
}

// TestKindsCheckTheirSettings: a kind's own setting on another kind's
// endpoint is refused, naming its kind; the offline kind takes no
// base_url; every spec has the offline model, unpriced and simulated.
func TestKindsCheckTheirSettings(t *testing.T) {
	_, diags := compile(t, fmt.Sprintf(specOn, "http://localhost:1/v1", ", seed: 3", ""))
	if !strings.Contains(diags, "seed applies only to kind offline") {
		t.Errorf("offline's seed on an openai endpoint: %s", diags)
	}
	_, diags = compile(t, strings.Replace(fmt.Sprintf(specOn, "http://localhost:1/v1", ", kind: offline", ""), "m: {model", "m: {model", 1))
	if !strings.Contains(diags, "kind offline takes no base_url") {
		t.Errorf("a base_url on an offline endpoint: %s", diags)
	}
	plan, diags := compile(t, fmt.Sprintf(specOn, "https://api.openai.com/v1", "", ""))
	if strings.Contains(diags, "error") {
		t.Fatal(diags)
	}
	off := plan.Models["offline"]
	if off == nil || off.Endpoint == nil || off.Endpoint.Kind != "offline" || off.Price != nil || !llm.Simulated(off.Endpoint) {
		t.Fatalf("the built-in offline model: %+v", off)
	}
}

// TestRegistryNamesEveryKindOnce: the registry's kinds have distinct
// names, the first is openai (an endpoint without kind:), and each gives
// its docs row and names its test.
func TestRegistryNamesEveryKindOnce(t *testing.T) {
	seen := map[string]bool{}
	for i, p := range providers.Kinds() {
		if seen[p.Name()] {
			t.Errorf("kind %s registered twice", p.Name())
		}
		seen[p.Name()] = true
		if i == 0 && p.Name() != "openai" {
			t.Errorf("the first kind is %s, want openai", p.Name())
		}
		if d := p.Doc(); d.Speaks == "" || d.Test == "" || p.Description() == "" {
			t.Errorf("kind %s has no docs row: %+v", p.Name(), d)
		}
	}
}
