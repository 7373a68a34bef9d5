package examples_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/dryrun"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/spec"
)

// TestDryRunIsTheRun: the dry run is the real interpreter. For every
// example, a real run whose endpoint answers each request with the stand-in
// the dry run answered the same request with sends only requests the dry
// run made, byte for byte (roles and texts of every message), and every
// prompt the dry run shows (each node's first round) is among them. The dry
// run may make more calls than the run (it takes both branches of an if on
// replies, ignores until), never different ones.
func TestDryRunIsTheRun(t *testing.T) {
	for _, name := range examples(t) {
		t.Run(name, func(t *testing.T) {
			plan := load(t, name)
			r, _ := readReadme(t, name)
			var inputs []string
			for k, v := range r.inputs {
				inputs = append(inputs, k+"="+v)
			}
			var answered []calls.Answered
			rep, err := dryrun.Run(plan, dryrun.Options{
				Given:       launch.Given{Inputs: inputs},
				ActualSizes: true,
				Answered:    func(a []calls.Answered) { answered = a },
			})
			if err != nil {
				t.Fatalf("dry run: %v", err)
			}
			checkPromptsRender(t, name, plan, r, promptsOf(answered), rep.Notes)
			// What the dry run asked and answered, by call key.
			asked, replies := map[string]string{}, map[string]string{}
			for _, a := range answered {
				asked[a.Key], replies[a.Key] = requestText(a.Messages), a.Reply
			}
			var mu sync.Mutex
			var sent []string
			var unknown []string
			srv := llmtest.New(t, func(req llmtest.Request) llmtest.Reply {
				var ms []struct{ Role, Content string }
				for _, m := range req.Messages {
					ms = append(ms, struct{ Role, Content string }{m.Role, m.Content})
				}
				text := requestTextOf(ms)
				key := req.Header.Get("X-Call-Key")
				mu.Lock()
				defer mu.Unlock()
				sent = append(sent, text)
				if asked[key] != text {
					unknown = append(unknown, "call "+key+":\n"+text)
					return llmtest.Reply{Status: 400, ErrorMessage: "the dry run made no such request"}
				}
				return llmtest.Reply{Content: replies[key]}
			})
			opts := runtime.Options{
				Launch: launch.Launch{Given: launch.Given{Inputs: inputs}},
				Settings: runtime.Settings{RunsDir: filepath.Join(t.TempDir(), "runs"), Getenv: runtest.Env(srv.URL, "sk-test"), Ask: func(_ context.Context, q value.Question) (string, error) {
					return "<answer to " + q.ID + ">", nil
				}},
				Seams: runtime.Seams{Sleep: runtest.NoSleep, HTTPClient: &http.Client{Transport: keyHeader{http.DefaultTransport}}},
			}
			run, err := runtime.Start(plan, opts)
			if err != nil {
				t.Fatal(err)
			}
			_, runErr := run.Execute(context.Background())
			mu.Lock()
			defer mu.Unlock()
			for i, u := range unknown {
				if i == 3 {
					t.Errorf("... and %d more", len(unknown)-3)
					break
				}
				t.Errorf("the run sent a request the dry run did not make:\n%s", clip(u))
			}
			if runErr != nil && len(unknown) == 0 {
				t.Fatalf("the run failed: %v", runErr)
			}
			if len(sent) == 0 || len(sent) > len(answered) {
				t.Errorf("the run sent %d requests, the dry run made %d", len(sent), len(answered))
			}
			seen := map[string]bool{}
			for _, s := range sent {
				seen[s] = true
			}
			for _, p := range rep.Prompts {
				if !seen[requestText(p.Messages)] {
					t.Errorf("the dry run's prompt %s was never sent by the run:\n%s", p.Key, clip(requestText(p.Messages)))
				}
			}
			t.Logf("%s: the run sent %d requests, all made by the dry run (%d calls, %d first-round prompts shown)", name, len(sent), len(answered), len(rep.Prompts))
		})
	}
}

// promptsOf is every call a dry run answered as the prompt it sent: the
// last user message as User.
func promptsOf(answered []calls.Answered) []dryrun.Prompt {
	ps := make([]dryrun.Prompt, len(answered))
	for i, a := range answered {
		ps[i] = dryrun.Prompt{Key: a.Key, Node: a.Node, Agent: a.Agent, Target: a.Target, Model: a.Model, Messages: a.Messages}
		for _, m := range a.Messages {
			if m.Role == "user" {
				ps[i].User = m.Content
			}
		}
	}
	return ps
}

// requestText is a request's messages as one text: roles and contents.
func requestText(ms []kit.ChatMessage) string {
	plain := make([]struct{ Role, Content string }, len(ms))
	for i, m := range ms {
		plain[i].Role, plain[i].Content = m.Role, m.Content
	}
	return requestTextOf(plain)
}

func requestTextOf(ms []struct{ Role, Content string }) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "[%s]\n%s\n", m.Role, m.Content)
	}
	return b.String()
}

func clip(s string) string {
	if len(s) > 600 {
		return s[:600] + "..."
	}
	return s
}

// keyHeader sends each request's call key (from its context) in a header,
// so the test's server knows which call it answers.
type keyHeader struct{ next http.RoundTripper }

func (k keyHeader) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("X-Call-Key", calls.KeyFrom(req.Context()))
	return k.next.RoundTrip(req)
}

// TestDryRunHiringPanelAtLength: the hiring panel at 20,000 turns per goal
// makes 60,000 calls at worst, one per turn of each of its three goals'
// conversations; a dry run whose simulated-call cap stops it inside the
// first conversation says so, extrapolating the conversation and the
// foreach over the goals (it said 20,000, the calls it had simulated).
func TestDryRunHiringPanelAtLength(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("hiring-panel", "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Replace(string(text), "max_turns: 60", "max_turns: 20000", 1)
	if long == string(text) {
		t.Fatal("the hiring panel no longer says max_turns: 60; update this test")
	}
	path := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(path, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, diags := spec.Load(path, nodes.Registry())
	if diags.HasErrors() {
		t.Fatal(diags.Format())
	}
	// The cap is small: every simulated turn renders the whole thread
	// before it, so the cost grows with the square of the cap (300 took
	// most of a minute under -race), and any cap inside the first
	// conversation checks the extrapolation.
	const budget = 40
	rep, err := dryrun.Run(plan, dryrun.Options{Given: launch.Given{Inputs: []string{"resume=a resume"}}, CallBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Calls != 3*20000 || rep.Extrapolated != 3*20000-budget {
		t.Errorf("worst case %d calls (%d extrapolated), want 60000 (%d extrapolated)", rep.Calls, rep.Extrapolated, 3*20000-budget)
	}
}
