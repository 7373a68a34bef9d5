package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
)

// testKey is the API key tests configure; no file of a run may contain it.
const testKey = "sk-runtime-test-key-0123456789"

// Helpers shared with other packages' tests (internal/runtest).
var (
	noSleep   = runtest.NoSleep
	loadPlan  = runtest.LoadPlan
	writeSpec = runtest.WriteSpec
	callKey   = runtest.CallKey
)

// envFor points the default endpoint at url with the test key.
func envFor(url string) func(string) string { return runtest.Env(url, testKey) }

// simpleSpec is testdata/simple.yaml with extra top-level YAML appended
// (defaults, endpoints, models).
func simpleSpec(t testing.TB, extra string) *spec.Plan {
	t.Helper()
	base, err := os.ReadFile("testdata/simple.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return loadPlan(t, writeSpec(t, t.TempDir(), string(base)+"\n"+extra))
}

// keyed answers every call with reply(key), so results do not depend on
// the order calls arrive in.
func keyed(reply func(key string) string) llmtest.Handler {
	return func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: reply(callKey(r))}
	}
}

// answerOf is the standard scripted answer for a call key.
func answerOf(key string) string { return "answer to " + key }

// execute starts and runs plan to the end with opts.
func execute(t testing.TB, plan *spec.Plan, opts Options) (*Run, *result.Result, error) {
	t.Helper()
	if opts.RunsDir == "" {
		opts.RunsDir = t.TempDir()
	}
	r, err := Start(plan, opts)
	if err != nil {
		return nil, nil, err
	}
	res, err := r.Execute(context.Background())
	return r, res, err
}

// readEvents reads a run's journal.
func readEvents(t testing.TB, dir string) []journal.Event {
	t.Helper()
	evs, err := journal.Read(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// eventsOf returns the events of one type.
func eventsOf(evs []journal.Event, typ event.Type) []journal.Event {
	var out []journal.Event
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// volatile are result.json fields that legitimately differ between runs of
// the same plan with the same replies.
var volatile = map[string]bool{"run_id": true, "duration_ms": true, "latency_ms": true}

// stableResult reads result.json with the volatile fields removed, in a
// canonical JSON encoding (sorted keys, indented).
func stableResult(t testing.TB, dir string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	return stripFields(t, data, volatile)
}

// stripFields removes the named keys at any depth of a JSON document.
func stripFields(t testing.TB, data []byte, drop map[string]bool) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if drop[k] {
					delete(x, k)
					continue
				}
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	out, err := json.MarshalIndent(walk(v), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// outputsAndMessages is the part of result.json that must not depend on
// faults or timing: outputs and the messages.
func outputsAndMessages(t testing.TB, dir string) []byte {
	t.Helper()
	var res struct {
		Outputs  json.RawMessage `json:"outputs"`
		Messages json.RawMessage `json:"messages"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.Write(res.Outputs)
	b.WriteByte('\n')
	b.Write(res.Messages)
	return b.Bytes()
}

// keysOf returns the call keys of requests a server received, counting
// repeats.
func keysOf(reqs []llmtest.Request) map[string]int {
	out := map[string]int{}
	for _, r := range reqs {
		out[callKey(r)]++
	}
	return out
}

// collector is an Observer that keeps every notice.
type collector struct {
	mu      sync.Mutex
	notices []Notice
}

func (c *collector) observe(n Notice) {
	c.mu.Lock()
	c.notices = append(c.notices, n)
	c.mu.Unlock()
}
