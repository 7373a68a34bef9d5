package dryrun

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/runtime/launch"

	"github.com/debate-runner/runner/nodes/kit"
)

// dryBase is the top of every dry-run test spec: agents, a priced model and
// templates that quote the history, so later prompts carry placeholders.
const dryBase = `version: 1
name: dry
inputs:
  question: {required: true}
vars:
  max_rounds: 3
  ask_first: false
models:
  default: {model: gpt-4o, max_tokens: 100, price: {prompt: 2, completion: 8}}
agents:
  a: {name: A}
  b: {name: B}
  c: {name: C}
verdicts:
  ok: [yes, no]
goals:
  - {id: g1, description: first}
  - {id: g2, description: second}
templates:
  define:
    p: "Q: {{.Inputs.question}} (round {{.Round}}){{range .History}}\n{{.From}} said {{.Content}}{{end}}{{with .Target.Content}}\nabout: {{.}}{{end}}"
    talk: "Turn {{.Turn}} of {{.MaxTurns}} on {{.Goal.ID}}{{range .History}}\n{{.Content}}{{end}}"
    clar: "Ask up to {{.MaxQuestions}} questions about {{.Inputs.question}}"
`

func TestDryRunPlan(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		calls   map[string]int // per node
		total   int
		bound   int
		prompts int
	}{
		{
			name: "loop of ask",
			body: `nodes:
  answer: {kind: ask, agents: [a, b, c], template: p, record: answer, output: {format: regex, pattern: 'X(\d)', repair: 1}}
flow:
  - loop: {as: round, max: vars.max_rounds, until: 'len(messages) > 3', do: [answer]}
outputs: {n: len(messages)}`,
			calls: map[string]int{"answer": 9}, total: 9, bound: 18, prompts: 3,
		},
		{
			name: "each and carry over",
			body: `nodes:
  propose: {kind: ask, agents: [a, b, c], template: p, record: proposal, carry_over: refine}
  critique: {kind: ask, agents: [a, b, c], template: p, record: critique, each: {record: proposal, from: others}}
  refine: {kind: ask, agents: [a, b, c], template: p, record: refine}
flow:
  - loop: {as: round, max: 2, do: [propose, critique, refine]}
outputs: {n: len(messages)}`,
			// propose: 3 in round 1, carried over in round 2.
			calls: map[string]int{"propose": 3, "critique": 12, "refine": 6}, total: 21, bound: 21, prompts: 12,
		},
		{
			name: "conversation per goal with a static if",
			body: `nodes:
  first: {kind: ask, agents: [a], template: p}
  panel: {kind: converse, agents: [a, b, c], message: {template: talk}, verdict: {options: ok}, max_turns: 4}
flow:
  - if: vars.ask_first
    then: [first]
  - foreach: {in: goals, as: goal, do: [panel]}
outputs: {n: len(messages)}`,
			calls: map[string]int{"panel": 8}, total: 8, bound: 8 * 4, prompts: 3, // repair 3 by default
		},
		{
			name: "clarify, then an if that depends on replies",
			body: `nodes:
  clarify: {kind: clarify, agents: [a, b], template: clar, max_iterations: 2}
  yes: {kind: ask, agents: [a], template: p}
  no: {kind: ask, agents: [b, c], template: p}
flow:
  - clarify
  - if: 'nodes.clarify.output[0].answer == "x"'
    then: [yes]
    else: [no]
outputs: {n: len(messages)}`,
			calls: map[string]int{"clarify": 4, "yes": 1, "no": 2}, total: 7, bound: 4*3 + 3, prompts: 5,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := loadPlan(t, writeSpec(t, t.TempDir(), dryBase+tc.body))
			rep, err := Run(plan, Options{Given: launch.Given{Inputs: []string{"question=What is 2+2?"}}})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, n := range rep.Nodes {
				got[n.ID] = n.Calls
			}
			for id, want := range tc.calls {
				if got[id] != want {
					t.Errorf("node %s: %d calls, want %d (all: %v)", id, got[id], want, got)
				}
			}
			if rep.Calls != tc.total || rep.UpperBound != tc.bound {
				t.Errorf("worst case %d (bound %d), want %d (%d)", rep.Calls, rep.UpperBound, tc.total, tc.bound)
			}
			if len(rep.Prompts) != tc.prompts {
				t.Errorf("%d first-round prompts, want %d", len(rep.Prompts), tc.prompts)
			}
			for _, p := range rep.Prompts {
				if p.Error != "" || p.Tokens == 0 || strings.Contains(p.User, "<no value>") {
					t.Errorf("prompt %s: tokens %d, error %q:\n%s", p.Key, p.Tokens, p.Error, p.User)
				}
			}
			var out bytes.Buffer
			rep.Write(&out, true)
			for _, want := range []string{"Worst case: ", "| node |", "gpt-4o", "Estimated cost"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("report lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

func TestDryRunTokens(t *testing.T) {
	plan := loadPlan(t, writeSpec(t, t.TempDir(), dryBase+`nodes:
  answer: {kind: ask, agents: [a, b], template: p, record: answer}
flow:
  - loop: {as: round, max: 2, do: [answer]}
outputs: {n: len(messages)}`))
	rep, err := Run(plan, Options{Given: launch.Given{Inputs: []string{"question=What is 2+2?"}}})
	if err != nil {
		t.Fatal(err)
	}
	// Round 1: "Q: What is 2+2? (round 1)" alone; round 2 quotes both
	// round-1 replies, each counted as max_tokens (100).
	first := CountChatTokens("gpt-4o", "Q: What is 2+2? (round 1)")
	if len(rep.Prompts) != 2 || rep.Prompts[0].Tokens != first {
		t.Fatalf("first prompt: %+v, want %d tokens", rep.Prompts, first)
	}
	if !strings.Contains(rep.Prompts[1].Key, "answer/round=1/b") {
		t.Errorf("prompt key %q", rep.Prompts[1].Key)
	}
	m := rep.Models[0]
	if m.Calls != 4 || m.CompletionTokens != 400 || m.Encoding != "o200k_base" {
		t.Errorf("model estimate = %+v", m)
	}
	// Each round-2 prompt is round 2's text plus two quoted replies of 100
	// tokens: well above the round-1 prompts.
	if m.PromptTokens < 2*first+2*200 {
		t.Errorf("prompt tokens %d do not count the quoted replies", m.PromptTokens)
	}
	want := (float64(m.PromptTokens)*2 + float64(m.CompletionTokens)*8) / 1e6
	if !m.Priced || math.Abs(m.Cost-want) > 1e-12 {
		t.Errorf("cost = %v, want %v", m.Cost, want)
	}
	if n := CountTokens("gpt-4o", "hello world"); n != 2 {
		t.Errorf("CountTokens(hello world) = %d, want 2", n)
	}
}

func TestDryRunErrors(t *testing.T) {
	plan := loadPlan(t, writeSpec(t, t.TempDir(), dryBase+`nodes:
  answer: {kind: ask, agents: [a], template: p}
flow:
  - loop: {as: round, max: 'min(len(messages) + nodes.answer.calls, 3)', do: [answer]}
outputs: {n: len(messages)}`))
	if _, err := Run(plan, Options{}); err == nil || !strings.Contains(err.Error(), "question") {
		t.Errorf("missing input: %v", err)
	}
	rep, err := Run(plan, Options{Given: launch.Given{Inputs: []string{"question=q"}}})
	if err != nil {
		t.Fatalf("a loop bound that reads the run: %v", err)
	}
	// It reads what the run records, which stand-ins do not tell: the dry
	// run plans its declared maximum.
	if rep.Calls != 3 {
		t.Errorf("%d calls for a loop of at most 3 iterations", rep.Calls)
	}
}

// TestDryRunLongBounds: a dry run's cost follows the calls it simulates, and
// a bound it cannot simulate in reasonable time is extrapolated, never
// walked: a 10,000-turn conversation is simulated to its end (prompts past
// the render budget estimated), and a loop of a million iterations stops at
// the call budget and reports the rest as a figure.
func TestDryRunLongBounds(t *testing.T) {
	plan := loadPlan(t, writeSpec(t, t.TempDir(), dryBase+`nodes:
  panel: {kind: converse, agents: [a, b, c], message: {template: talk}, verdict: {options: ok}, max_turns: 10000}
flow:
  - foreach: {in: goals, as: goal, do: [panel]}
outputs: {n: len(messages)}`))
	start := time.Now()
	rep, err := Run(plan, Options{Given: launch.Given{Inputs: []string{"question=q"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("two conversations of 10,000 turns: %d calls simulated in %s", rep.Calls, time.Since(start))
	if rep.Calls != 20000 || rep.Extrapolated != 0 {
		t.Errorf("calls %d (extrapolated %d), want 20000 simulated", rep.Calls, rep.Extrapolated)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "estimated from the last ones rendered") {
		t.Errorf("no note that late prompts were estimated: %v", rep.Notes)
	}
	// Late prompts are estimated from the earlier ones' growth: their
	// tokens keep growing with the history.
	if m := rep.Models[0]; m.PromptTokens < 20000*1000 {
		t.Errorf("prompt tokens %d: estimated prompts do not grow with the history", m.PromptTokens)
	}

	plan = loadPlan(t, writeSpec(t, t.TempDir(), dryBase+`nodes:
  answer: {kind: ask, agents: [a, b], template: p, record: answer}
flow:
  - loop: {as: round, max: 1000000, do: [answer]}
budget: {max_evaluations: 3000000}
outputs: {n: len(messages)}`))
	start = time.Now()
	rep, err = Run(plan, Options{Given: launch.Given{Inputs: []string{"question=q"}}, CallBudget: 5000})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a loop of a million iterations: %d calls (%d extrapolated) in %s", rep.Calls, rep.Extrapolated, time.Since(start))
	if rep.Calls != 2000000 || rep.Extrapolated != 2000000-5000 {
		t.Errorf("calls %d (extrapolated %d), want 2,000,000 with 1,995,000 extrapolated", rep.Calls, rep.Extrapolated)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "stopped after simulating 5000 calls") {
		t.Errorf("no note that the simulation stopped: %v", rep.Notes)
	}
}

// TestWriteShowsChatTurns: a request of chat turns (a thread) is printed
// message by message; a plain one as its system prompt and prompt.
func TestWriteShowsChatTurns(t *testing.T) {
	r := &Report{Spec: "s.yaml", Prompts: []Prompt{
		{Key: "plain", System: "S", User: "U", Messages: []kit.ChatMessage{{Role: "system", Content: "S"}, {Role: "user", Content: "U"}}},
		{Key: "thread", System: "S", User: "U2", Messages: []kit.ChatMessage{{Role: "system", Content: "S"}, {Role: "user", Content: "U1"}, {Role: "assistant", Content: "A1"}, {Role: "user", Content: "U2"}}},
	}}
	var b strings.Builder
	r.Write(&b, true)
	out := b.String()
	for _, want := range []string{"--- system\nS\n--- user\nU\n\n", "--- system\nS\n--- user\nU1\n--- assistant\nA1\n--- user\nU2\n\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
