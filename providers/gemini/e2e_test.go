package gemini_test

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

	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
)

var update = flag.Bool("update", false, "rewrite testdata/reasoning-debate.requests.golden")

// debateSpec is examples/reasoning-debate with its agents on a model of
// kind gemini at url, prompt cache breakpoints on (which kind gemini does not send), streamed or not,
// and a declared price (a local server's calls are otherwise unpriced).
func debateSpec(t *testing.T, url string, stream bool) string {
	t.Helper()
	src, err := os.ReadFile("../../examples/reasoning-debate/spec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`\{name: (Agent [A-C])\}`).ReplaceAllString(string(src), "{name: $1, model: flash, system: t/system}")
	text = strings.Replace(text, "templates: {use: [reasoning@2]}", "templates: {use: [reasoning@2], define: {t/system: '"+system+"'}}", 1)
	models := fmt.Sprintf(`endpoints:
  gemini: {kind: gemini, base_url: %q, api_key_env: GEMINI_API_KEY}

models:
  flash:
    model: gemini-2.5-flash
    endpoint: gemini
    max_tokens: 1024
    temperature: 0.5
    stream: %v
    prompt_cache: breakpoints
    price: {prompt: 0.30, completion: 2.50, cached_prompt: 0.075}

agents:`, url, stream)
	text = strings.Replace(text, "agents:", models, 1)
	return runtest.WriteSpec(t, t.TempDir(), text)
}

// system is every agent's system prompt: the same for all, so that the
// first request of a round writes it to the cache and the others read it.
const system = "You are one of three careful solvers in a debate. Reason in short numbered steps, check each step, and end with the boxed answer."

// debateReply answers each agent with a boxed answer that names it.
func debateReply(r fakeRequest) fakeReply {
	return fakeReply{Text: fmt.Sprintf("Working it through, the answer is \\boxed{42} (round of %d contents).", len(r.Params.Contents))}
}

// TestGeminiDebateEndToEnd runs examples/reasoning-debate through the
// engine against the fake Gemini API, streamed and not, with a 429 and
// a 503 injected: the run completes; the requests the server got are the
// golden bytes (system prompt as systemInstruction, generationConfig); result.json counts the usage the server
// reported (implicit cache hits included) and prices it; the API key is
// in no file of the run; the run replays with no server and no key to the
// same outputs, and a run stopped by a refused call resumes without
// asking again what it had.
func TestGeminiDebateEndToEnd(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) { debateEndToEnd(t, stream) })
	}
}

func env(url string) func(string) string {
	return func(k string) string {
		if k == "GEMINI_API_KEY" {
			return key
		}
		return ""
	}
}

func debateEndToEnd(t *testing.T, stream bool) {
	f := newFake(t, key, debateReply)
	f.fail = func(n int, _ fakeRequest) int { return map[int]int{2: 429, 4: 503}[n] }
	plan := runtest.LoadPlan(t, debateSpec(t, f.srv.URL, stream))
	opts := runtime.Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=What is six times seven?"}}},
		Settings: runtime.Settings{RunsDir: t.TempDir(), Getenv: env(f.srv.URL)},
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
		if r.Header.Get("x-goog-api-key") != key {
			t.Errorf("request %d: x-goog-api-key %q", r.N, r.Header.Get("x-goog-api-key"))
		}
	}
	sort.Strings(bodies)
	bodies = compact(bodies)
	got := strings.Join(bodies, "\n")
	golden := filepath.Join("testdata", "reasoning-debate.requests.golden")
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
	if u.Calls != 6 || u.PromptTokens == 0 || u.CompletionTokens == 0 || u.CacheWriteTokens != 0 || u.CachedTokens == 0 || u.EstimatedCalls != 0 {
		t.Errorf("usage %+v: want 6 calls with implicit cache hits, none estimated", u)
	}
	wantCost := (float64(u.PromptTokens-u.CachedTokens)*0.30 + float64(u.CachedTokens)*0.075 + float64(u.CompletionTokens)*2.50) / 1e6
	if d := u.Cost - wantCost; d > 1e-9 || d < -1e-9 || !u.Priced {
		t.Errorf("cost %v (priced %v), want %v", u.Cost, u.Priced, wantCost)
	}

	// No file of the run holds the key.
	noKey(t, run.Dir)

	// Replay: no server, no key, the same outputs.
	recorded, err := runtime.LoadReplay(run.Dir)
	if err != nil {
		t.Fatal(err)
	}
	n := len(f.Requests())
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
	if len(f.Requests()) != n || fmt.Sprint(rres.Outputs) != fmt.Sprint(res.Outputs) || replay.CallCounts().Replay != 6 {
		t.Errorf("replay sent %d requests, outputs %v (want %v), counts %+v", len(f.Requests())-n, rres.Outputs, res.Outputs, replay.CallCounts())
	}

	// Resume: round 2 refused (a final 400), then the server is fixed; the
	// resumed run asks only round 2 again.
	f2 := newFake(t, key, debateReply)
	f2.fail = func(_ int, r fakeRequest) int {
		if strings.Contains(string(r.Body), `boxed{42}`) { // round 2 shows round 1's answers
			return 400
		}
		return 0
	}
	plan2 := runtest.LoadPlan(t, debateSpec(t, f2.srv.URL, stream))
	broken, err := runtime.Start(plan2, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := broken.Execute(context.Background()); err == nil && res.Status == result.StatusCompleted {
		t.Fatal("the run with round 2 refused completed")
	}
	before := len(f2.Requests())
	f2.fail = nil
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
	noKey(t, broken.Dir)
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

func noKey(t *testing.T, dir string) {
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
