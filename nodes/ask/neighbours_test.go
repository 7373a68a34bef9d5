package ask_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/result"
)

const neighboursSpec = `version: 1
name: neighbours
models: {default: {model: m}}
agents:
  d: {replicas: 5, topology: ring}
  star: {replicas: 3, topology: star}
nodes:
  answer:
    kind: ask
    agents: [d]
    template: t
    record: answer
    history: {from: neighbours, records: [answer], where: msg.round == round - 1, prefix: pre}
  shout:
    kind: ask
    agents: [star]
    template: t
    record: shout
    history: {from: [star_2], own: omit}
templates:
  define:
    pre: "{{.Message.From}}: "
    t: "agent {{.Agent.ID}} round {{.Round}} index {{.Agent.Index}} hears {{range .Agent.Neighbours}}{{.}} {{end}}"
flow:
  - loop: {as: round, max: 3, do: [answer, shout]}
`

// TestHistoryFromNeighbours: with history from: neighbours, an agent's
// turns are its own and its ring neighbours' messages only, and where
// keeps the previous round's; from: [ids] keeps those authors' only.
func TestHistoryFromNeighbours(t *testing.T) {
	re := regexp.MustCompile(`agent (\S+) round (\d+)`)
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		m := re.FindStringSubmatch(r.Messages[len(r.Messages)-1].Content)
		return llmtest.Reply{Content: "said by " + m[1] + " in " + m[2]}
	})
	plan := runtest.LoadPlan(t, runtest.WriteSpec(t, t.TempDir(), neighboursSpec))
	run, err := runtime.Start(plan, runtime.Options{Settings: runtime.Settings{RunsDir: t.TempDir(), Getenv: runtest.Env(srv.URL, "sk-n")}, Seams: runtime.Seams{Sleep: runtest.NoSleep}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Execute(context.Background())
	if err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("run: %v (status %s)", err, res.Status)
	}
	seen := 0
	for _, r := range srv.Requests() {
		last := r.Messages[len(r.Messages)-1].Content
		m := re.FindStringSubmatch(last)
		var turns []string
		for _, msg := range r.Messages[:len(r.Messages)-1] {
			turns = append(turns, msg.Role+"|"+msg.Content)
		}
		got := strings.Join(turns, "; ")
		switch {
		case m[1] == "d_1" && m[2] == "3":
			seen++
			if !strings.Contains(last, "index 1 hears d_5 d_2") {
				t.Errorf("d_1's prompt: %s", last)
			}
			want := "user|d_2: said by d_2 in 2; user|d_5: said by d_5 in 2; assistant|d_1: said by d_1 in 2"
			// Turns keep the order of the history: by recording order.
			if !sameSet(turns, strings.Split(want, "; ")) || len(turns) != 3 {
				t.Errorf("d_1 in round 3 gets turns %s, want (in any order) %s", got, want)
			}
		case m[1] == "star_1" && m[2] == "2":
			seen++
			if got != "user|said by star_2 in 1" {
				t.Errorf("star_1 in round 2 gets turns %q, want only star_2's", got)
			}
		case m[1] == "star_3" && m[2] == "2":
			seen++
			if got != "user|said by star_2 in 1" {
				t.Errorf("star_3 in round 2 gets turns %q", got)
			}
		}
	}
	if seen != 3 {
		t.Errorf("saw %d of the 3 requests checked", seen)
	}
	if len(srv.Requests()) != 3*(5+3) {
		t.Errorf("%d requests", len(srv.Requests()))
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}
