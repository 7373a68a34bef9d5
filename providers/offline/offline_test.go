package offline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/providers/offline"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/spec"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

func client(seed string) *llm.Client {
	var s map[string]string
	if seed != "" {
		s = map[string]string{"seed": seed}
	}
	return llm.New(llm.Endpoint{Name: "offline", Provider: offline.Kind{}, Settings: s})
}

// genSchema makes a small JSON Schema of an object: required properties
// of generated types, enums, bounds and nested objects and arrays.
func genSchema(r *rand.Rand, depth int) map[string]any {
	props := map[string]any{}
	var required []any
	for i := 0; i < 1+r.IntN(4); i++ {
		name := fmt.Sprintf("p%d", i)
		var p map[string]any
		switch k := r.IntN(6); {
		case k == 0:
			p = map[string]any{"type": "string", "minLength": float64(r.IntN(5))}
		case k == 1:
			p = map[string]any{"type": "integer", "minimum": float64(r.IntN(50)), "maximum": float64(50 + r.IntN(50))}
		case k == 2:
			p = map[string]any{"enum": []any{"yes", "no", "maybe"}}
		case k == 3:
			p = map[string]any{"type": "boolean"}
		case k == 4 && depth < 2:
			p = genSchema(r, depth+1)
		default:
			p = map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": float64(r.IntN(3))}
		}
		props[name] = p
		if r.IntN(2) == 0 {
			required = append(required, name)
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// TestOfflineRepliesFitTheirShape sends calls of generated shapes (text,
// JSON of a generated schema, a pattern, tags) to the offline model:
// each reply passes the shape's check, says it is simulated (its text, and
// its model), comes with
// usage, and is the same for the same request and seed; another seed
// gives another text.
func TestOfflineRepliesFitTheirShape(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 3))
	c, other := client(""), client("42")
	differs := 0
	for i := 0; i < 60; i++ {
		var shape kit.Shape
		var check func(string) error
		switch r.IntN(4) {
		case 0:
			shape.Format = "text"
			check = func(string) error { return nil }
		case 1:
			schema := genSchema(r, 0)
			data, _ := json.Marshal(schema)
			shape = kit.Shape{Format: "json", Schema: data}
			comp := jsonschema.NewCompiler()
			if err := comp.AddResource("s.json", strings.NewReader(string(data))); err != nil {
				t.Fatal(err)
			}
			sch, err := comp.Compile("s.json")
			if err != nil {
				t.Fatal(err)
			}
			check = func(reply string) error {
				var v any
				if err := json.Unmarshal([]byte(reply), &v); err != nil {
					return err
				}
				return sch.Validate(v)
			}
		case 2:
			pat := []string{`\\boxed\{\d+\}`, `(?i)answer: (yes|no)`, `[A-D]\)`, `score=\d{1,3}`}[r.IntN(4)]
			shape = kit.Shape{Format: "regex", Pattern: pat}
			re := regexp.MustCompile(pat)
			check = func(reply string) error {
				if !re.MatchString(reply) {
					return fmt.Errorf("does not match %s", pat)
				}
				return nil
			}
		default:
			shape = kit.Shape{Format: "tags", Tags: []kit.Tag{{Name: "reasoning"}, {Name: "verdict", Value: "agree"}}}
			check = func(reply string) error {
				if !strings.Contains(reply, "<reasoning>") || !strings.Contains(reply, "<verdict>agree</verdict>") {
					return fmt.Errorf("lacks its tags")
				}
				return nil
			}
		}
		call := &calls.Call{Key: fmt.Sprintf("n/round=%d/a", i), Node: "n", Agent: "a", Round: i, Kit: kit.Call{Shape: shape}, Model: &spec.ModelPlan{Name: "offline"}}
		req := llm.Request{Model: "offline", Messages: []llm.Message{{Role: "user", Content: fmt.Sprintf("question %d", r.IntN(1000))}}, Stream: r.IntN(2) == 0}
		ctx := calls.WithCall(context.Background(), call)
		a, err := c.Complete(ctx, req, nil)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		b, err := c.Complete(ctx, req, nil)
		if err != nil || b.Content != a.Content {
			t.Errorf("call %d: the same request got %q, then %q (%v)", i, a.Content, b.Content, err)
		}
		o, err := other.Complete(ctx, req, nil)
		if err != nil {
			t.Fatal(err)
		}
		if o.Content != a.Content {
			differs++
		}
		if err := check(a.Content); err != nil {
			t.Errorf("call %d (%+v): reply %q: %v", i, shape, a.Content, err)
		}
		// Prose says it is simulated; a JSON value may have no text to
		// say it in, and the reply's model says it for every reply.
		if shape.Format != "json" && !strings.Contains(a.Content, "[simulated]") || a.Model != offline.Name {
			t.Errorf("call %d: reply %q of model %q does not say it is simulated", i, a.Content, a.Model)
		}
		if a.PromptTokens <= 0 || a.CompletionTokens <= 0 || a.UsageEstimated || a.UsageError != "" {
			t.Errorf("call %d: usage %d/%d (estimated %v, %q)", i, a.PromptTokens, a.CompletionTokens, a.UsageEstimated, a.UsageError)
		}
	}
	if differs == 0 {
		t.Error("another seed never changed a reply")
	}
}

// TestSeedIsPartOfTheCacheKey: the same request to offline endpoints of
// different seeds has different cache keys, so a cached reply of one seed
// never answers the other.
func TestSeedIsPartOfTheCacheKey(t *testing.T) {
	req := llm.Request{Model: "offline", Messages: []llm.Message{{Role: "user", Content: "q"}}}
	key := func(seed string) string {
		ep := &spec.EndpointPlan{Name: "sim", Kind: "offline", Settings: map[string]string{"seed": seed}}
		return calls.RequestKey(&spec.ModelPlan{Name: "m", Model: "offline", Endpoint: ep}, "", req, "")
	}
	if key("1") == key("2") {
		t.Error("seeds 1 and 2 share a cache key")
	}
	if a, b := key("1"), key("1"); a != b {
		t.Error("one seed has two keys")
	}
}
