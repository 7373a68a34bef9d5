package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/spec"
)

// promptHost is a host on the simple spec's answer node whose run holds n
// public messages, or n with every other one private to agent b.
func promptHost(t *testing.T, n int, private bool) *host {
	t.Helper()
	plan := loadPlan(t, "testdata/simple.yaml")
	r := newRun(plan, Options{})
	j, err := journal.CreateWith(filepath.Join(t.TempDir(), "journal.jsonl"), journal.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	r.journal = j
	node := plan.Nodes["answer"]
	h := &host{run: r, node: node, scope: kit.Scope{Key: "-", Round: 2}, prefix: "answer/-"}
	for i := range n {
		m := value.Message{From: "a", To: "b", Round: 2, Content: strings.Repeat("x", 300)}
		if private && i%2 == 1 {
			m.From, m.To, m.Private = "b", "", true
		}
		h.record([]value.Message{m})
	}
	return h
}

// bytesPerPrompt is the heap allocated by one Prompt call, on average.
func bytesPerPrompt(h *host, agent *spec.AgentPlan) float64 {
	const runs = 200
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	for range runs {
		_ = h.Base(h.node, agent)
	}
	goruntime.ReadMemStats(&after)
	return float64(after.TotalAlloc-before.TotalAlloc) / runs
}

// TestPromptCostIndependentOfHistory: while every message is public, the
// prompt data shares the run's history instead of copying it, so a prompt
// costs the same early and late in a long debate; and what it shares cannot
// be changed through it.
func TestPromptCostIndependentOfHistory(t *testing.T) {
	short, long := promptHost(t, 10, false), promptHost(t, 2000, false)
	agent := short.run.Plan.Agents[0]
	// Inbox holds every message addressed to the agent in the round; ask
	// for agent a, to whom none is addressed.
	a, b := bytesPerPrompt(short, agent), bytesPerPrompt(long, agent)
	if b > a+4096 { // copying 2000 messages would add some 450 KB
		t.Errorf("a prompt allocates %.0f B with 10 messages and %.0f B with 2000: it copies the history", a, b)
	}
	data := long.Base(long.node, agent)
	if len(data.History) != 2000 || cap(data.History) != len(data.History) {
		t.Fatalf("history of %d messages with cap %d, want 2000 and cap = len", len(data.History), cap(data.History))
	}
	grown := append(data.History, &value.Message{ID: "extra"})
	long.record([]value.Message{{From: "b", Content: "later"}})
	if grown[2000].ID != "extra" || long.run.messages[2000].Content != "later" {
		t.Error("appending to a prompt's history and recording a message interfere")
	}
}

// TestPromptVisibility: once a message is private, each agent's history is
// filtered again, and its inbox holds what is addressed to it this round.
func TestPromptVisibility(t *testing.T) {
	tests := []struct {
		agent       int
		wantHistory int
		wantInbox   int
	}{
		{agent: 0, wantHistory: 5, wantInbox: 0}, // a sees its 5 public messages
		{agent: 1, wantHistory: 10, wantInbox: 5},
	}
	h := promptHost(t, 10, true)
	for _, tt := range tests {
		a := h.run.Plan.Agents[tt.agent]
		t.Run(fmt.Sprint(a.ID), func(t *testing.T) {
			data := h.Base(h.node, a)
			if len(data.History) != tt.wantHistory || len(data.Inbox) != tt.wantInbox {
				t.Errorf("history %d, inbox %d; want %d and %d", len(data.History), len(data.Inbox), tt.wantHistory, tt.wantInbox)
			}
			if len(data.Agents) != 2 || len(data.AllAgents) != 2 || data.Agents[1].Name != "Bob" {
				t.Errorf("agents %+v, all agents %+v", data.Agents, data.AllAgents)
			}
		})
	}
}

// TestRequestEventEncoding: a model_request payload encodes to the bytes
// the journal has always held for it, which were those of a map with the
// same keys (sorted), for every combination of optional parameters.
func TestRequestEventEncoding(t *testing.T) {
	temp, topP, zero, seed := 0.7, 0.95, 0.0, 42
	tests := []struct {
		name     string
		model    spec.ModelPlan
		jsonMode bool
		tools    []string
	}{
		{name: "defaults"},
		{name: "every parameter", model: spec.ModelPlan{Temperature: &temp, TopP: &topP, MaxTokens: 800, Seed: &seed, Stream: true}, jsonMode: true},
		{name: "zero temperature is kept", model: spec.ModelPlan{Temperature: &zero}},
		{name: "negative max tokens is left out", model: spec.ModelPlan{MaxTokens: -1}},
		{name: "tools", model: spec.ModelPlan{TopP: &topP}, tools: []string{"read_file", "search_history"}},
		{name: "provider knobs", model: spec.ModelPlan{
			Deployment: "prod-o3", ReasoningEffort: "high",
			Extra: []spec.RequestParam{{Name: "provider", Value: json.RawMessage(`{"order":["a"]}`)}, {Name: "top_k", Value: json.RawMessage(`40`)}},
		}, jsonMode: true},
		{name: "omitted parameters", model: spec.ModelPlan{Temperature: &temp, Seed: &seed, Omit: []string{"temperature", "seed"}}},
	}
	encode := func(v any) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // as the journal does
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.model
			m.Name, m.Model = "fast", "gpt-<mini>&co"
			req := newRequest(&m, &kit.Call{JSONMode: tt.jsonMode})
			msgs := []journalMessage{{Role: "system", Chars: 5, Digest: "0011223344556677"}, {Role: "user", Chars: 2, Digest: "8899aabbccddeeff", Content: "hi"}}
			got := encode(requestEvent{
				Node: "critique", Agent: "a", Target: "b", Model: m.Model, ModelName: m.Name, Endpoint: "default",
				Params: newCallParams(&req), PromptDigest: "abc", PromptChars: 7, Messages: msgs, Tools: tt.tools,
			})
			params := map[string]any{}
			if m.Temperature != nil && !m.Omits("temperature") {
				params["temperature"] = *m.Temperature
			}
			if m.TopP != nil {
				params["top_p"] = *m.TopP
			}
			if m.Deployment != "" {
				params["deployment"] = m.Deployment
			}
			if m.ReasoningEffort != "" {
				params["reasoning_effort"] = m.ReasoningEffort
			}
			if len(m.Extra) > 0 {
				extra := map[string]any{}
				for _, f := range m.Extra {
					var v any
					_ = json.Unmarshal(f.Value, &v)
					extra[f.Name] = v
				}
				params["extra"] = extra
			}
			if m.MaxTokens > 0 {
				params["max_tokens"] = m.MaxTokens
			}
			if m.Seed != nil && !m.Omits("seed") {
				params["seed"] = *m.Seed
			}
			if m.Stream {
				params["stream"] = true
			}
			if tt.jsonMode {
				params["json_mode"] = true
			}
			want := map[string]any{
				"node": "critique", "agent": "a", "target": "b", "model": m.Model, "model_name": m.Name, "endpoint": "default",
				"params": params, "prompt_digest": "abc", "prompt_chars": 7, "messages": msgs,
			}
			if len(tt.tools) > 0 {
				want["tools"] = tt.tools
			}
			if w := encode(want); got != w {
				t.Errorf("encoded as\n%s\nwant\n%s", got, w)
			}
		})
	}
}
