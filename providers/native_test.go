package providers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/nativetest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
)

var update = flag.Bool("update", false, "rewrite testdata/KIND.reasoning-debate.requests.golden")

// native is what the end-to-end test needs to know of a native kind: its
// key's variable and header, a model and its price, the transient errors
// it retries, whether it reports cache writes, and the word the fake's
// reply counts the request's turns in.
type native struct {
	kind, keyEnv, keyHeader, key string
	model, price                 string
	transient                    [2]int
	writes                       bool
	turns                        string
	cost                         func(u result.Usage) float64
}

var natives = []native{{
	kind: "anthropic", keyEnv: "ANTHROPIC_API_KEY", keyHeader: "x-api-key", key: "sk-ant-test-0123456789abcdef",
	model: "claude-sonnet-4-5", price: "{prompt: 3, completion: 15, cached_prompt: 0.30, cache_write: 3.75}",
	transient: [2]int{429, 529}, writes: true, turns: "messages",
	cost: func(u result.Usage) float64 {
		return (float64(u.PromptTokens-u.CachedTokens-u.CacheWriteTokens)*3 + float64(u.CachedTokens)*0.30 + float64(u.CacheWriteTokens)*3.75 + float64(u.CompletionTokens)*15) / 1e6
	},
}, {
	kind: "gemini", keyEnv: "GEMINI_API_KEY", keyHeader: "x-goog-api-key", key: "AIzaTestKey-0123456789abcdefghij",
	model: "gemini-2.5-flash", price: "{prompt: 0.30, completion: 2.50, cached_prompt: 0.075}",
	transient: [2]int{429, 503}, turns: "contents",
	cost: func(u result.Usage) float64 {
		return (float64(u.PromptTokens-u.CachedTokens)*0.30 + float64(u.CachedTokens)*0.075 + float64(u.CompletionTokens)*2.50) / 1e6
	},
}}

// debateSpec is examples/reasoning-debate with its agents on a model of
// the native kind at url, prompt cache breakpoints on (which kind gemini
// does not send), streamed or not, and a declared price (a local server's
// calls are otherwise unpriced).
func (n native) debateSpec(t *testing.T, url string, stream bool) string {
	t.Helper()
	src, err := os.ReadFile("../examples/reasoning-debate/spec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`\{name: (Agent [A-C])\}`).ReplaceAllString(string(src), "{name: $1, model: m, system: t/system}")
	text = strings.Replace(text, "templates: {use: [reasoning@2]}", "templates: {use: [reasoning@2], define: {t/system: '"+debateSystem+"'}}", 1)
	models := fmt.Sprintf(`endpoints:
  native: {kind: %s, base_url: %q, api_key_env: %s}

models:
  m:
    model: %s
    endpoint: native
    max_tokens: 1024
    temperature: 0.5
    stream: %v
    prompt_cache: breakpoints
    price: %s

agents:`, n.kind, url, n.keyEnv, n.model, stream, n.price)
	text = strings.Replace(text, "agents:", models, 1)
	return runtest.WriteSpec(t, t.TempDir(), text)
}

// debateSystem is every agent's system prompt: the same for all, so that
// the first request of a round writes it to the cache and the others read
// it.
const debateSystem = "You are one of three careful solvers in a debate. Reason in short numbered steps, check each step, and end with the boxed answer."

// debateReply answers each agent with a boxed answer.
func (n native) debateReply(r nativetest.Request) nativetest.Reply {
	return nativetest.Reply{Text: fmt.Sprintf("Working it through, the answer is \\boxed{42} (round of %d %s).", len(r.Params.Messages)+len(r.Params.Contents), n.turns)}
}

func (n native) env(k string) string {
	if k == n.keyEnv {
		return n.key
	}
	return ""
}

// TestNativeDebateEndToEnd runs examples/reasoning-debate through the
// engine against each native kind's fake API, streamed and not, with two
// transient errors injected (429, and 529 for Anthropic or 503 for
// Gemini): the run completes; the requests the server got are the golden
// bytes (the system prompt as the kind's field, cache_control
// breakpoints for Anthropic, max_tokens and temperature); result.json
// counts the usage the server reported (cache reads, and Anthropic's
// writes) and prices it; the API key is in no file of the run; the run
// replays with no server and no key to the same outputs, and a run stopped
// by a refused call resumes without asking again what it had.
func TestNativeDebateEndToEnd(t *testing.T) {
	for _, n := range natives {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", n.kind, stream), func(t *testing.T) {
				t.Parallel()
				n.debateEndToEnd(t, stream)
			})
		}
	}
}

func (n native) debateEndToEnd(t *testing.T, stream bool) {
	f := nativetest.New(t, n.kind, n.key, n.debateReply)
	f.Fail = func(i int, _ nativetest.Request) (int, bool) {
		switch i {
		case 2:
			return n.transient[0], false
		case 4:
			return n.transient[1], false
		}
		return 0, false
	}
	plan := runtest.LoadPlan(t, n.debateSpec(t, f.URL, stream))
	opts := runtime.Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=What is six times seven?"}}},
		Settings: runtime.Settings{RunsDir: t.TempDir(), Getenv: n.env},
		Seams:    runtime.Seams{Sleep: runtest.NoSleep},
	}
	run, err := runtime.Start(plan, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Execute(context.Background())
	if err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("run: %v (status %v)", err, res.Status)
	}
	if got := fmt.Sprint(res.Outputs["answer"]); got != "42" {
		t.Errorf("answer %q, want 42", got)
	}
	reqs := f.Requests()
	if len(reqs) != 8 {
		t.Fatalf("%d requests reached the server, want 6 calls and 2 retried", len(reqs))
	}

	// The requests' bytes, in an order that does not depend on which agent
	// was first (the three of a round run concurrently).
	var bodies []string
	for _, r := range reqs {
		bodies = append(bodies, string(r.Body))
		if r.Header.Get(n.keyHeader) != n.key {
			t.Errorf("request %d: %s %q", r.N, n.keyHeader, r.Header.Get(n.keyHeader))
		}
		if n.kind == "anthropic" && r.Header.Get("anthropic-version") == "" {
			t.Errorf("request %d has no anthropic-version", r.N)
		}
	}
	sort.Strings(bodies)
	bodies = compact(bodies)
	got := strings.Join(bodies, "\n")
	got = strings.ReplaceAll(got, `,"stream":true`, "") // Gemini streams by its URL
	golden := filepath.Join("testdata", n.kind+".reasoning-debate.requests.golden")
	if *update && !stream {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("the requests differ from %s:\n%s", golden, got)
	}

	// Usage and cost as the server reported them.
	data, err := os.ReadFile(filepath.Join(run.Dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rj struct {
		Usage struct {
			Total result.Usage `json:"total"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(data, &rj); err != nil {
		t.Fatal(err)
	}
	u := rj.Usage.Total
	if u.Calls != 6 || u.PromptTokens == 0 || u.CompletionTokens == 0 || (u.CacheWriteTokens != 0) != n.writes || u.CachedTokens == 0 || u.EstimatedCalls != 0 {
		t.Errorf("usage %+v: want 6 calls with cache reads (round 2), cache writes %v, none estimated", u, n.writes)
	}
	if d := u.Cost - n.cost(u); d > 1e-9 || d < -1e-9 || !u.Priced {
		t.Errorf("cost %v (priced %v), want %v", u.Cost, u.Priced, n.cost(u))
	}

	// No file of the run holds the key.
	noKey(t, run.Dir, n.key)

	// Replay: no server, no key, the same outputs.
	recorded, err := runtime.LoadReplay(run.Dir)
	if err != nil {
		t.Fatal(err)
	}
	sent := len(f.Requests())
	ropts := opts
	ropts.Launch.Recording = launch.Recording{Replay: recorded}
	ropts.Settings.Getenv = func(string) string { return "" }
	replay, err := runtime.Start(plan, ropts)
	if err != nil {
		t.Fatal(err)
	}
	rres, err := replay.Execute(context.Background())
	if err != nil || rres.Status != result.StatusCompleted {
		t.Fatalf("replay: %v", err)
	}
	if len(f.Requests()) != sent || fmt.Sprint(rres.Outputs) != fmt.Sprint(res.Outputs) || replay.CallCounts().Replay != 6 {
		t.Errorf("replay sent %d requests, outputs %v (want %v), counts %+v", len(f.Requests())-sent, rres.Outputs, res.Outputs, replay.CallCounts())
	}

	// Resume: round 2 refused (a final 400), then the server is fixed; the
	// resumed run asks only round 2 again.
	f2 := nativetest.New(t, n.kind, n.key, n.debateReply)
	f2.Fail = func(_ int, r nativetest.Request) (int, bool) {
		if strings.Contains(string(r.Body), `boxed{42}`) { // round 2 shows round 1's answers
			return 400, false
		}
		return 0, false
	}
	plan2 := runtest.LoadPlan(t, n.debateSpec(t, f2.URL, stream))
	broken, err := runtime.Start(plan2, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := broken.Execute(context.Background()); err == nil && res.Status == result.StatusCompleted {
		t.Fatal("the run with round 2 refused completed")
	}
	before := len(f2.Requests())
	f2.SetFail(nil)
	resumed, err := runtime.Resume(broken.Dir, nodes.Registry(), runtime.Options{Settings: opts.Settings, Seams: opts.Seams})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := resumed.Execute(context.Background())
	if err != nil || rs.Status != result.StatusCompleted || fmt.Sprint(rs.Outputs["answer"]) != "42" {
		t.Fatalf("resume: %v (%v)", err, rs.Outputs)
	}
	for _, r := range f2.Requests()[before:] {
		if !strings.Contains(string(r.Body), `boxed{42}`) {
			t.Errorf("the resumed run asked a round-1 call again: %.200s", r.Body)
		}
	}
	noKey(t, broken.Dir, n.key)
}

// compact drops repeats (a retried request is the same bytes).
func compact(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func noKey(t *testing.T, dir, key string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(key)) || bytes.Contains(data, []byte(key[:16])) {
			t.Errorf("%s holds the API key", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
