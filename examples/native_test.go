package examples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/internal/nativetest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/dryrun"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/value"
)

// TestExamplesOnNativeKinds runs every example (the published protocols
// included) on each native kind, anthropic and gemini: the spec's
// OpenAI-shaped endpoints are pointed at the kind's local server
// (internal/nativetest), which answers each request with the stand-in
// reply the dry run gave the same messages, so every prompt, parser and
// loop of the example goes through the kind's translation both ways. The
// run must finish with every request one the dry run made, and its replay
// (no server, no key) must give the same outputs, messages and output
// order, byte for byte.
func TestExamplesOnNativeKinds(t *testing.T) {
	for _, name := range examples(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			plan := shortPlan(t, name)
			r, _ := readReadme(t, name)
			var inputs []string
			for k, v := range r.inputs {
				inputs = append(inputs, k+"="+v)
			}
			var answered []calls.Answered
			if _, err := dryrun.Run(plan, dryrun.Options{Given: launch.Given{Inputs: inputs}, ActualSizes: true, StandInsByPrompt: true, Answered: func(a []calls.Answered) { answered = a }}); err != nil {
				t.Fatalf("dry run: %v", err)
			}
			// The dry run's reply for each request, by the request's text.
			replies := map[string]string{}
			for _, a := range answered {
				replies[linesKey(turnsOf(a.Messages))] = a.Reply
			}
			for _, kind := range nativetest.Kinds {
				t.Run(kind, func(t *testing.T) { runOnKind(t, name, kind, inputs, replies) })
			}
		})
	}
}

func runOnKind(t *testing.T, name, kind string, inputs []string, replies map[string]string) {
	const key = "native-examples-test-key"
	var mu sync.Mutex
	var unknown []string
	srv := nativetest.New(t, kind, key, func(req nativetest.Request) nativetest.Reply {
		k := linesKey(req.Turns())
		mu.Lock()
		defer mu.Unlock()
		rep, ok := replies[k]
		if !ok {
			unknown = append(unknown, clip(k))
		}
		return nativetest.Reply{Text: rep}
	})
	srv.Fail = func(_ int, req nativetest.Request) (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := replies[linesKey(req.Turns())]; !ok {
			return 400, false
		}
		return 0, false
	}
	// A fresh plan per kind: its endpoints are changed in place.
	plan := shortPlan(t, name)
	onKind(t, plan, kind, srv.URL)
	opts := runtime.Options{
		Launch: launch.Launch{Given: launch.Given{Inputs: inputs}},
		Settings: runtime.Settings{RunsDir: filepath.Join(t.TempDir(), "runs"), Getenv: func(k string) string {
			if k == "NATIVE_KEY" {
				return key
			}
			return ""
		}, Ask: func(_ context.Context, q value.Question) (string, error) {
			return "<answer to " + q.ID + ">", nil
		}},
		Seams: runtime.Seams{Sleep: runtest.NoSleep},
	}
	run, err := runtime.Start(plan, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Execute(context.Background())
	mu.Lock()
	for i, u := range unknown {
		if i == 3 {
			t.Errorf("... and %d more", len(unknown)-3)
			break
		}
		t.Errorf("the run on kind %s sent a request the dry run did not make:\n%s", kind, u)
	}
	mu.Unlock()
	if err != nil || !result.Finished(res.Status) {
		t.Fatalf("the run on kind %s: %v (status %s, %s)", kind, err, res.Status, res.Error)
	}
	sent := len(srv.Requests())
	if sent == 0 {
		t.Fatalf("no request reached the %s server", kind)
	}

	recorded, err := runtime.LoadReplay(run.Dir)
	if err != nil {
		t.Fatal(err)
	}
	ropts := opts
	ropts.Launch.Recording = launch.Recording{Replay: recorded, ReplayFrom: run.Dir}
	ropts.Settings.Getenv = func(string) string { return "" }
	ropts.Settings.RunsDir = filepath.Join(t.TempDir(), "replays")
	replay, err := runtime.Start(plan, ropts)
	if err != nil {
		t.Fatal(err)
	}
	rres, err := replay.Execute(context.Background())
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if got, want := stable(t, rres), stable(t, res); !bytes.Equal(got, want) {
		t.Errorf("the replay differs from the run:\n%s\n%s", clip(string(got)), clip(string(want)))
	}
	if n := len(srv.Requests()); n != sent {
		t.Errorf("the replay sent %d requests", n-sent)
	}
}

// longTurns is a conversation's max_turns above the short runs' cap.
var longTurns = regexp.MustCompile(`(?m)^(\s+max_turns:) ([0-9]{2,})\b`)

// shortPlan compiles an example with its conversations capped at 6 turns
// (three of them allow 60): every prompt, parser and node of the example
// still runs, in a tenth of the calls, which is what keeps the test
// cheap enough to run on every kind in CI.
func shortPlan(t *testing.T, name string) *spec.Plan {
	t.Helper()
	path := filepath.Join(name, "spec.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	plan, diags := spec.Compile(path, longTurns.ReplaceAll(data, []byte("$1 6")), nodes.Registry())
	if diags.HasErrors() {
		t.Fatalf("%s with short conversations:\n%s", path, diags.Format())
	}
	return plan
}

// onKind points every endpoint of the plan that speaks Chat Completions at
// a server of kind, with its key from NATIVE_KEY.
func onKind(t *testing.T, plan *spec.Plan, kind, url string) {
	t.Helper()
	p, ok := nodes.Registry().Provider(kind)
	if !ok {
		t.Fatalf("no provider kind %s", kind)
	}
	for _, ep := range plan.Endpoints {
		if ep.Kind != "openai" {
			continue
		}
		ep.Kind, ep.Provider, ep.BaseURL, ep.FromEnv, ep.APIKeyEnv, ep.APIKeyHeader = kind, p, url, false, "NATIVE_KEY", ""
		ep.JSONMode, ep.MaxTokensField, ep.Extra = "", "", nil
	}
}

// stable is what a replay must give again byte for byte: the outputs,
// the messages and the outputs' order.
func stable(t *testing.T, res *result.Result) []byte {
	t.Helper()
	data, err := json.Marshal(map[string]any{"outputs": res.Outputs, "messages": res.Messages, "order": res.OutputOrder, "status": res.Status})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func turnsOf(ms []kit.ChatMessage) []nativetest.Turn {
	out := make([]nativetest.Turn, len(ms))
	for i, m := range ms {
		out[i] = nativetest.Turn{Role: m.Role, Text: m.Content}
	}
	return out
}

// linesKey names a request by the lines of its texts, trimmed and
// sorted: the same for a conversation in the engine's messages and in a
// native kind's, which moves system prompts to a field of their own and
// joins turns of one role.
func linesKey(turns []nativetest.Turn) string {
	var lines []string
	for _, tn := range turns {
		for _, l := range strings.Split(tn.Text, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
	}
	sort.Strings(lines)
	return fmt.Sprint(len(lines), "\n", strings.Join(lines, "\n"))
}
