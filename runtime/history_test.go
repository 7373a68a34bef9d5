package runtime

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"reflect"
	"sort"
	"sync"
	"testing"

	"github.com/debate-runner/runner/nodes/kit"
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
			m := spec.Message{
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
			h.record([]spec.Message{m})
			env := h.run.env(kit.Scope{}).Map()
			msgs := h.Messages()
			if got, want := env["goal_verdicts"], goalVerdicts(h.run.Plan, msgs); !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d, message %d: goal_verdicts\n%+v\nwant\n%+v", seed, i+1, got, want)
			}
			plain := (&spec.Env{Messages: msgs}).Map()["latest"].(func(string) []spec.Message)
			for _, rec := range []string{"answer", "message", "", "none"} {
				if got, want := env["latest"].(func(string) []spec.Message)(rec), plain(rec); !reflect.DeepEqual(got, want) {
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
					RunsDir: t.TempDir(), Inputs: lr.inputs, Sets: sets,
					Getenv:     envFor("http://127.0.0.1:1/v1"),
					HTTPClient: &http.Client{Transport: b},
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
