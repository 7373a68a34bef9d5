package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/debate-runner/runner/runtime/launch"
)

// The benchmarks in this file measure what a model call costs the runtime
// late in a long run: the same workload with 1,000 and with 20,000 messages
// already recorded, so the ratio of the two shows how the cost per call
// grows with the history (1 is no growth). Each run is a real run of the
// flow against an instant in-process endpoint; only a window of calls made
// after the history reached its size is measured, not the calls that built
// it nor the run's end (result.json, report.md), which is linear in the
// history once per run.

// longAskSpec is a debate of 8 agents over many rounds with the library's
// ways of reading the history: each agent answers seeing the others' latest
// answers and the critiques it got last round, criticises every other
// answer (each:), and refines from the critiques in its inbox. A round
// records 72 messages.
const longAskSpec = `version: 1
name: long-ask
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
      You are {{.Agent.Name}} in round {{.Round}} of a debate on: {{.Inputs.question}}
      {{- with .Own}}
      Your last answer: {{.Content}}
      {{- end}}
      {{- range latest (notFrom .Agent.ID (byRecord "answer" .History))}}
      {{.From}} answered: {{.Content}}
      {{- end}}
      {{- range byTo .Agent.ID (byRecord "critique" (inRound (sub .Round 1) .History))}}
      {{.From}} criticised you: {{.Content}}
      {{- end}}
      Messages so far: {{count .History}}.
    critique: |-
      You are {{.Agent.Name}}. Criticise {{.Target.From}}'s answer to {{.Inputs.question}}:
      {{.Target.Content}}
      {{- with last (byFrom .Target.From (byRecord "refinement" (inRound (sub .Round 1) .History)))}}
      Their refinement last round: {{.Content}}
      {{- end}}
    refine: |-
      You are {{.Agent.Name}}. Refine your answer of round {{.Round}}:
      {{(last (byFrom .Agent.ID (byRecord "answer" (inRound .Round .History)))).Content}}
      {{- $critiques := byRecord "critique" .Inbox}}
      {{- if not $critiques}}{{$critiques = byTo .Agent.ID (byRecord "critique" (inRound .Round .History))}}{{end}}
      {{- range $critiques}}
      {{.From}}: {{.Content}}
      {{- end}}
nodes:
  answer: {kind: ask, agents: [a1, a2, a3, a4, a5, a6, a7, a8], template: answer, record: answer}
  critique: {kind: ask, agents: [a1, a2, a3, a4, a5, a6, a7, a8], template: critique, record: critique, each: {record: answer, from: others}}
  refine: {kind: ask, agents: [a1, a2, a3, a4, a5, a6, a7, a8], template: refine, record: refinement}
flow:
  - loop: {as: round, max: vars.rounds, do: [answer, critique, refine]}
outputs:
  answers: map(latest("refinement"), {.content})
`

// longConverseSpec is one long conversation of 8 agents taking turns, where
// replies whisper, address someone, think privately and give verdicts (see
// converseTransport), so each agent sees its own part of the history. The
// until condition is checked after every turn, as conversations do.
const longConverseSpec = `version: 1
name: long-converse
agents:
  a1: {}
  a2: {}
  a3: {}
  a4: {}
  a5: {}
  a6: {}
  a7: {}
  a8: {}
verdicts:
  vote: [YES, NO]
templates:
  define:
    turn: |-
      SPEAKER={{.Agent.ID}} You are {{.Agent.Name}}, turn {{.Turn}} of {{.MaxTurns}}; {{len .Undecided}} of {{len .Participants}} are undecided.
      {{- with last (byFrom .Agent.ID (byRecord "message" .History))}}
      You said last: {{.Content}}
      {{- end}}
      {{- range latest (notFrom .Agent.ID (byRecord "message" .History))}}
      {{.From}}{{if .Whisper}} (whispering to you){{end}}: {{.Content}}
      {{- end}}
      {{- with last .Inbox}}
      Last addressed to you, by {{.From}}: {{.Content}}
      {{- end}}
nodes:
  talk:
    kind: converse
    agents: [a1, a2, a3, a4, a5, a6, a7, a8]
    speaker: round_robin
    message: {format: tags, template: turn}
    verdict: {options: verdicts.vote, reasoning: optional}
    until: all(participants, {.withdrawn})
    max_turns: %d
flow: [talk]
outputs:
  turns: nodes.talk.output.turns
`

// longReply is the content of a reply: a few hundred bytes, as models give.
var longReply = strings.Repeat("A reply of a few hundred bytes, as models give. ", 8)

// completionBody is a chat completion response with content.
func completionBody(content string) []byte {
	body, err := json.Marshal(map[string]any{
		"id": "chatcmpl-bench", "object": "chat.completion", "created": 1, "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}},
		"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150},
	})
	if err != nil {
		panic(err)
	}
	return body
}

// converseTransport answers a conversation's turns at once, in-process. The
// n-th reply whispers to the next agent (n%4 == 1) or addresses it in public
// (n%4 == 2), adds private thoughts when n%5 == 0 and a verdict when
// n%7 == 0. The speaker is read from the SPEAKER= marker of the prompt;
// every body is made beforehand, so answering costs about what
// instantTransport's does.
type converseTransport struct {
	mu     sync.Mutex
	n      int
	bodies map[string][]byte
	buf    bytes.Buffer
}

func newConverseTransport(agents int) *converseTransport {
	t := &converseTransport{bodies: map[string][]byte{}}
	for a := 1; a <= agents; a++ {
		for mode := 0; mode < 4; mode++ {
			for _, private := range []bool{false, true} {
				for _, verdict := range []bool{false, true} {
					t.bodies[converseKey(a, mode, private, verdict)] = completionBody(converseReply(a%agents+1, mode, private, verdict))
				}
			}
		}
	}
	return t
}

func converseKey(speaker, mode int, private, verdict bool) string {
	return fmt.Sprintf("%d/%d/%v/%v", speaker, mode, private, verdict)
}

func converseReply(next, mode int, private, verdict bool) string {
	var b strings.Builder
	switch mode {
	case 1:
		fmt.Fprintf(&b, "<SpeakingTo>a%d</SpeakingTo>\n<Whisper>true</Whisper>\n", next)
	case 2:
		fmt.Fprintf(&b, "<SpeakingTo>a%d</SpeakingTo>\n", next)
	default:
		b.WriteString("<SpeakingTo>All</SpeakingTo>\n")
	}
	b.WriteString("<Content>" + longReply + "</Content>\n")
	if private {
		b.WriteString("<PrivateThoughts>Thoughts nobody else reads, kept with the turn.</PrivateThoughts>\n")
	}
	if verdict {
		b.WriteString("<Verdict>YES</Verdict>\n<VerdictReasoning>It holds up.</VerdictReasoning>\n")
	}
	return b.String()
}

func (t *converseTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	t.buf.Reset()
	if req.Body != nil {
		_, _ = io.Copy(&t.buf, req.Body)
		_ = req.Body.Close()
	}
	speaker := 0
	if i := bytes.Index(t.buf.Bytes(), []byte("SPEAKER=a")); i >= 0 {
		for _, c := range t.buf.Bytes()[i+len("SPEAKER=a"):] {
			if c < '0' || c > '9' {
				break
			}
			speaker = speaker*10 + int(c-'0')
		}
	}
	t.n++
	n := t.n
	t.mu.Unlock()
	body, ok := t.bodies[converseKey(speaker, n%4, n%5 == 0, n%7 == 0)]
	if !ok {
		return nil, fmt.Errorf("converseTransport: no speaker in the prompt of call %d", n)
	}
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
}

// window measures a stretch of calls of a run: it starts at the first call
// made once the run has recorded from messages and ends calls later, taking
// process CPU time and heap allocations at both ends, and then the heap the
// run holds.
type window struct {
	next     http.RoundTripper
	from     int
	calls    int
	recorded func() int // messages recorded so far; set once the run exists

	mu       sync.Mutex
	started  bool
	done     bool
	n        int
	history  int // messages recorded when the window started
	cpu0     time.Duration
	mallocs0 uint64
	cpu      time.Duration
	mallocs  uint64
	heap     uint64 // bytes live on the heap after the window
}

func (w *window) RoundTrip(req *http.Request) (*http.Response, error) {
	w.mu.Lock()
	switch {
	case w.done:
	case !w.started:
		if h := w.recorded(); h >= w.from {
			w.started, w.history = true, h
			w.cpu0, w.mallocs0 = cpuAndMallocs()
		}
	default:
		if w.n++; w.n == w.calls {
			cpu, mallocs := cpuAndMallocs()
			w.cpu, w.mallocs, w.done = cpu-w.cpu0, mallocs-w.mallocs0, true
			// Twice: the first collection leaves pooled buffers for the next.
			goruntime.GC()
			goruntime.GC()
			var ms goruntime.MemStats
			goruntime.ReadMemStats(&ms)
			w.heap = ms.HeapAlloc
		}
	}
	w.mu.Unlock()
	return w.next.RoundTrip(req)
}

func cpuAndMallocs() (time.Duration, uint64) {
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	user, sys := cpuTime()
	return user + sys, ms.Mallocs
}

// longRun is one workload of BenchmarkOrchestrationLongHistory.
type longRun struct {
	name string
	// spec returns the spec text and --set flags for a run that records at
	// least n messages.
	spec      func(n int) (string, []string)
	transport func() http.RoundTripper
	inputs    []string
}

var longRuns = []longRun{
	{
		name: "ask",
		spec: func(n int) (string, []string) {
			return longAskSpec, []string{fmt.Sprintf("rounds=%d", n/72+2)}
		},
		transport: func() http.RoundTripper { return newInstantTransport(longReply) },
		inputs:    []string{"question=Is P equal to NP?"},
	},
	{
		name: "converse",
		spec: func(n int) (string, []string) {
			return fmt.Sprintf(longConverseSpec, n+10), nil
		},
		transport: func() http.RoundTripper { return newConverseTransport(8) },
	},
}

// longResult is what measureLong measured, summed over runs.
type longResult struct {
	cpu     time.Duration
	mallocs uint64
	calls   int
	heap    uint64
	runs    int
}

func (r *longResult) add(o longResult) {
	r.cpu += o.cpu
	r.mallocs += o.mallocs
	r.calls += o.calls
	r.heap += o.heap
	r.runs += o.runs
}

func (r *longResult) report(b *testing.B, size string) {
	b.ReportMetric(float64(r.cpu.Nanoseconds())/float64(r.calls), "cpu-ns/call@"+size)
	b.ReportMetric(float64(r.mallocs)/float64(r.calls), "allocs/call@"+size)
	b.ReportMetric(float64(r.heap)/float64(r.runs)/(1<<20), "heap-MB@"+size)
}

// measureLong runs a workload until history messages are recorded, then
// measures the next history/4 calls. A window in proportion to the history
// spans about as many garbage collections at every size (the heap, and so
// the allocation between collections, grows with the history), so each
// size is charged its share of them.
func measureLong(b *testing.B, lr longRun, history int) longResult {
	b.Helper()
	calls := history / 4
	text, sets := lr.spec(history + calls)
	plan := loadPlan(b, writeSpec(b, b.TempDir(), text))
	w := &window{next: lr.transport(), from: history, calls: calls}
	opts := Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: lr.inputs, Sets: sets}},
		Settings: Settings{RunsDir: b.TempDir(), Getenv: envFor("http://127.0.0.1:1/v1")},
		Seams:    Seams{HTTPClient: &http.Client{Transport: w}},
	}
	r := startNoSync(b, plan, opts)
	h := &host{run: r}
	w.recorded = func() int { return len(h.Messages()) }
	if _, err := r.Execute(context.Background()); err != nil {
		b.Fatal(err)
	}
	if !w.done {
		b.Fatalf("%s: the run ended before %d calls after %d messages", lr.name, calls, history)
	}
	if w.history > history+history/10 {
		b.Fatalf("%s: the window started at %d messages, not about %d", lr.name, w.history, history)
	}
	return longResult{cpu: w.cpu, mallocs: w.mallocs, calls: calls, heap: w.heap, runs: 1}
}

// BenchmarkOrchestrationLongHistory reports, per workload, the runtime's
// CPU per model call (cpu-ns/call as in BenchmarkOrchestrationPerCall:
// getrusage user+system, fsync off) and heap allocations per call, measured
// over the 250 calls made after 1,000 recorded messages (in each of 4
// runs, for 1,000 calls in all) and the 5,000 made after 20,000, their ratio
// 20k/1k, and the heap live after each window.
func BenchmarkOrchestrationLongHistory(b *testing.B) {
	for _, lr := range longRuns {
		b.Run(lr.name, func(b *testing.B) {
			var small, large longResult
			for b.Loop() {
				for range 4 {
					small.add(measureLong(b, lr, 1000))
				}
				large.add(measureLong(b, lr, 20000))
			}
			small.report(b, "1k")
			large.report(b, "20k")
			perCall := func(r longResult) float64 { return float64(r.cpu) / float64(r.calls) }
			b.ReportMetric(perCall(large)/perCall(small), "ratio-20k/1k")
		})
	}
}
