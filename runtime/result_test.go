package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/runtime/launch"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/schemas"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// TestResultShape checks result.json field by field on a priced run, and
// that report.md shows inputs, agents, every message, outputs and usage.
func TestResultShape(t *testing.T) {
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: answerOf(callKey(r)), PromptTokens: 1000, CompletionTokens: 500}
	})
	plan := simpleSpec(t, "models: {default: {model: test-model, temperature: 0.2, price: {prompt: 1, completion: 2}}}\n")
	r, _, err := execute(t, plan, Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=What is 6x7?"}}},
		Settings: Settings{Getenv: envFor(srv.URL)},
	})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		RunID    string         `json:"run_id"`
		Status   string         `json:"status"`
		Error    *string        `json:"error"`
		Outputs  map[string]any `json:"outputs"`
		Messages []map[string]any
		Usage    struct {
			Total   result.Usage            `json:"total"`
			ByAgent map[string]result.Usage `json:"by_agent"`
			ByNode  map[string]result.Usage `json:"by_node"`
		} `json:"usage"`
	}
	data := mustRead(t, filepath.Join(r.Dir, "result.json"))
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if res.RunID != r.ID || filepath.Base(r.Dir) != r.ID {
		t.Errorf("run_id %q, directory %q", res.RunID, r.Dir)
	}
	if res.Status != "completed" || res.Error != nil {
		t.Errorf("status %q, error %v", res.Status, res.Error)
	}
	wantOut := []any{"answer to a/r0/answer", "answer to b/r0/answer"}
	if got, _ := json.Marshal(res.Outputs["answers"]); string(got) != string(mustJSON(t, wantOut)) {
		t.Errorf("outputs.answers = %s", got)
	}
	if len(res.Messages) != 2 {
		t.Fatalf("%d messages", len(res.Messages))
	}
	for i, m := range res.Messages {
		agent := []string{"a", "b"}[i]
		want := map[string]any{"id": "m" + string(rune('1'+i)), "node": "answer", "from": agent, "record": "answer",
			"content": "answer to " + agent + "/r0/answer"}
		for k, v := range want {
			if m[k] != v {
				t.Errorf("message %d: %s = %v, want %v", i, k, m[k], v)
			}
		}
		// A text reply's output is its content: stored once.
		if out, ok := m["output"]; ok {
			t.Errorf("message %d: output %v stored beside its content", i, out)
		}
	}
	validateResult(t, data)
	// 1000 prompt tokens at 1/M and 500 completion tokens at 2/M per call.
	const perCall = 0.002
	check := func(name string, u result.Usage, calls int) {
		t.Helper()
		if u.Calls != calls || u.PromptTokens != 1000*calls || u.CompletionTokens != 500*calls || !u.Priced ||
			math.Abs(u.Cost-perCall*float64(calls)) > 1e-12 {
			t.Errorf("usage %s = %+v, want %d calls costing %g", name, u, calls, perCall*float64(calls))
		}
	}
	check("total", res.Usage.Total, 2)
	check("agent a", res.Usage.ByAgent["a"], 1)
	check("agent b", res.Usage.ByAgent["b"], 1)
	check("node answer", res.Usage.ByNode["answer"], 2)

	report := string(mustRead(t, filepath.Join(r.Dir, "report.md")))
	for _, want := range []string{
		"# simple", "Status: **completed**", "## Inputs", "### question", "What is 6x7?",
		"## Agents", "| a | Alice |", "| b | Bob |", "test-model",
		"## Transcript", "answer to a/r0/answer", "answer to b/r0/answer",
		"## Outputs", "### answers",
		"## Usage", "| agent a | 1 | 1000 | 500 |", "| node answer | 2 | 2000 | 1000 |", "| **total** | 2 | 2000 | 1000 |", "0.0040",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("report.md:\n%s", report)
	}
}

// validateResult checks result.json against the published schema.
func validateResult(t testing.TB, data []byte) {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource("result.schema.json", bytes.NewReader(schemas.Result)); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("result.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(doc); err != nil {
		t.Errorf("result.json does not match schemas/result.schema.json: %v", err)
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestStartNeedsKey: a run against a remote endpoint needs its key before
// anything is created; the key may come from a .env next to the spec.
func TestStartNeedsKey(t *testing.T) {
	const remote = "endpoints: {remote: {base_url: 'https://api.example.com/v1', api_key_env: REMOTE_KEY}}\nmodels: {default: {model: m, endpoint: remote}}\n"
	base := string(mustRead(t, "testdata/simple.yaml"))
	for _, tc := range []struct {
		name   string
		dotenv string
		env    map[string]string
		ok     bool
	}{
		{"no key", "", nil, false},
		{"key in environment", "", map[string]string{"REMOTE_KEY": testKey}, true},
		{"key in .env", "REMOTE_KEY=" + testKey + "\n", nil, true},
		{"empty key in .env", "REMOTE_KEY=\n", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			plan := loadPlan(t, writeSpec(t, dir, base+"\n"+remote))
			if tc.dotenv != "" {
				if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(tc.dotenv), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			runs := filepath.Join(t.TempDir(), "runs")
			r, err := Start(plan, Options{
				Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}},
				Settings: Settings{RunsDir: runs, Getenv: func(k string) string { return tc.env[k] }},
			})
			if tc.ok {
				if err != nil {
					t.Fatalf("Start: %v", err)
				}
				if err := r.journal.Close(); err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *args.FlagError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), "REMOTE_KEY") || !strings.Contains(err.Error(), "api.example.com") {
				t.Fatalf("err = %v, want a args.FlagError naming REMOTE_KEY and the endpoint", err)
			}
			if _, err := os.Stat(runs); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a run without its key created %s", runs)
			}
		})
	}
}

// TestObserverSeesJournalInOrder: the observer is told every journaled event
// exactly once, in Seq order, although calls finish concurrently.
func TestObserverSeesJournalInOrder(t *testing.T) {
	srv := llmtest.New(t, jittered(5*time.Millisecond, answerOf))
	var c collector
	opts := debateOpts(srv.URL)
	opts.Observer = c.observe
	r, _, err := execute(t, loadPlan(t, "testdata/debate.yaml"), opts)
	if err != nil {
		t.Fatal(err)
	}
	var seen []int64
	for _, n := range c.notices {
		if n.Event != nil {
			seen = append(seen, n.Event.Seq)
		}
	}
	journaled := readEvents(t, r.Dir)
	if len(seen) != len(journaled) {
		t.Fatalf("observer saw %d events, journal has %d", len(seen), len(journaled))
	}
	for i, ev := range journaled {
		if seen[i] != ev.Seq {
			t.Fatalf("observer event %d has seq %d, journal has %d: %v", i, seen[i], ev.Seq, seen)
		}
	}
}

// TestKeyNeverStored: the key reaches no file of a run, also when a server
// echoes it in error bodies that end up in retries and in the failure.
func TestKeyNeverStored(t *testing.T) {
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Status: 500, ErrorMessage: "bad upstream for " + r.Header.Get("Authorization")}
	})
	r, res, err := execute(t, simpleSpec(t, "defaults: {max_retries: 1}\n"), Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}},
		Settings: Settings{Getenv: envFor(srv.URL)},
		Seams:    Seams{Sleep: noSleep},
	})
	if err == nil || res.Status != result.StatusFailed {
		t.Fatalf("err = %v, status %s", err, res.Status)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Errorf("the error contains the key: %v", err)
	}
	entries, err := os.ReadDir(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if data := mustRead(t, filepath.Join(r.Dir, e.Name())); bytes.Contains(data, []byte(testKey)) {
			t.Errorf("%s contains the API key", e.Name())
		}
	}
	if !bytes.Contains(mustRead(t, filepath.Join(r.Dir, "journal.jsonl")), []byte("[REDACTED]")) {
		t.Error("the echoed key should appear redacted in the journal's retry and error events")
	}
}

// TestSecretWithMarkupNeverInReports: a secret holding characters the
// reports escape (`<`, `&`), given as an input as well, reaches no file of
// the run, escaped or not: the reports are made from redacted values, not
// redacted after escaping (when `\<` or `&lt;` no longer matched).
func TestSecretWithMarkupNeverInReports(t *testing.T) {
	const secret = "sk-left<right&tail-9876"
	srv := llmtest.New(t, keyed(answerOf))
	r, res, err := execute(t, simpleSpec(t, ""), Options{Launch: launch.Launch{Given: launch.Given{Inputs: []string{"question=" + secret}}}, Settings: Settings{Getenv: runtest.Env(srv.URL, secret)}})
	if err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("err = %v, status %s", err, res.Status)
	}
	entries, err := os.ReadDir(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		// The part after the `<` is in every spelling of the secret.
		if data := mustRead(t, filepath.Join(r.Dir, e.Name())); bytes.Contains(data, []byte("tail-9876")) {
			t.Errorf("%s holds the secret (in some spelling)", e.Name())
		}
	}
	if !bytes.Contains(mustRead(t, filepath.Join(r.Dir, "report.md")), []byte("[REDACTED]")) {
		t.Error("report.md should show the input redacted")
	}
}
