package runtime

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/runtime/launch"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/result"
)

// debateCalls is how many model calls testdata/debate.yaml makes: round 1
// proposes (3), critiques each other (6), refines (3) and is judged (1);
// rounds 2 and 3 carry the refined answers over instead of proposing.
const debateCalls = 13 + 10 + 10

// jittered answers like keyed, after a random delay of up to max, so that
// calls of one layer finish in a different order every run.
func jittered(max time.Duration, reply func(string) string) llmtest.Handler {
	return func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: reply(callKey(r)), Delay: time.Duration(rand.Int64N(int64(max)))}
	}
}

func debateOpts(url string) Options {
	return Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=Which sort is best?"}}},
		Settings: Settings{Getenv: envFor(url)},
		Seams:    Seams{Sleep: noSleep},
	}
}

// TestDebateShape checks the debate spec does what the other tests assume:
// every call once, the carried-over proposals, and outputs.
func TestDebateShape(t *testing.T) {
	srv := llmtest.New(t, keyed(answerOf))
	r, res, err := execute(t, loadPlan(t, "testdata/debate.yaml"), debateOpts(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	keys := keysOf(srv.Requests())
	if len(keys) != debateCalls || srv.Count() != debateCalls {
		t.Errorf("%d distinct keys in %d requests, want %d", len(keys), srv.Count(), debateCalls)
	}
	for _, k := range []string{"a/r1/propose", "a>b/r1/critique", "c>a/r3/critique", "b/r2/refine", "judge/r3/evaluate"} {
		if keys[k] != 1 {
			t.Errorf("call %s made %d times, want 1", k, keys[k])
		}
	}
	if keys["a/r2/propose"] != 0 {
		t.Errorf("round 2 proposals must be carried over, not asked")
	}
	if res.Outputs["verdict"] != "answer to judge/r3/evaluate" {
		t.Errorf("verdict output = %v", res.Outputs["verdict"])
	}
	carried := 0
	for _, m := range res.Messages {
		if m.Carried {
			carried++
			if m.Record != "proposal" || m.Content != "answer to "+m.From+"/r"+strconv.Itoa(m.Round-1)+"/refine" {
				t.Errorf("carried message %+v is not the previous refinement", m)
			}
		}
	}
	if carried != 6 {
		t.Errorf("%d carried messages, want 6", carried)
	}
	// Prompts carry the history they claim to: the judge of round 2 sees
	// round 2's refinements.
	for _, req := range srv.Requests() {
		if callKey(req) == "judge/r2/evaluate" && !strings.Contains(req.LastUser(), "b: answer to b/r2/refine") {
			t.Errorf("judge prompt lacks the refinements:\n%s", req.LastUser())
		}
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "report.md")); err != nil {
		t.Error(err)
	}
}

// TestFailEveryThirdCall: with every third request failing with 429, the
// run finishes with the result of a run without failures.
func TestFailEveryThirdCall(t *testing.T) {
	plan := loadPlan(t, "testdata/debate.yaml")
	clean := llmtest.New(t, keyed(answerOf))
	cleanRun, _, err := execute(t, plan, debateOpts(clean.URL))
	if err != nil {
		t.Fatal(err)
	}
	flaky := llmtest.New(t, llmtest.FailEvery(3, llmtest.Reply{Status: 429, RetryAfter: "0.01"}, keyed(answerOf)))
	flakyRun, res, err := execute(t, plan, debateOpts(flaky.URL))
	if err != nil {
		t.Fatalf("flaky run failed: %v", err)
	}
	if res.Status != result.StatusCompleted {
		t.Fatalf("status %s", res.Status)
	}
	if got, want := outputsAndMessages(t, flakyRun.Dir), outputsAndMessages(t, cleanRun.Dir); string(got) != string(want) {
		t.Errorf("outputs/messages differ from the clean run:\n got %s\nwant %s", got, want)
	}
	if got, want := stableResult(t, flakyRun.Dir), stableResult(t, cleanRun.Dir); string(got) != string(want) {
		t.Errorf("result.json differs from the clean run beyond timings:\n got %s\nwant %s", got, want)
	}
	retries := len(eventsOf(readEvents(t, flakyRun.Dir), "retry"))
	// n requests of which every third failed: n = calls + failures and
	// failures = n/3, so failures = calls/2 (rounded down).
	if flaky.Count() != debateCalls+retries || retries != debateCalls/2 {
		t.Errorf("%d requests and %d retry events for %d calls; want %d retries", flaky.Count(), retries, debateCalls, debateCalls/2)
	}
}

// TestDeterministicResult: the same scripted replies arriving in a different
// order give a byte-identical result.json, timings and run id aside.
func TestDeterministicResult(t *testing.T) {
	plan := loadPlan(t, "testdata/debate.yaml")
	var results [][]byte
	var orders []string
	for i := 0; i < 3; i++ {
		srv := llmtest.New(t, jittered(20*time.Millisecond, answerOf))
		r, _, err := execute(t, plan, debateOpts(srv.URL))
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, stableResult(t, r.Dir))
		var order []string
		for _, ev := range eventsOf(readEvents(t, r.Dir), "model_response") {
			order = append(order, ev.Key)
		}
		orders = append(orders, strings.Join(order, ","))
	}
	for i := 1; i < len(results); i++ {
		if string(results[i]) != string(results[0]) {
			t.Errorf("run %d result differs from run 0:\n%s\n---\n%s", i, results[i], results[0])
		}
	}
	if orders[0] == orders[1] && orders[1] == orders[2] {
		t.Logf("replies arrived in the same order in all runs; the jitter did not shuffle them")
	}
}
