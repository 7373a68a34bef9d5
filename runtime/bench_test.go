package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/debate-runner/runner/runtime/launch"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/spec"
)

// instantTransport answers every chat completion at once, in-process, so a
// benchmark measures the runtime's own CPU (templates, client, JSON, journal)
// without a server or sockets.
type instantTransport struct{ body []byte }

func newInstantTransport(content string) *instantTransport {
	resp := map[string]any{
		"id": "chatcmpl-bench", "object": "chat.completion", "created": 1, "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}},
		"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150},
	}
	body, err := json.Marshal(resp)
	if err != nil {
		panic(err)
	}
	return &instantTransport{body: body}
}

func (t *instantTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(t.body)),
		ContentLength: int64(len(t.body)),
		Request:       req,
	}, nil
}

// fanoutSpec is one ask node with 8 agents, run vars.rounds times; every
// prompt quotes the previous round's answers, picked from the agent's view of
// the whole history, as in a real debate.
const fanoutSpec = `version: 1
name: fanout
inputs:
  question: {required: true}
vars:
  rounds: 20
agents:
  a1: {}
  a2: {}
  a3: {}
  a4: {}
  a5: {}
  a6: {}
  a7: {}
  a8: {}
templates:
  define:
    answer: |-
      You are {{.Agent.Name}} in round {{.Round}}. Question: {{.Inputs.question}}
      {{range .History | inRound (sub .Round 1)}}{{.From}}: {{.Content}}
      {{end}}
nodes:
  answer: {kind: ask, agents: [a1, a2, a3, a4, a5, a6, a7, a8], template: answer, record: answer}
flow:
  - loop: {as: round, max: vars.rounds, do: [answer]}
outputs:
  answers: map(latest("answer"), {.content})
`

// cpuTime is the process's user and system CPU time so far.
var cpuTime = runtest.CPUTime

// startNoSync starts a run whose journal skips fsync, to separate the
// runtime's CPU from disk latency.
func startNoSync(b testing.TB, plan *spec.Plan, opts Options) *Run {
	b.Helper()
	r, err := Start(plan, opts)
	if err != nil {
		b.Fatal(err)
	}
	if err := r.journal.Close(); err != nil {
		b.Fatal(err)
	}
	j, err := journal.OpenAppendWith(filepath.Join(r.Dir, "journal.jsonl"), journal.Options{NoSync: true, Redact: journal.NewRedactor(r.secrets...)})
	if err != nil {
		b.Fatal(err)
	}
	r.journal = j
	return r
}

// BenchmarkOrchestrationPerCall measures the runtime's CPU per model call
// against an instant in-process endpoint: prompt rendering, the llm client
// and go-openai's encoding, parsing, journaling and bookkeeping. One op is a
// run of 8 agents x 20 rounds = 160 calls; cpu-ns/call is process CPU time
// (getrusage, user+system; user-ns/call is the runtime's own work, sys-ns/call
// mostly the kernel's share of writes and fsyncs) per call, allocs/call the
// heap allocations per call.
func BenchmarkOrchestrationPerCall(b *testing.B) {
	for _, sync := range []bool{true, false} {
		b.Run(fmt.Sprintf("fsync=%v", sync), func(b *testing.B) {
			plan := loadPlan(b, writeSpec(b, b.TempDir(), fanoutSpec))
			const calls = 160
			content := strings.Repeat("A reply of a few hundred bytes, as models give. ", 8)
			opts := Options{
				Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=Is P equal to NP?"}}},
				Settings: Settings{RunsDir: b.TempDir(), Getenv: envFor("http://127.0.0.1:1/v1")},
				Seams:    Seams{HTTPClient: &http.Client{Transport: newInstantTransport(content)}},
			}
			var ms0, ms1 goruntime.MemStats
			b.ReportAllocs()
			goruntime.ReadMemStats(&ms0)
			user0, sys0 := cpuTime()
			wall0 := time.Now()
			runs := 0
			for b.Loop() {
				var r *Run
				if sync {
					var err error
					if r, err = Start(plan, opts); err != nil {
						b.Fatal(err)
					}
				} else {
					r = startNoSync(b, plan, opts)
				}
				res, err := r.Execute(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				if res.Usage.Total.Calls != calls {
					b.Fatalf("%d calls, want %d", res.Usage.Total.Calls, calls)
				}
				runs++
			}
			wall := time.Since(wall0)
			user, sys := cpuTime()
			user, sys = user-user0, sys-sys0
			goruntime.ReadMemStats(&ms1)
			n := float64(runs * calls)
			b.ReportMetric(float64((user+sys).Nanoseconds())/n, "cpu-ns/call")
			b.ReportMetric(float64(user.Nanoseconds())/n, "user-ns/call")
			b.ReportMetric(float64(sys.Nanoseconds())/n, "sys-ns/call")
			b.ReportMetric(float64(wall.Nanoseconds())/n, "wall-ns/call")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/n, "allocs/call")
		})
	}
}

// scheduleRatio runs the debate with every call taking latency and returns
// wall time over the critical path, and the most calls the server had in
// flight at once. The debate's dependent call layers are round 1's propose,
// critique, refine and evaluate, then critique, refine and evaluate in
// rounds 2 and 3 (proposals are carried over): 10 layers.
func scheduleRatio(t testing.TB, latency time.Duration) (ratio float64, elapsed time.Duration, peak int64) {
	t.Helper()
	const layers = 4 + 3 + 3
	var inFlight, maxInFlight atomic.Int64
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		n := inFlight.Add(1)
		for {
			m := maxInFlight.Load()
			if n <= m || maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(latency)
		inFlight.Add(-1)
		return llmtest.Reply{Content: answerOf(callKey(r))}
	})
	plan := loadPlan(t, "testdata/debate.yaml")
	start := time.Now()
	_, res, err := execute(t, plan, debateOpts(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	elapsed = time.Since(start)
	if res.Usage.Total.Calls != debateCalls {
		t.Fatalf("%d calls", res.Usage.Total.Calls)
	}
	return float64(elapsed) / float64(layers*latency), elapsed, maxInFlight.Load()
}

// BenchmarkDebateSchedule reports how close a 3-agent 3-round debate with a
// fixed 50ms per call comes to its critical path (ratio 1 = no overhead).
func BenchmarkDebateSchedule(b *testing.B) {
	var sum float64
	n := 0
	for b.Loop() {
		ratio, _, _ := scheduleRatio(b, 50*time.Millisecond)
		sum += ratio
		n++
	}
	b.ReportMetric(sum/float64(n), "x-critical-path")
}

// TestDebateSchedule checks that the calls of a layer run together (the six
// critiques are in flight at once) and logs how close the run comes to its
// critical path; wall-clock ratios depend on the machine, so they are
// reported rather than asserted.
func TestDebateSchedule(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	ratio, elapsed, peak := scheduleRatio(t, 50*time.Millisecond)
	t.Logf("debate with 50ms calls: %s, %.3fx its critical path of 500ms; at most %d calls in flight", elapsed, ratio, peak)
	if peak != 6 {
		t.Errorf("at most %d calls were in flight; the 6 critiques of a round should run at once", peak)
	}
}

// growth is the journal of one debate run, measured.
type growth struct {
	journal int64            // bytes of journal.jsonl
	content int64            // bytes of reply content (model_response events)
	events  int              // events in the journal
	byType  map[string]int64 // journal bytes per event type
}

// journalGrowth runs the debate with replies of size bytes and measures its
// journal.
func journalGrowth(t testing.TB, size int) growth {
	t.Helper()
	srv := llmtest.New(t, keyed(func(k string) string {
		head := answerOf(k) + " "
		return head + strings.Repeat("x", max(0, size-len(head)))
	}))
	r, _, err := execute(t, loadPlan(t, "testdata/debate.yaml"), debateOpts(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	data := mustRead(t, filepath.Join(r.Dir, "journal.jsonl"))
	g := growth{journal: int64(len(data)), byType: map[string]int64{}}
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var ev struct {
			Type string `json:"type"`
			Data struct {
				Content string `json:"content"`
			} `json:"data"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatal(err)
		}
		g.events++
		g.byType[ev.Type] += int64(len(line))
		if ev.Type == "model_response" {
			g.content += int64(len(ev.Data.Content))
		}
	}
	return g
}

// BenchmarkJournalGrowth reports journal bytes per byte of reply content for
// 1 KB, 10 KB and 100 KB replies, the same without run_finished (which holds
// the run's outputs, here 4 of the 33 replies), and the bytes per event beyond
// content.
func BenchmarkJournalGrowth(b *testing.B) {
	for _, size := range []int{1 << 10, 10 << 10, 100 << 10} {
		b.Run(fmt.Sprintf("reply=%dKB", size>>10), func(b *testing.B) {
			var g growth
			for b.Loop() {
				g = journalGrowth(b, size)
			}
			rest := g.journal - g.byType["run_finished"]
			b.ReportMetric(float64(g.journal)/float64(g.content), "journal/content")
			b.ReportMetric(float64(rest)/float64(g.content), "sans-outputs/content")
			b.ReportMetric(float64(rest-g.content)/float64(g.events), "overhead-B/event")
		})
	}
}

// TestJournalGrowth: the journal holds each reply once, plus a bounded
// overhead per event, whatever the reply size. The one other copy is the
// run's outputs in run_finished (here 4 of the 33 replies): a constant per
// run, not per event.
func TestJournalGrowth(t *testing.T) {
	for _, size := range []int{1 << 10, 32 << 10} {
		g := journalGrowth(t, size)
		rest := g.journal - g.byType["run_finished"]
		perEvent := float64(rest-g.content) / float64(g.events)
		t.Logf("replies of %3d KB: journal %8d B, content %8d B: %.3fx (%.3fx without run_finished's outputs), %.0f B/event beyond content (%d events)",
			size>>10, g.journal, g.content, float64(g.journal)/float64(g.content), float64(rest)/float64(g.content), perEvent, g.events)
		var types []string
		for typ, n := range g.byType {
			types = append(types, fmt.Sprintf("%s=%d", typ, n))
		}
		sort.Strings(types)
		t.Logf("  bytes by event type: %s", strings.Join(types, " "))
		if float64(rest) > 1.05*float64(g.content)+400*float64(g.events) {
			t.Errorf("replies of %d KB: the journal is %.2fx the reply content; replies are stored more than once", size>>10, float64(rest)/float64(g.content))
		}
	}
}
