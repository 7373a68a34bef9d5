package templates_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"text/template"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/value"
)

// pinned compiles a spec that uses one version of a built-in library and
// returns its template set as a run executes it.
func pinned(t *testing.T, ref string) *template.Template {
	t.Helper()
	src := `version: 1
name: pinned
inputs:
  resume: {required: true}
templates:
  use: [` + ref + `]
agents: {a: {name: A}}
nodes:
  n:
    kind: converse
    agents: [a]
    message: {format: tags, template: chain-of-debate/message}
    max_turns: 2
flow: [n]
`
	plan, diags := spec.Compile("pinned.yaml", []byte(src), nodes.Registry())
	if diags.HasErrors() {
		t.Fatalf("compile %s: %s", ref, diags.Format())
	}
	return plan.Templates
}

// TestChainOfDebateMessageV2RendersV1 checks that chain-of-debate@2, whose
// message template looks panel members up once per message instead of
// ranging over the panel for each (the prompt's cost grows with the thread
// times the panel), sends what @1 sends: over generated turns (panels,
// goals, records, verdicts, whispers, private notes, summaries, feedback
// and ids that are prefixes of one another), the two render byte for
// byte the same prompt.
func TestChainOfDebateMessageV2RendersV1(t *testing.T) {
	v1, v2 := pinned(t, "chain-of-debate@1"), pinned(t, "chain-of-debate@2")
	r := rand.New(rand.NewPCG(7, 2026))
	ids := []string{"a", "ab", "b", "ba", "chen", "chen2", "marcus", "adler", "timekeeper", "moderation", ""}
	records := []string{"message", "interjection", "watch", "private", "summary", "other"}
	goals := []string{"", "skills", "culture", "skills2"}
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	for i := 0; i < 400; i++ {
		var agents []value.AgentView
		for _, id := range ids {
			if id != "" && r.IntN(3) > 0 {
				agents = append(agents, value.AgentView{ID: id, Name: "Name of " + id})
			}
		}
		if len(agents) == 0 {
			agents = append(agents, value.AgentView{ID: "a", Name: "A"})
		}
		var panel []value.Participant
		for _, a := range agents {
			if r.IntN(2) == 0 {
				panel = append(panel, value.Participant{ID: a.ID, Name: a.Name, Turns: r.IntN(4), Verdict: pick([]string{"", "", "GOOD_FIT"}), Withdrawn: r.IntN(4) == 0})
			}
		}
		if r.IntN(10) == 0 {
			panel = append(panel, value.Participant{ID: pick(ids), Name: "odd one"})
		}
		goal := value.GoalView{ID: pick(goals), Description: "what this goal asks", Index: 1 + r.IntN(3), Count: r.IntN(4)}
		var history []*value.Message
		for n := r.IntN(30); n > 0; n-- {
			m := &value.Message{
				Goal: pick(goals), Turn: r.IntN(20), From: pick(ids), Record: pick(records),
				Content: fmt.Sprintf("line %d\nsecond line", n),
			}
			if r.IntN(3) == 0 {
				m.Verdict, m.Reasoning = pick([]string{"GOOD_FIT", "REJECT", "ADEQUATE"}), "because"
			}
			switch r.IntN(6) {
			case 0:
				m.To, m.Whisper = pick(ids), true
			case 1:
				m.To = pick(ids)
			case 2:
				m.Private = true
			}
			m.Withdrawn = r.IntN(5) == 0
			history = append(history, m)
		}
		data := promptData{
			Agent:        agents[r.IntN(len(agents))],
			Agents:       agents,
			Goal:         goal,
			Inputs:       map[string]any{"resume": "A resume."},
			Vars:         map[string]any{},
			History:      history,
			Participants: panel,
			Turn:         r.IntN(60),
			MaxTurns:     r.IntN(2) * 60,
		}
		if r.IntN(2) == 0 {
			data.Verdict = value.VerdictView{Set: "hiring", Options: []string{"GOOD_FIT", "REJECT"}, Reasoning: r.IntN(2) == 0}
		}
		if r.IntN(4) == 0 {
			data.Summary = "Earlier, the panel agreed on little."
		}
		if r.IntN(4) == 0 {
			data.Feedback = "Verdict was missing."
		}
		old, cur := render(t, v1, "chain-of-debate/message", data), render(t, v2, "chain-of-debate/message", data)
		if old != cur {
			t.Fatalf("case %d: chain-of-debate@2 renders differently from @1\n--- @1\n%s\n--- @2\n%s\n--- first difference at byte %d", i, old, cur, firstDiff(old, cur))
		}
		if i == 0 && !strings.Contains(old, "## Your turn") {
			t.Fatalf("the message template rendered no turn:\n%s", old)
		}
	}
}

func firstDiff(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
