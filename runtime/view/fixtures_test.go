package view_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/mcptest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/sweep"
	"github.com/debate-runner/runner/spec"
)

func TestMain(m *testing.M) {
	mcptest.ServeIfDemo() // examples/mcp-tools starts this binary as its server
	os.Exit(runtest.IsolateCache(m))
}

// The runs the view is tested on are made by the real engine against the
// scripted server: a hiring panel (goals, whispers, private thoughts, a
// rejected reply, the time keeper), a judged debate (clarifying questions,
// a tool call, a retry, confidence over rounds, prices), a dataset sweep of
// the reasoning debate (accuracy per matrix value), a failed run and one
// that was killed (no result.json).

const hiringSpec = "../../examples/hiring-panel/spec.yaml"

var (
	speakerRE = regexp.MustCompile(`\(id: ([a-z]+)\) \(you\)`)
	idsRE     = regexp.MustCompile(`\(id: ([a-z]+)\)`)
	turnRE    = regexp.MustCompile(`\(turn (\d+) of at most`)
	optionsRE = regexp.MustCompile(`<Verdict>([A-Z_]+(?: \| [A-Z_]+)*)</Verdict>`)
	goalRE    = regexp.MustCompile(`## Current goal \(\d+ of \d+\): (\S+)`)
)

// panelist answers a chain-of-debate turn: Markdown content with a
// heading, a list and tag-like text; a whisper every third turn; private
// thoughts; a verdict from the second turn on; withdrawal from turn 7.
// The first reply of the run names a verdict that does not exist, so it
// is rejected and asked again.
type panelist struct {
	mu       sync.Mutex
	rejected bool
	delay    time.Duration
}

func (p *panelist) handle(r llmtest.Request) llmtest.Reply {
	prompt := r.LastUser()
	speaker := speakerRE.FindStringSubmatch(prompt)
	if speaker == nil {
		return llmtest.Reply{Content: "<Content>I have nothing to add.</Content>", Delay: p.delay}
	}
	me := speaker[1]
	turn := 0
	if m := turnRE.FindStringSubmatch(prompt); m != nil {
		turn, _ = strconv.Atoi(m[1])
	}
	goal := ""
	if m := goalRE.FindStringSubmatch(prompt); m != nil {
		goal = m[1]
	}
	var others []string
	for _, m := range idsRE.FindAllStringSubmatch(prompt, -1) {
		if m[1] != me {
			others = append(others, m[1])
		}
	}
	opts := []string{"ADEQUATE"}
	if m := optionsRE.FindStringSubmatch(prompt); m != nil {
		opts = strings.Split(m[1], " | ")
	}
	p.mu.Lock()
	first := !p.rejected
	p.rejected = true
	p.mu.Unlock()
	if first {
		return llmtest.Reply{Content: "<SpeakingTo>All</SpeakingTo><Content>Maybe.</Content><Verdict>MAYBE_LATER</Verdict><VerdictReasoning>Not sure yet.</VerdictReasoning>", Delay: p.delay}
	}
	to, whisper := "All", false
	if turn%3 == 0 && len(others) > 0 {
		to, whisper = others[turn%len(others)], true
	}
	content := fmt.Sprintf("## %s, turn %d\n\nOn **%s** I see three points:\n\n- the resume lists <Go> and <Kafka> work\n- ownership of an on-call rotation\n- `make test` in CI\n\nWhat do the others make of it?", me, turn, goal)
	if whisper {
		content = fmt.Sprintf("Between us, %s: I am not convinced by the %s claims. Keep it to yourself.", to, goal)
	}
	reply := fmt.Sprintf("<SpeakingTo>%s</SpeakingTo><Whisper>%v</Whisper><PrivateThoughts>PRIVATE %s on %s at turn %d</PrivateThoughts><Content>%s</Content>", to, whisper, me, goal, turn, content)
	if turn >= 2 {
		pick := opts[(len(me)+len(goal))%min(len(opts), 4)]
		reply += fmt.Sprintf("<Verdict>%s</Verdict><VerdictReasoning>%s reads the evidence for %s as %s.</VerdictReasoning><Withdrawn>%v</Withdrawn>", pick, me, goal, strings.ToLower(pick), turn >= 7)
	}
	return llmtest.Reply{Content: reply, Delay: p.delay, PromptTokens: 900 + 10*turn, CompletionTokens: 120 + turn}
}

// judgedSpec asks clarifying questions, then proposes and judges for up
// to three rounds (until the judge is 90% sure), with priced models and a
// tool.
const judgedSpec = `version: 1
name: judged-design
description: Two designers propose, a judge rates their proposals each round.
inputs:
  problem: {default: "Design a grading service for 500 students."}
models:
  default: {model: test-model, price: {prompt: 2.5, completion: 10}}
  judge: {model: judge-model, price: {prompt: 5, completion: 15}}
agents:
  ada: {name: Ada Stone, role: architect, tools: [search_history]}
  ben: {name: Ben Ortiz, role: performance}
  judge: {name: The Judge, role: judge, model: judge}
templates:
  define:
    t/clarify: "KEY=clarify/{{.Agent.ID}}\n{{.Inputs.problem}}"
    t/propose: "KEY=propose/{{.Round}}/{{.Agent.ID}}\n{{.Inputs.problem}}"
    t/judge: "KEY=judge/{{.Round}}\nRate the proposals."
nodes:
  clarify:
    kind: clarify
    agents: [ada, ben]
    template: t/clarify
  propose:
    kind: ask
    agents: [ada, ben]
    template: t/propose
    record: proposal
  evaluate:
    kind: ask
    agents: [judge]
    template: t/judge
    output:
      format: json
      schema: {type: object, required: [confidence], properties: {confidence: {type: integer}}}
flow:
  - clarify
  - loop: {as: round, max: 3, until: nodes.evaluate.output.confidence >= 90, do: [propose, evaluate]}
outputs:
  confidence: nodes.evaluate.output.confidence
  proposals: map(latest("proposal"), {.content})
`

// judged answers the judged debate by call key; the first proposal of ada
// is rate limited once (a retry) and asks for a tool.
func judged(delay time.Duration) llmtest.Handler {
	var mu sync.Mutex
	limited, tooled := false, false
	return func(r llmtest.Request) llmtest.Reply {
		key := runtest.CallKey(r)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.HasPrefix(key, "clarify/"):
			if strings.Contains(r.LastUser(), "answer") || len(r.Messages) > 2 {
				return llmtest.Reply{Content: `{"questions": []}`, Delay: delay}
			}
			return llmtest.Reply{Content: `{"questions": [{"question": "How many <submissions> per hour at peak?"}, {"question": "Which languages must run?"}]}`, Delay: delay}
		case key == "propose/1/ada" && !limited:
			limited = true
			return llmtest.Reply{Status: 429, RetryAfter: "0.2"}
		case key == "propose/1/ada" && !tooled && len(r.Tools) > 0:
			tooled = true
			return llmtest.Reply{ToolCalls: []kit.ToolCall{{Name: "search_history", Arguments: `{"query":"peak"}`}}, Delay: delay}
		case strings.HasPrefix(key, "propose/"):
			return llmtest.Reply{Content: fmt.Sprintf("### Proposal (%s)\n\nA queue in front of sandboxed graders.\n\n```yaml\nworkers: %d\n```\n\nRisks: <burst> load at deadlines.", key, 4+len(key)), Delay: delay, PromptTokens: 1500, CompletionTokens: 400}
		case strings.HasPrefix(key, "judge/"):
			round, _ := strconv.Atoi(strings.TrimPrefix(key, "judge/"))
			return llmtest.Reply{Content: fmt.Sprintf(`{"confidence": %d, "notes": "round %d"}`, []int{0, 55, 72, 91}[min(round, 3)], round), Delay: delay, PromptTokens: 2200, CompletionTokens: 60}
		}
		return llmtest.Reply{Content: "?", Delay: delay}
	}
}

// reasoning answers the reasoning debate: a and b compute the question,
// c is off by one on every second question.
func reasoning(r llmtest.Request) llmtest.Reply {
	q := regexp.MustCompile(`What is the result of ([0-9+*\- ]+)\?`).FindStringSubmatch(r.LastUser())
	if q == nil {
		return llmtest.Reply{Content: `\boxed{0}`}
	}
	v := arith(q[1])
	if strings.Contains(r.Messages[0].Content+r.LastUser(), "Agent C") && v%2 == 0 {
		v++
	}
	return llmtest.Reply{Content: fmt.Sprintf("Working it out step by step, the answer is \\boxed{%d}.", v)}
}

// arith evaluates + - * over integers.
func arith(s string) int {
	sum, term, sign := 0, 1, 1
	num := 0
	flush := func() { term *= num; num = 0 }
	for _, c := range strings.ReplaceAll(s, " ", "") + "+" {
		switch {
		case c >= '0' && c <= '9':
			num = num*10 + int(c-'0')
		case c == '*':
			flush()
		default:
			flush()
			sum += sign * term
			term = 1
			if c == '-' {
				sign = -1
			} else {
				sign = 1
			}
		}
	}
	return sum
}

// fixtures are the runs of a runs folder the view is tested on.
type fixtures struct {
	root                          string
	panel, judged, failed, killed string // run ids
	sweep, baseline               string // sweep ids
	panelRes, judgedRes           *result.Result
	panelPlan                     *spec.Plan
}

// options are a run's options against srv.
func options(root string, srv *llmtest.Server) runtime.Options {
	return runtime.Options{
		Settings: runtime.Settings{RunsDir: root, Getenv: runtest.Env(srv.URL, "sk-view-test")},
		// Retries wait a little, so that the timeline shows it.
		Seams: runtime.Seams{Sleep: func(ctx context.Context, d time.Duration) error {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(min(d, 150*time.Millisecond)):
				return nil
			}
		}},
	}
}

// execute runs a plan to its end.
func execute(t testing.TB, plan *spec.Plan, opts runtime.Options) (*runtime.Run, *result.Result) {
	t.Helper()
	r, err := runtime.Start(plan, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := r.Execute(context.Background())
	return r, res
}

// executing runs r to its end in the background: done gets its result.
// When the test ends the run is cancelled and waited for, so that it
// does not outlive the test; a timeout above 0 bounds it too.
func executing(t *testing.T, r *runtime.Run, timeout time.Duration) (done chan *result.Result) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), timeout)
	}
	done = make(chan *result.Result, 1)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		res, _ := r.Execute(ctx)
		done <- res
	}()
	t.Cleanup(func() { cancel(); <-ended })
	return done
}

// liveHiring starts the hiring panel in root on a resume, against a
// scripted panel whose replies each take delay, and runs it in the
// background (executing).
func liveHiring(t *testing.T, root string, delay time.Duration, resume string) (*runtime.Run, chan *result.Result) {
	t.Helper()
	p := &panelist{delay: delay}
	srv := llmtest.New(t, p.handle)
	plan := runtest.LoadPlan(t, hiringSpec)
	opts := options(root, srv)
	opts.Inputs = []string{"resume=" + resume}
	r, err := runtime.Start(plan, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r, executing(t, r, 0)
}

func makeFixtures(t testing.TB) *fixtures {
	t.Helper()
	f := &fixtures{root: t.TempDir()}

	p := &panelist{delay: 2 * time.Millisecond}
	srv := llmtest.New(t, p.handle)
	f.panelPlan = runtest.LoadPlan(t, hiringSpec)
	opts := options(f.root, srv)
	opts.Inputs = []string{"resume=Jane Doe: ten years of Go, Kafka and on-call."}
	seed := int64(3)
	opts.Seed = &seed
	r, res := execute(t, f.panelPlan, opts)
	if res.Status != result.StatusCompleted {
		t.Fatalf("hiring panel: %s %s", res.Status, res.Error)
	}
	f.panel, f.panelRes = filepath.Base(r.Dir), res

	jsrv := llmtest.New(t, judged(2*time.Millisecond))
	jplan := runtest.LoadPlan(t, runtest.WriteSpec(t, t.TempDir(), judgedSpec))
	jopts := options(f.root, jsrv)
	jopts.Answers = map[string]string{"ada.q1": "About 3,000 at the deadline.", "ada.q2": "", "ben.q1": "Python & Java; maybe <Rust>.", "ben.q2": "NA"}
	r, res = execute(t, jplan, jopts)
	if res.Status != result.StatusCompleted {
		t.Fatalf("judged debate: %s %s", res.Status, res.Error)
	}
	f.judged, f.judgedRes = filepath.Base(r.Dir), res

	bad := llmtest.New(t, func(llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Status: 400, ErrorMessage: "model not found"}
	})
	r, res = execute(t, jplan, options(f.root, bad))
	if res.Status != result.StatusFailed {
		t.Fatalf("the failing run has status %s", res.Status)
	}
	f.failed = filepath.Base(r.Dir)

	// A killed run: its journal up to some call of the second round, no
	// result, no report.
	r, _ = execute(t, jplan, jopts)
	for _, name := range []string{"result.json", "report.md", "report.html"} {
		if err := os.Remove(filepath.Join(r.Dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(r.Dir, "journal.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := strings.Index(string(data), `"key":"propose/round=2/ben"`)
	if cut < 0 {
		t.Fatalf("no second round in the journal:\n%s", data)
	}
	cut = strings.LastIndex(string(data[:cut]), "\n") + 1
	if err := os.WriteFile(path, data[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	f.killed = filepath.Base(r.Dir)

	rsrv := llmtest.New(t, reasoning)
	rplan := runtest.LoadPlan(t, "../../examples/reasoning-debate/spec.yaml")
	ropts := options(f.root, rsrv)
	ropts.Cache = runtest.NewMemCache() // rounds=2 reuses the first round of rounds=1
	axis, err := sweep.ParseAxis("rounds=1,2")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := sweep.Sweep(context.Background(), rplan, sweep.Options{Run: ropts, Dataset: "../../examples/reasoning-debate/dataset.jsonl", Matrix: []sweep.Axis{axis}, Parallel: 2})
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	f.sweep = filepath.Base(sum.Dir)

	// The single-agent baseline over the same dataset: a second sweep to
	// compare with the first.
	bplan := runtest.LoadPlan(t, "../../examples/reasoning-debate/baseline.yaml")
	bsum, err := sweep.Sweep(context.Background(), bplan, sweep.Options{Run: options(f.root, rsrv), Dataset: "../../examples/reasoning-debate/dataset.jsonl", Parallel: 2})
	if err != nil {
		t.Fatalf("baseline sweep: %v", err)
	}
	f.baseline = filepath.Base(bsum.Dir)
	return f
}
