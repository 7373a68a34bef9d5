package ask_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/docs"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
)

// reasoner answers like a model that shows its work: a paragraph of
// reasoning (different in every reply), then the answer boxed.
func reasoner(r llmtest.Request) llmtest.Reply {
	var b strings.Builder
	fmt.Fprintf(&b, "Reply %d. ", r.N)
	for i := 0; i < 6; i++ {
		fmt.Fprintf(&b, "Step %d: I check the previous step against the question and the other answers I was shown. ", i+1)
	}
	return llmtest.Reply{Content: b.String() + "\\boxed{5}"}
}

// duRun runs testdata/du.yaml (with edits) against a reasoner behind a
// simulated prompt cache.
func duRun(t testing.TB, edits ...string) (*result.Result, []llmtest.Request) {
	t.Helper()
	data, err := os.ReadFile("testdata/du.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(text, edits[i]) {
			t.Fatalf("testdata/du.yaml lacks %q", edits[i])
		}
		text = strings.ReplaceAll(text, edits[i], edits[i+1])
	}
	plan := runtest.LoadPlan(t, runtest.WriteSpec(t, t.TempDir(), text))
	cache := &llmtest.PromptCache{}
	srv := llmtest.New(t, cache.Wrap(reasoner))
	run, err := runtime.Start(plan, runtime.Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=What is 2+3?"}}},
		Settings: runtime.Settings{RunsDir: t.TempDir(), Getenv: runtest.Env(srv.URL, "sk-du")},
		Seams:    runtime.Seams{Sleep: runtest.NoSleep},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Execute(context.Background())
	if err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("run: %v (status %s)", err, res.Status)
	}
	return res, srv.Requests()
}

// TestManualThreadExample runs the worked example of the manual's "Chat turns"
// (kept verbatim in testdata/du.yaml): each agent's round-3 request is its
// round-2 request, its round-2 answer and the new prompt, and a provider's
// prompt cache could serve a large share of the input.
func TestManualThreadExample(t *testing.T) {
	readme, err := docs.Section("node-kinds.md", "Chat turns (thread, history, examples)")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := os.ReadFile("testdata/du.yaml")
	if err != nil {
		t.Fatal(err)
	}
	example := string(spec[bytes.Index(spec, []byte("templates:\n")):])
	if !strings.Contains(string(readme), "```yaml\n"+example+"```") {
		t.Errorf("docs/node-kinds.md's worked example of a thread differs from testdata/du.yaml:\n%s", example)
	}

	res, reqs := duRun(t)
	if len(reqs) != 9 {
		t.Fatalf("%d requests, want 9", len(reqs))
	}
	round := regexp.MustCompile(`^(Solve|These are)`)
	byAgent := map[string][]llmtest.Request{}
	for _, r := range reqs {
		if !round.MatchString(r.LastUser()) {
			t.Fatalf("unexpected prompt %q", r.LastUser())
		}
	}
	for _, r := range reqs {
		n := len(r.Messages)
		byAgent[fmt.Sprint(n)] = append(byAgent[fmt.Sprint(n)], r)
	}
	if len(byAgent["1"]) != 3 || len(byAgent["3"]) != 3 || len(byAgent["5"]) != 3 {
		t.Fatalf("requests by length: %d, %d, %d of 1, 3 and 5 messages; want 3 each", len(byAgent["1"]), len(byAgent["3"]), len(byAgent["5"]))
	}
	for _, r3 := range byAgent["5"] {
		found := false
		for _, r2 := range byAgent["3"] {
			prev := r2.Fields["messages"]
			found = found || bytes.HasPrefix(r3.Fields["messages"], prev[:len(prev)-1])
		}
		if !found {
			t.Errorf("a round-3 request does not start with any round-2 request:\n%s", r3.Fields["messages"])
		}
	}
	u := res.Usage.Total
	plain, _ := duRun(t, "    thread: debate          # each agent's earlier rounds are sent as chat turns\n", "")
	pu := plain.Usage.Total
	if u.PrefixShare <= pu.PrefixShare {
		t.Errorf("prefix share %.3f with threads, %.3f without", u.PrefixShare, pu.PrefixShare)
	}
	t.Logf("du-society-of-minds (3 agents, 3 rounds): threads: prefix share %.3f, cached %.3f of %d prompt tokens, cost per call %.3g; plain prompts: prefix share %.3f, cached %.3f of %d prompt tokens, cost per call %.3g",
		u.PrefixShare, float64(u.CachedTokens)/float64(u.PromptTokens), u.PromptTokens, u.Cost/float64(u.Calls),
		pu.PrefixShare, float64(pu.CachedTokens)/float64(pu.PromptTokens), pu.PromptTokens, pu.Cost/float64(pu.Calls))
}

// BenchmarkThreadVsPlain runs the worked example over 5 rounds with
// threads and with plain prompts (the baseline), in the same iteration,
// and reports the ratios: engine time per run, cost per call, and the
// share of input a prompt cache can serve.
func BenchmarkThreadVsPlain(b *testing.B) {
	var threadTime, plainTime time.Duration
	var tu, pu result.Usage
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res, _ := duRun(b, "max: 3", "max: 5")
		threadTime += time.Since(start)
		start = time.Now()
		plain, _ := duRun(b, "max: 3", "max: 5", "    thread: debate          # each agent's earlier rounds are sent as chat turns\n", "")
		plainTime += time.Since(start)
		tu, pu = res.Usage.Total, plain.Usage.Total
	}
	b.ReportMetric(float64(threadTime)/float64(plainTime), "time-thread/plain")
	b.ReportMetric((tu.Cost/float64(tu.Calls))/(pu.Cost/float64(pu.Calls)), "cost/call-thread/plain")
	b.ReportMetric(float64(tu.PromptTokens)/float64(pu.PromptTokens), "prompt-tokens-thread/plain")
	b.ReportMetric(tu.PrefixShare, "prefix-share-thread")
	b.ReportMetric(pu.PrefixShare, "prefix-share-plain")
	b.ReportMetric(float64(tu.CachedTokens)/float64(tu.PromptTokens), "cached-share-thread")
}
