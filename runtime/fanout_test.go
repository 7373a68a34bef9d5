package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
)

// fanSpec is a tree-of-thought step: each branch is expanded, then scored
// by a prompt that quotes the branch's own thought and counts the history
// its agent sees; a judge after the foreach sees every branch in order.
const fanSpec = `version: 1
name: fan
inputs:
  question: {required: true}
vars:
  branches: [b1, b2, b3, b4, b5, b6]
agents:
  a: {name: A}
  j: {name: Judge}
templates:
  define:
    expand: "KEY={{.Item}}/expand\n{{.Inputs.question}}\nseen {{len .History}}"
    score: "KEY={{.Item}}/score\nthought: {{.Nodes.expand.Output}}\nseen {{len .History}}"
    judge: "KEY=judge\n{{range .History}}{{.Record}}: {{.Content}}\n{{end}}"
nodes:
  expand: {kind: ask, agents: [a], template: expand, record: thought}
  score: {kind: ask, agents: [a], template: score, record: score}
  judge: {kind: ask, agents: [j], template: judge, record: verdict}
flow:
  - foreach: {in: vars.branches, as: branch, CONCURRENCY do: [expand, score]}
  - judge
outputs:
  thoughts: map(filter(messages, {.record == "thought"}), {.content})
  last_score: nodes.score?.output ?? ""
`

// fanPlan is fanSpec with the foreach's concurrency (0: not given) and
// extra top-level YAML.
func fanPlan(t *testing.T, concurrency int, extra string) *spec.Plan {
	t.Helper()
	c := ""
	if concurrency > 0 {
		c = fmt.Sprintf("concurrency: %d, ", concurrency)
	}
	return loadPlan(t, writeSpec(t, t.TempDir(), strings.Replace(fanSpec, "CONCURRENCY ", c, 1)+extra))
}

// inFlight is a server handler that answers every call with its key after
// a delay and counts the calls it holds at once.
type inFlight struct {
	now, max atomic.Int64
	delay    time.Duration
	// fail, when set, decides that a call's key fails (503).
	fail func(key string) bool
	// slow, when set, adds a delay by call key.
	slow func(key string) time.Duration
}

func (f *inFlight) handle(r llmtest.Request) llmtest.Reply {
	n := f.now.Add(1)
	defer f.now.Add(-1)
	for {
		m := f.max.Load()
		if n <= m || f.max.CompareAndSwap(m, n) {
			break
		}
	}
	key := callKey(r)
	time.Sleep(f.delay)
	if f.slow != nil {
		time.Sleep(f.slow(key))
	}
	if f.fail != nil && f.fail(key) {
		return llmtest.Reply{Status: 503, ErrorMessage: "down"}
	}
	return llmtest.Reply{Content: "answer to " + key + " (" + r.LastUser()[strings.Index(r.LastUser(), "\n")+1:] + ")"}
}

func fanOpts(url string) Options {
	return Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=Q"}}},
		Settings: Settings{Getenv: envFor(url)},
		Seams:    Seams{Sleep: noSleep},
	}
}

// TestForeachConcurrency: a foreach with concurrency runs its iterations at
// once (the server holds more than one call at a time, never more than the
// concurrency), and its result does not depend on which iteration finishes
// first: messages in item order, each iteration seeing the run as it was
// when the foreach began plus its own nodes' results and messages, and the
// last item's results standing after it. A run with another concurrency
// whose later branches answer first has the same result.
func TestForeachConcurrency(t *testing.T) {
	seq := &inFlight{delay: 5 * time.Millisecond}
	seqSrv := llmtest.New(t, seq.handle)
	if _, _, err := execute(t, fanPlan(t, 0, ""), fanOpts(seqSrv.URL)); err != nil {
		t.Fatal(err)
	}
	if seq.max.Load() != 1 {
		t.Fatalf("a foreach without concurrency held %d calls at once", seq.max.Load())
	}
	// Later branches answer first.
	other := &inFlight{delay: time.Millisecond, slow: func(key string) time.Duration {
		if key == "judge" {
			return 0
		}
		return time.Duration(7-int(key[1]-'0')) * 8 * time.Millisecond
	}}
	otherSrv := llmtest.New(t, other.handle)
	otherRun, _, err := execute(t, fanPlan(t, 2, ""), fanOpts(otherSrv.URL))
	if err != nil {
		t.Fatal(err)
	}

	fan := &inFlight{delay: 30 * time.Millisecond}
	srv := llmtest.New(t, fan.handle)
	r, res, err := execute(t, fanPlan(t, 3, ""), fanOpts(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("concurrency 3: at most %d calls in flight", fan.max.Load())
	if m := fan.max.Load(); m < 2 || m > 3 {
		t.Errorf("the server held at most %d calls at once; want 2 or 3 (concurrency 3)", m)
	}
	thoughts, _ := json.Marshal(res.Outputs["thoughts"])
	for i := 1; i <= 6; i++ {
		// Each branch saw the history as it was before the foreach (0
		// messages) when expanding, and its own thought (1) when scoring.
		want := fmt.Sprintf("answer to b%d/expand (Q\\nseen 0)", i)
		if !strings.Contains(string(thoughts), want) {
			t.Errorf("thoughts %s lack %q", thoughts, want)
		}
	}
	if !strings.Contains(string(thoughts), `"answer to b1/expand (Q\nseen 0)","answer to b2/expand`) {
		t.Errorf("thoughts are not in item order: %s", thoughts)
	}
	for _, req := range srv.Requests() {
		key := callKey(req)
		if strings.HasSuffix(key, "/score") {
			b := strings.TrimSuffix(key, "/score")
			if want := "thought: answer to " + b + "/expand (Q\nseen 0)\nseen 1"; !strings.Contains(req.LastUser(), want) {
				t.Errorf("score of %s was asked %q; want its own thought and one message seen (%q)", b, req.LastUser(), want)
			}
		}
		if key == "judge" {
			var lines []string
			for _, l := range strings.Split(req.LastUser(), "\n") {
				if strings.HasPrefix(l, "thought: ") || strings.HasPrefix(l, "score: ") {
					lines = append(lines, l[:strings.Index(l, "(")])
				}
			}
			want := []string{}
			for i := 1; i <= 6; i++ {
				want = append(want, fmt.Sprintf("thought: answer to b%d/expand ", i), fmt.Sprintf("score: answer to b%d/score ", i))
			}
			if strings.Join(lines, "|") != strings.Join(want, "|") {
				t.Errorf("the judge saw\n%s\nwant every branch in item order\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
			}
		}
	}
	if got, want := outputsAndMessages(t, r.Dir), outputsAndMessages(t, otherRun.Dir); !strings.Contains(string(want), "b6/score") || string(got) != string(want) {
		t.Errorf("the result depends on the order iterations finish in:\n got %s\nwant %s", got, want)
	}
}

// TestForeachConcurrencyResume: an iteration that fails (its endpoint goes
// down) stops the foreach: the iterations running are cancelled, the run
// fails saying why, and a resume asks none of the calls answered before
// again, ending with the result of an uninterrupted run.
func TestForeachConcurrencyResume(t *testing.T) {
	clean := &inFlight{delay: 2 * time.Millisecond}
	cleanSrv := llmtest.New(t, clean.handle)
	cleanRun, _, err := execute(t, fanPlan(t, 3, ""), fanOpts(cleanSrv.URL))
	if err != nil {
		t.Fatal(err)
	}

	fan := &inFlight{delay: 20 * time.Millisecond, fail: func(key string) bool { return key == "b4/score" }}
	srv := llmtest.New(t, fan.handle)
	opts := fanOpts(srv.URL)
	opts.RunsDir = t.TempDir()
	r, res, err := execute(t, fanPlan(t, 3, ""), opts)
	if err == nil || res.Status != result.StatusFailed {
		t.Fatalf("first attempt: err = %v, status %v; want a failure", err, res.Status)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "iteration 4 (branch=4) failed") {
		t.Errorf("warnings do not say which iteration failed: %v", res.Warnings)
	}
	answered := map[string]bool{}
	for k := range respondedCalls(t, r.Dir) {
		answered[k] = true
	}
	if len(answered) == 0 || len(answered) >= 13 {
		t.Fatalf("%d calls answered before the failure; the test needs a partial fan-out", len(answered))
	}

	fan.fail = nil
	before := len(srv.Requests())
	resumed, err := Resume(r.Dir, nodes.Registry(), Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err = resumed.Execute(context.Background()); err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("resume: err = %v, status %v", err, res.Status)
	}
	again := srv.Requests()[before:]
	for _, req := range again {
		k := callKey(req)
		b, node, _ := strings.Cut(k, "/")
		if k == "judge" {
			b, node = "", "judge"
		}
		jk := node + "/-/j"
		if b != "" {
			jk = node + "/branch=" + strings.TrimPrefix(b, "b") + "/a"
		}
		if answered[jk] {
			t.Errorf("call %s (%s) was answered before the failure but asked again", k, jk)
		}
	}
	if len(again)+len(answered) != 13 {
		t.Errorf("resume asked %d calls after %d answered; want the 13 of the run in all", len(again), len(answered))
	}
	if got, want := outputsAndMessages(t, r.Dir), outputsAndMessages(t, cleanRun.Dir); string(got) != string(want) {
		t.Errorf("resumed result differs from an uninterrupted run:\n got %s\nwant %s", got, want)
	}
}

// TestForeachConcurrencyBudget: concurrency never takes a run past its
// max_calls: each call reserves its share of the budget before it is sent,
// so with three iterations at once and room for five calls, five are sent
// and the run stops at its budget (exit 6).
func TestForeachConcurrencyBudget(t *testing.T) {
	fan := &inFlight{delay: 20 * time.Millisecond}
	srv := llmtest.New(t, fan.handle)
	r, res, err := execute(t, fanPlan(t, 3, "budget: {max_calls: 5}\n"), fanOpts(srv.URL))
	if code := exitcode.Of(err); code != exitcode.Budget {
		t.Fatalf("err = %v (exit %d), want a budget stop (exit %d)", err, code, exitcode.Budget)
	}
	if n := len(srv.Requests()); n > 5 {
		t.Errorf("the server was sent %d calls; max_calls is 5", n)
	}
	if n := len(respondedCalls(t, r.Dir)); n != 5 {
		t.Errorf("%d calls answered, want 5 (the budget)", n)
	}
	_ = res
}

// TestForeachConcurrencyValidated: concurrency is a whole number from 1 to
// 64, and a wrong one is named with its position.
func TestForeachConcurrencyValidated(t *testing.T) {
	for _, bad := range []string{"0", "two", "1.5", "65", "[2]"} {
		path := writeSpec(t, t.TempDir(), strings.Replace(fanSpec, "CONCURRENCY ", "concurrency: "+bad+", ", 1))
		_, diags := spec.Load(path, nodes.Registry())
		msg := diags.Format()
		if !diags.HasErrors() || !strings.Contains(msg, ":20:59:") || !strings.Contains(msg, "concurrency") {
			t.Errorf("concurrency: %s: diagnostics %q; want an error at 20:59 naming concurrency", bad, msg)
		}
	}
}

// TestForeachConcurrencyKilled: a run killed while its iterations are in
// flight resumes without asking any call answered before the kill, and
// ends with the result of an uninterrupted run.
func TestForeachConcurrencyKilled(t *testing.T) {
	clean := &inFlight{delay: time.Millisecond}
	cleanRun, _, err := execute(t, fanPlan(t, 3, ""), fanOpts(llmtest.New(t, clean.handle).URL))
	if err != nil {
		t.Fatal(err)
	}

	ctx, kill := context.WithCancel(context.Background())
	defer kill()
	var answered atomic.Int64
	fan := &inFlight{delay: 20 * time.Millisecond}
	srv := llmtest.New(t, func(req llmtest.Request) llmtest.Reply {
		rep := fan.handle(req)
		if answered.Add(1) == 5 {
			kill() // the process dies with calls in flight
		}
		return rep
	})
	opts := fanOpts(srv.URL)
	opts.RunsDir = t.TempDir()
	r, err := Start(fanPlan(t, 3, ""), opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Execute(ctx); err == nil {
		t.Fatal("the killed run completed")
	}
	journaled := respondedCalls(t, r.Dir)
	if len(journaled) == 0 || len(journaled) >= 13 {
		t.Fatalf("%d calls journaled before the kill; the test needs a partial fan-out", len(journaled))
	}
	before := len(srv.Requests())
	resumed, err := Resume(r.Dir, nodes.Registry(), Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := resumed.Execute(context.Background())
	if err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("resume: err = %v, status %v", err, res.Status)
	}
	again := srv.Requests()[before:]
	asked := map[string]int{}
	for _, req := range again {
		asked[callKey(req)]++
	}
	for k := range journaled {
		node, rest, _ := strings.Cut(k, "/")
		key := "judge"
		if node != "judge" {
			key = "b" + strings.TrimPrefix(strings.Split(rest, "/")[0], "branch=") + "/" + node
		}
		if asked[key] > 0 {
			t.Errorf("call %s was journaled before the kill but asked again", k)
		}
	}
	if len(again)+len(journaled) != 13 {
		t.Errorf("resume asked %d calls after %d journaled; want the 13 of the run in all", len(again), len(journaled))
	}
	if got, want := outputsAndMessages(t, r.Dir), outputsAndMessages(t, cleanRun.Dir); string(got) != string(want) {
		t.Errorf("resumed result differs from an uninterrupted run:\n got %s\nwant %s", got, want)
	}
}

// TestForeachConcurrencyNested: a concurrent foreach inside an iteration of
// another, and a conversation after it in the same iteration: each outer
// iteration sees only its own messages (the conversation's turns count the
// iteration's two messages and its own turns, never the other item's), and
// everything is recorded in item order, inner items inside outer ones.
func TestForeachConcurrencyNested(t *testing.T) {
	const nested = `version: 1
name: nested
vars:
  outer: [x, y]
  inner: [p, q]
agents:
  a: {name: A}
  b: {name: B}
templates:
  define:
    say: "KEY={{.Loop.o}}/{{.Loop.i}}/say\nseen {{len .History}}"
    talk: "KEY={{.Loop.o}}/t{{.Turn}}/{{.Agent.ID}}\nseen {{len .History}}"
nodes:
  say: {kind: ask, agents: [a], template: say, record: said}
  talk: {kind: converse, agents: [a, b], message: {template: talk, format: text}, max_turns: 4}
flow:
  - foreach: {in: vars.outer, as: o, concurrency: 2, do: [{foreach: {in: vars.inner, as: i, concurrency: 2, do: [say]}}, talk]}
outputs:
  said: map(messages, {.content})
`
	fan := &inFlight{delay: 10 * time.Millisecond}
	srv := llmtest.New(t, fan.handle)
	_, res, err := execute(t, loadPlan(t, writeSpec(t, t.TempDir(), nested)), Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}})
	if err != nil {
		t.Fatal(err)
	}
	// Who speaks first is the conversation's choice: any agent.
	var want []string
	for _, o := range []string{"x", "y"} {
		want = append(want, `"answer to `+o+`/p/say \(seen 0\)"`, `"answer to `+o+`/q/say \(seen 0\)"`)
		for turn := 1; turn <= 4; turn++ {
			want = append(want, fmt.Sprintf(`"answer to %s/t%d/[ab] \(seen %d\)"`, o, turn, turn+1))
		}
	}
	got, _ := json.Marshal(res.Outputs["said"])
	if !regexp.MustCompile(`^\[` + strings.Join(want, ",") + `\]$`).Match(got) {
		t.Errorf("messages\n got %s\nwant %s", got, strings.Join(want, ","))
	}
	t.Logf("nested concurrency 2x2: at most %d calls in flight", fan.max.Load())
	if fan.max.Load() < 2 {
		t.Errorf("at most %d call in flight: the iterations did not overlap", fan.max.Load())
	}
}

// TestForeachConcurrencyEndpointLimit: the endpoint's max_concurrency holds
// across a foreach's concurrent iterations: six at once, two in flight.
func TestForeachConcurrencyEndpointLimit(t *testing.T) {
	fan := &inFlight{delay: 20 * time.Millisecond}
	srv := llmtest.New(t, fan.handle)
	plan := fanPlan(t, 6, "endpoints:\n  default: {base_url: "+srv.URL+", max_concurrency: 2}\n")
	if _, _, err := execute(t, plan, fanOpts(srv.URL)); err != nil {
		t.Fatal(err)
	}
	if m := fan.max.Load(); m != 2 {
		t.Errorf("the server held at most %d calls at once; the endpoint's max_concurrency is 2", m)
	}
}
