package ask_test

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
)

// chatSpec exercises ask's chat keys and the constructs of the published
// protocols: a per-agent thread over rounds with few-shot pairs, an ordered
// list of answer patterns with a scalar fallback, sequential calls that see
// each other's replies as named chat turns, K samples of a shuffled
// multiple-choice question, and a repair that resends the same request.
const chatSpec = `version: 1
name: ask-chat
vars:
  shots: [{user: "What is 2+2?", assistant: "ANSWER=4"}]
  k: 2
inputs:
  options: {default: "red\ngreen\nblue"}
templates:
  define:
    sys: "SYSTEM {{.Agent.ID}}"
    solve: "KEY={{.Agent.ID}}/solve/r{{.Round}} Solve it."
    seq: "KEY={{.Agent.ID}}/seq Comment."
    pick: "KEY={{.Agent.ID}}/pick/s{{.Sample}} Pick the green one:{{range .Choices}} {{.Label}}) {{.Text}}{{end}}"
    name: "{{.Name}}: "
    shots: '[{"user": "Pick for {{.Agent.Name}}", "assistant": "CHOICE=A", "name": "example user", "assistant_name": "example_{{.Agent.ID}}"}]'
    hint: "KEY={{.Agent.ID}}/hint Hint?"
agents:
  a: {name: Ann, system: sys}
  b: {name: Bob, system: sys}
nodes:
  solve:
    kind: ask
    agents: [a, b]
    thread: solver
    examples: vars.shots
    template: solve
    record: answer
    output: {format: regex, patterns: ['ANSWER=(-?\d+)', '(\d+)\s*$'], repair: 0, fallback: "-1"}
  seq:
    kind: ask
    agents: [a, b]
    order: sequential
    history: {records: [seq], prefix: name, name: true}
    template: seq
    record: seq
  hint:
    kind: ask
    agents: [b]
    examples: {template: shots}
    template: hint
  pick:
    kind: ask
    agents: [a]
    samples: vars.k
    choices: {from: inputs.options, shuffle: true}
    template: pick
    record: pick
    output: {format: regex, pattern: 'CHOICE=([A-Z])', repair: 1, repair_mode: resend}
flow:
  - loop: {as: round, max: 3, do: [solve]}
  - seq
  - hint
  - pick
`

var choiceLine = regexp.MustCompile(`([A-Z])\) (\w+)`)

func TestChatConstructs(t *testing.T) {
	path := runtest.WriteSpec(t, t.TempDir(), chatSpec)
	plan := runtest.LoadPlan(t, path)
	var mu sync.Mutex
	garbled := false
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		key := runtest.CallKey(r)
		switch {
		case key == "a/solve/r2":
			return llmtest.Reply{Content: "the total is 9"}
		case key == "b/solve/r3":
			return llmtest.Reply{Content: "no idea"}
		case strings.Contains(key, "/solve/"):
			return llmtest.Reply{Content: "ANSWER=7"}
		case key == "b/hint":
			return llmtest.Reply{Content: "a hint"}
		case strings.HasSuffix(key, "/seq"):
			return llmtest.Reply{Content: "SEQ-" + strings.Split(key, "/")[0]}
		case key == "a/pick/s1":
			mu.Lock()
			first := !garbled
			garbled = true
			mu.Unlock()
			if first {
				return llmtest.Reply{Content: "hmm"}
			}
		}
		for _, m := range choiceLine.FindAllStringSubmatch(r.LastUser(), -1) {
			if m[2] == "green" {
				return llmtest.Reply{Content: "CHOICE=" + m[1]}
			}
		}
		return llmtest.Reply{Status: 500, ErrorMessage: "unexpected request " + key}
	})
	seed := int64(3)
	run, err := runtime.Start(plan, runtime.Options{
		Launch:   launch.Launch{Given: launch.Given{Seed: &seed}},
		Settings: runtime.Settings{RunsDir: t.TempDir(), Getenv: runtest.Env(srv.URL, "sk-ask-chat")},
		Seams:    runtime.Seams{Sleep: runtest.NoSleep},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Execute(context.Background())
	if err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("run: %v (status %s)", err, res.Status)
	}
	byKey := map[string][]llmtest.Request{}
	for _, r := range srv.Requests() {
		byKey[runtest.CallKey(r)] = append(byKey[runtest.CallKey(r)], r)
	}

	// The thread: system, the example pair, then each earlier round's
	// prompt and reply; every request starts with the previous one's bytes.
	for _, ag := range []string{"a", "b"} {
		var prev []byte
		for round := 1; round <= 3; round++ {
			r := byKey[fmt.Sprintf("%s/solve/r%d", ag, round)][0]
			if len(r.Messages) != 3+2*round-1 {
				t.Errorf("%s round %d: %d messages, want %d", ag, round, len(r.Messages), 3+2*round-1)
			}
			if r.Messages[0].Content != "SYSTEM "+ag || r.Messages[1].Content != "What is 2+2?" || r.Messages[2].Role != "assistant" || r.Messages[2].Content != "ANSWER=4" {
				t.Errorf("%s round %d does not open with the system prompt and the example pair: %+v", ag, round, r.Messages[:3])
			}
			msgs := r.Fields["messages"]
			if prev != nil && !bytes.HasPrefix(msgs, prev[:len(prev)-1]) {
				t.Errorf("%s round %d does not start with round %d's request", ag, round, round-1)
			}
			prev = msgs
		}
	}
	outputs := map[string]string{}
	for _, m := range res.Messages {
		outputs[fmt.Sprintf("%s/%s/r%d", m.From, m.Node, m.Round)] = fmt.Sprint(m.Output)
	}
	for k, want := range map[string]string{"a/solve/r1": "7", "a/solve/r2": "9", "b/solve/r3": "-1", "b/solve/r2": "7"} {
		if outputs[k] != want {
			t.Errorf("%s: output %q, want %q (patterns in order, then the fallback)", k, outputs[k], want)
		}
	}

	// Sequential: Bob is called after Ann's reply is recorded, and sees it
	// as a named user turn; Ann sees nothing of Bob's.
	ra, rb := byKey["a/seq"][0], byKey["b/seq"][0]
	if rb.N < ra.N || len(rb.Messages) != 3 || rb.Messages[1].Role != "user" || rb.Messages[1].Content != "Ann: SEQ-a" || rb.Messages[1].Name != "a" {
		t.Errorf("Bob's sequential request: %+v", rb.Messages)
	}
	if len(ra.Messages) != 2 {
		t.Errorf("Ann's sequential request shows %d messages, want system and prompt", len(ra.Messages))
	}

	// Few-shot pairs from a template, rendered for the agent.
	if h := byKey["b/hint"][0]; len(h.Messages) != 4 || h.Messages[1].Content != "Pick for Bob" || h.Messages[2].Role != "assistant" || h.Messages[2].Content != "CHOICE=A" {
		t.Errorf("the hint request does not carry the template's pair: %+v", h.Messages)
	} else if h.Messages[1].Name != "example_user" || h.Messages[2].Name != "example_b" {
		t.Errorf("the pair's names are %q and %q, want example_user (name) and example_b (assistant_name)", h.Messages[1].Name, h.Messages[2].Name)
	}

	// Samples: two calls, the first resent unchanged after an unreadable
	// reply; both answers map back to green's own label, B.
	s1, s2 := byKey["a/pick/s1"], byKey["a/pick/s2"]
	if len(s1) != 2 || len(s2) != 1 {
		t.Fatalf("%d and %d requests for samples 1 and 2, want 2 and 1", len(s1), len(s2))
	}
	if !bytes.Equal(s1[0].Fields["messages"], s1[1].Fields["messages"]) {
		t.Errorf("repair_mode resend changed the request:\n%s\n%s", s1[0].Fields["messages"], s1[1].Fields["messages"])
	}
	var picks []string
	for _, m := range res.Messages {
		if m.Node == "pick" {
			picks = append(picks, fmt.Sprint(m.Output))
		}
	}
	if fmt.Sprint(picks) != "[B B]" {
		t.Errorf("picks %v, want [B B] (green's label before shuffling)", picks)
	}
	// The options are shuffled per call: with this seed green is shown
	// under another letter than B at least once, so the mapping is tested.
	var shown []string
	for _, r := range []llmtest.Request{s1[0], s2[0]} {
		for _, m := range choiceLine.FindAllStringSubmatch(r.LastUser(), -1) {
			if m[2] == "green" {
				shown = append(shown, m[1])
			}
		}
	}
	if len(shown) != 2 || shown[0] == "B" && shown[1] == "B" {
		t.Errorf("green shown as %v: not shuffled", shown)
	}
}
