package runtime

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"reflect"
	goruntime "runtime"
	"sort"
	"sync"
	"testing"

	"github.com/debate-runner/runner/runtime/launch"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/spec"
)

// TestHistoryIndexesMatchScans records random messages (verdicts,
// withdrawals, goals, nodes, records) and checks after each that the
// expression environment's goal_verdicts and latest(record), which the
// history keeps up to date, equal goalVerdicts and spec's latest computed
// from every message.
func TestHistoryIndexesMatchScans(t *testing.T) {
	for seed := range uint64(20) {
		h := promptHost(t, 0, false)
		rng := rand.New(rand.NewPCG(seed, 3))
		pick := func(list ...string) string { return list[rng.IntN(len(list))] }
		for i := range 300 {
			m := value.Message{
				From: pick("a", "b", "c"), Node: pick("n1", "n2"), Goal: pick("", "g1", "g2"),
				Record: pick("answer", "message", ""), Round: 1 + rng.IntN(3), Content: fmt.Sprint("text ", i),
			}
			switch rng.IntN(6) {
			case 0, 1:
				m.Verdict, m.Reasoning = pick("YES", "NO", "MAYBE"), fmt.Sprint("reason ", i)
			case 2:
				m.Withdrawn = true
			case 3:
				m.Verdict, m.Withdrawn = "NO", true
			}
			h.record([]value.Message{m})
			env := h.run.env(kit.Scope{}).Map()
			msgs := h.Messages()
			if got, want := env["goal_verdicts"], goalVerdicts(h.run.Plan, msgs); !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d, message %d: goal_verdicts\n%+v\nwant\n%+v", seed, i+1, got, want)
			}
			plain := (&spec.Env{Messages: msgs}).Map()["latest"].(func(string) []value.Message)
			for _, rec := range []string{"answer", "message", "", "none"} {
				if got, want := env["latest"].(func(string) []value.Message)(rec), plain(rec); !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d, message %d: latest(%q) = %v, want %v", seed, i+1, rec, got, want)
				}
			}
		}
	}
}

// bodies records every request body a transport passes on.
type bodies struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (b *bodies) RoundTrip(req *http.Request) (*http.Response, error) {
	data, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.seen = append(b.seen, string(data))
	b.mu.Unlock()
	req.Body = io.NopCloser(bytes.NewReader(data))
	return b.next.RoundTrip(req)
}

// TestIndexedPromptsMatchSpecHelpers runs the long-history workloads twice,
// rendering with the history's indexed helpers and with spec's, and
// requires the same requests, byte for byte.
func TestIndexedPromptsMatchSpecHelpers(t *testing.T) {
	for _, lr := range longRuns {
		t.Run(lr.name, func(t *testing.T) {
			text, sets := lr.spec(300)
			plan := loadPlan(t, writeSpec(t, t.TempDir(), text))
			requests := func(indexed bool) []string {
				b := &bodies{next: lr.transport()}
				r := startNoSync(t, plan, Options{
					Launch:   launch.Launch{Given: launch.Given{Inputs: lr.inputs, Sets: sets}},
					Settings: Settings{RunsDir: t.TempDir(), Getenv: envFor("http://127.0.0.1:1/v1")},
					Seams:    Seams{HTTPClient: &http.Client{Transport: b}},
				})
				if !indexed {
					r.templates = plan.Templates
				}
				if _, err := r.Execute(context.Background()); err != nil {
					t.Fatal(err)
				}
				if n := len(r.messagesSoFar()); n < 300 {
					t.Fatalf("%d messages recorded, want at least 300", n)
				}
				// Calls of a node run concurrently; compare them in order.
				sort.Strings(b.seen)
				return b.seen
			}
			got, want := requests(true), requests(false)
			if len(got) != len(want) {
				t.Fatalf("%d requests with the indexed helpers, %d with spec's", len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("request %d differs:\n%s\nwant\n%s", i, got[i], want[i])
				}
			}
		})
	}
}

// TestRenderCostIndependentOfHistory renders the library's chains of
// message helpers for an agent whose history holds private messages and
// whispers, after 30 and after 3,000 messages, and requires about the same
// heap per rendering: the chains are answered from the history's indexes,
// not by filtering every message.
func TestRenderCostIndependentOfHistory(t *testing.T) {
	const text = `version: 1
name: chains
agents:
  a: {}
  b: {}
  c: {}
templates:
  define:
    chains: |-
      {{- range latest (notFrom .Agent.ID (byRecord "answer" .History))}}{{.From}}: {{.Content}}
      {{end}}
      {{- range byTo .Agent.ID (byRecord "critique" (inRound .Round .History))}}{{.From}}: {{.Content}}
      {{end}}
      {{- range .History | inRound (sub .Round 1)}}{{.From}} {{end}}
      {{- with last (byFrom .Agent.ID .History)}}{{.ID}}{{end}} {{count .Inbox}}
nodes:
  answer: {kind: ask, agents: [a, b, c], template: chains, record: answer}
flow: [answer]
`
	plan := loadPlan(t, writeSpec(t, t.TempDir(), text))
	perRender := func(rounds int) float64 {
		r := newRun(plan, Options{})
		j, err := journal.CreateWith(filepath.Join(t.TempDir(), "journal.jsonl"), journal.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		r.journal = j
		h := &host{run: r, node: plan.Nodes["answer"], scope: kit.Scope{Key: "-"}, prefix: "answer/-"}
		ids := []string{"a", "b", "c"}
		for round := 1; round <= rounds; round++ {
			for i, a := range ids {
				h.record([]value.Message{
					{From: a, Record: "answer", Round: round, Content: "an answer"},
					{From: a, To: ids[(i+1)%3], Record: "critique", Round: round, Content: "a critique"},
					{From: a, To: ids[(i+2)%3], Whisper: true, Round: round, Content: "a whisper"},
					{From: a, Private: true, Round: round, Content: "a thought"},
				})
			}
		}
		h.scope.Round = rounds
		agent := plan.Agents[0]
		render := func() string {
			base := h.Base(h.node, agent)
			out, err := h.Render("chains", &base)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		first := render() // makes the indexes this template needs
		const runs = 100
		var before, after goruntime.MemStats
		goruntime.ReadMemStats(&before)
		for range runs {
			if render() != first {
				t.Fatal("the same prompt rendered twice differs")
			}
		}
		goruntime.ReadMemStats(&after)
		return float64(after.TotalAlloc-before.TotalAlloc) / runs
	}
	short, long := perRender(3), perRender(300)
	t.Logf("heap per rendering: %.0f B after 36 messages, %.0f B after 3,600", short, long)
	if long > short+2048 { // filtering and copying the history: 1.3 MB after 3,600
		t.Errorf("a rendering allocates %.0f B after 36 messages and %.0f B after 3,600: the helpers filter the history", short, long)
	}
}
