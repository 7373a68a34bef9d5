package view_test

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/answers"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/view"
)

// seatDebate is a generated conversation of two or three agents in which
// each turn may whisper to one other agent or speak to all: the spec, and
// the reply each turn's call key gets.
type seatDebate struct {
	seed   uint64
	agents []string
	human  string
	turns  int
}

func newSeatDebate(seed uint64) seatDebate {
	rng := rand.New(rand.NewPCG(seed, 36))
	d := seatDebate{seed: seed, turns: 3 + rng.IntN(4)}
	for i := range 2 + rng.IntN(2) {
		d.agents = append(d.agents, fmt.Sprintf("a%d", i+1))
	}
	d.human = d.agents[rng.IntN(len(d.agents))]
	return d
}

// spec is the debate with the person at d.human's seat (seat false: every
// agent a model).
func (d seatDebate) spec(seat bool) string {
	var agents strings.Builder
	for _, a := range d.agents {
		human := ""
		if seat && a == d.human {
			human = ", human: true"
		}
		fmt.Fprintf(&agents, "  %s: {name: Agent %s%s}\n", a, strings.ToUpper(a), human)
	}
	return fmt.Sprintf(`version: 1
name: seat-property
templates:
  define:
    turn: |-
      KEY=t{{.Turn}}/{{.Agent.ID}}
      You are {{.Agent.Name}}, turn {{.Turn}} of {{.MaxTurns}}.
      {{range .History}}{{.From}}{{if .Whisper}} (whispering to {{.To}}){{end}}: {{.Content}}
      {{end}}{{with .Feedback}}{{.}}
      {{end}}Reply with <SpeakingTo> and <Content>.
    system: "You are {{.Agent.Name}}; some of what is said is whispered."
agents:
%snodes:
  talk:
    kind: converse
    agents: [%s]
    system: system
    speaker: random
    message: {format: tags, template: turn}
    max_turns: %d
flow: [talk]
outputs:
  last: nodes.talk.text
`, agents.String(), strings.Join(d.agents, ", "), d.turns)
}

// reply is the message of the turn whose call key is key: to all, or
// whispered to another agent, with a private thought now and then.
func (d seatDebate) reply(key string) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", d.seed, key)
	rng := rand.New(rand.NewPCG(h.Sum64(), 1))
	speaker := key[strings.LastIndexByte(key, '/')+1:]
	var b strings.Builder
	if rng.IntN(2) == 0 {
		var others []string
		for _, a := range d.agents {
			if a != speaker {
				others = append(others, a)
			}
		}
		fmt.Fprintf(&b, "<SpeakingTo>%s</SpeakingTo>\n<Whisper>true</Whisper>\n", others[rng.IntN(len(others))])
	} else {
		b.WriteString("<SpeakingTo>All</SpeakingTo>\n")
	}
	if rng.IntN(3) == 0 {
		fmt.Fprintf(&b, "<PrivateThoughts>THOUGHT-%s</PrivateThoughts>\n", key)
	}
	fmt.Fprintf(&b, "<Content>SAID-%s</Content>\n", key)
	return b.String()
}

// TestSeatShowsWhatTheModelWouldSee: over generated debates of two or
// three agents whose turns whisper at random, the turn the page shows a
// person at a seat (GET /api/run: open_turns) is the request the agent's
// model gets when a model plays it, message for message, whispers and
// private thoughts kept to those who may see them; answered in the page
// (POST /api/act/answer) with what the model said, the debate is the
// same debate, message for message.
func TestSeatShowsWhatTheModelWouldSee(t *testing.T) {
	taken, hidden := 0, 0
	for seed := range uint64(6) {
		d := newSeatDebate(seed)
		t.Run(fmt.Sprintf("seed=%d,agents=%d,turns=%d,human=%s", seed, len(d.agents), d.turns, d.human), func(t *testing.T) {
			n, h := checkSeat(t, d)
			taken, hidden = taken+n, hidden+h
		})
	}
	// The generated debates exercise the seat: turns taken in the page,
	// and whispers between others kept from the person.
	if taken < 4 || hidden < 1 {
		t.Errorf("the debates gave %d turns to the person and kept %d whispers from it; the generator needs changing", taken, hidden)
	}
}

// checkSeat plays d with models, then with a person at the seat answering
// in the page; it returns the turns the person took and how many times a
// whisper between two others was kept out of the turn shown.
func checkSeat(t *testing.T, d seatDebate) (taken, hidden int) {
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply { return llmtest.Reply{Content: d.reply(runtest.CallKey(r))} })
	seed := int64(d.seed)
	opts := func(root string) runtime.Options {
		return runtime.Options{
			Launch:   launch.Launch{Given: launch.Given{Seed: &seed}},
			Settings: runtime.Settings{RunsDir: root, Getenv: runtest.Env(srv.URL, "sk-view-test")},
		}
	}
	// Played by models: what the human's agent is sent, turn by turn.
	dir := t.TempDir()
	_, models := execute(t, runtest.LoadPlan(t, runtest.WriteSpec(t, dir, d.spec(false))), opts(t.TempDir()))
	if models.Status != result.StatusCompleted {
		t.Fatalf("played by models: %s %s", models.Status, models.Error)
	}
	sent := map[string][]answers.TurnMessage{}
	for _, r := range srv.Requests() {
		key := runtest.CallKey(r)
		if !strings.HasSuffix(key, "/"+d.human) {
			continue
		}
		for _, m := range r.Messages {
			sent[key] = append(sent[key], answers.TurnMessage{Role: m.Role, Name: m.Name, Content: m.Content})
		}
	}

	// A person at the seat, answering in the page.
	root := t.TempDir()
	r, res := execute(t, runtest.LoadPlan(t, runtest.WriteSpec(t, t.TempDir(), d.spec(true))), opts(root))
	id := filepath.Base(r.Dir)
	ts, v := actingServer(t, root, "", runtest.Env(srv.URL, "sk-view-test"))
	host := strings.TrimPrefix(ts.URL, "http://")
	for res.Status == result.StatusWaiting {
		if taken > d.turns {
			t.Fatalf("still waiting after %d turns", taken)
		}
		code, body := get(t, ts, "/api/run?id="+id)
		var page struct {
			OpenTurns []answers.Turn `json:"open_turns"`
		}
		if err := json.Unmarshal(body, &page); code != http.StatusOK || err != nil || len(page.OpenTurns) != 1 {
			t.Fatalf("the page of the waiting run (%d, %v): %s", code, err, body)
		}
		turn := page.OpenTurns[0]
		key := strings.TrimPrefix(turn.ID, "talk/-/")
		want, ok := sent[key]
		if !ok || turn.Agent != d.human {
			t.Fatalf("the page shows turn %s of %s; played by models, %s had no such call", turn.ID, turn.Agent, d.human)
		}
		shown := mustJSON(t, turn.Messages)
		if shown != mustJSON(t, want) {
			t.Fatalf("turn %s: the page shows\n%s\nthe model was sent\n%s", key, shown, mustJSON(t, want))
		}
		for _, m := range models.Messages {
			if (m.Whisper || m.Private) && m.From != d.human && m.To != d.human {
				if strings.Contains(shown, m.Content) {
					t.Errorf("turn %s shows %s's whisper to %s: %s", key, m.From, m.To, m.Content)
				}
				hidden++
			}
		}
		if rec := act(t, v, host, "/api/act/answer", view.RunRequest{ID: id, Answers: map[string]string{turn.ID: d.reply(key)}}); rec.Code != http.StatusOK {
			t.Fatalf("answering %s: %d %s", turn.ID, rec.Code, rec.Body)
		}
		v.Wait()
		taken++
		var err error
		if res, err = result.Read(r.Dir); err != nil {
			t.Fatal(err)
		}
	}
	if res.Status != result.StatusCompleted {
		t.Fatalf("with the seat: %s %s", res.Status, res.Error)
	}
	if taken != len(sent) {
		t.Errorf("the person took %d turns; the model %d", taken, len(sent))
	}
	if a, b := mustJSON(t, models.Messages), mustJSON(t, res.Messages); a != b {
		t.Errorf("the debate differs with a person at the seat:\n%s\n%s", b, a)
	}
	return taken, hidden
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
