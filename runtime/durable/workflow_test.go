package durable

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
)

func TestMain(m *testing.M) { os.Exit(runtest.IsolateCache(m)) }

// localRun runs plan locally against a fresh scripted server and returns
// its result and the prompts the server saw.
func localRun(t *testing.T, plan *spec.Plan, h llmtest.Handler, opts runtime.Options) (*result.Result, []string) {
	t.Helper()
	srv := llmtest.New(t, h)
	opts.RunsDir = t.TempDir()
	opts.Getenv = runtest.Env(srv.URL, "k")
	r, err := runtime.Start(plan, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background())
	if err != nil {
		t.Fatalf("local run: %v", err)
	}
	return res, prompts(srv)
}

func prompts(srv *llmtest.Server) []string {
	var out []string
	for _, r := range srv.Requests() {
		out = append(out, r.LastUser())
	}
	slices.Sort(out)
	return out
}

// runWorkflow runs plan as the run workflow in the SDK's test environment,
// its calls made by the call activity against a fresh scripted server.
func runWorkflow(t *testing.T, plan *spec.Plan, h llmtest.Handler, opts runtime.Options, during func(env *testsuite.TestWorkflowEnvironment)) (RunOutcome, *llmtest.Server) {
	t.Helper()
	srv := llmtest.New(t, h)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	Register(env, &Workflows{Registry: nodes.Registry()}, &Activities{Getenv: runtest.Env(srv.URL, "k")})
	b, err := NewBundle(plan, nodes.Registry(), opts.ContextDir)
	if err != nil {
		t.Fatal(err)
	}
	in, err := NewRunInput(plan, b, opts, "run-1", "")
	if err != nil {
		t.Fatal(err)
	}
	// The input travels as the SDK encodes it, as it would to a worker.
	if _, err := json.Marshal(in); err != nil {
		t.Fatal(err)
	}
	if during != nil {
		during(env)
	}
	env.ExecuteWorkflow(RunWorkflowName, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("the run workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("run workflow: %v", err)
	}
	var out RunOutcome
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	return out, srv
}

// TestRunWorkflowIsTheLocalRun: the flow walked as workflow code, each call
// an activity, gives the outputs and messages of a local run, sending the
// same requests, at temperature 0 and above (where the seed decides).
func TestRunWorkflowIsTheLocalRun(t *testing.T) {
	for _, temp := range []string{"0", "0.7"} {
		t.Run("temperature "+temp, func(t *testing.T) {
			plan := runtest.RoundsPlan(t, temp)
			seed := int64(42)
			opts := runtime.Options{
				Launch: launch.Launch{Given: launch.Given{Inputs: []string{"question=What is 3+4?"}, Sets: []string{"max_rounds=3"}, Seed: &seed}},
			}
			res, want := localRun(t, plan, runtest.AnswerSeven, opts)
			out, srv := runWorkflow(t, plan, runtest.AnswerSeven, opts, nil)
			local := Outcome(res, nil)
			if out.Status != result.StatusCompleted || out.Error != "" {
				t.Fatalf("workflow run ended %s: %s", out.Status, out.Error)
			}
			if out.OutputsDigest != local.OutputsDigest || out.MessagesDigest != local.MessagesDigest {
				t.Errorf("workflow outputs %s differ from the local run's %s (or their messages do)", out.Outputs, local.Outputs)
			}
			if got := prompts(srv); !slices.Equal(got, want) {
				t.Errorf("the workflow sent %d requests, the local run %d; or their prompts differ", len(got), len(want))
			}
			if out.Calls != len(want) || len(want) != 9 {
				t.Errorf("the workflow counted %d calls, the server saw %d; want 9", out.Calls, len(want))
			}
		})
	}
}

const clarifySpec = `version: 1
name: clarifying
inputs: {question: {required: true}}
models:
  default: {model: test-model}
agents:
  a: {name: A}
templates:
  define:
    clar: "KEY=clar {{.Inputs.question}}"
    p: "KEY=final {{.Inputs.question}}{{range .History}} / {{.Content}}{{end}}"
nodes:
  clarify: {kind: clarify, agents: [a], template: clar, max_iterations: 1}
  final: {kind: ask, agents: [a], template: p}
flow: [clarify, final]
outputs:
  n: len(messages)
  answer: nodes.clarify.output[0].answer
`

func clarifyReplies(r llmtest.Request) llmtest.Reply {
	if runtest.CallKey(r) == "clar" {
		return llmtest.Reply{Content: `{"questions": ["What budget?"]}`}
	}
	return llmtest.Reply{Content: "final: " + r.LastUser()}
}

// TestClarifyingQuestionsWaitForASignal: a question nobody has answered
// makes the run workflow wait (its status query lists it) until a signal
// brings the answer; the run then ends as a local run given the answer.
func TestClarifyingQuestionsWaitForASignal(t *testing.T) {
	plan := runtest.LoadPlan(t, runtest.WriteSpec(t, t.TempDir(), clarifySpec))
	opts := runtime.Options{Launch: launch.Launch{Given: launch.Given{Inputs: []string{"question=Plan a party"}}}}
	var asked []string
	out, srv := runWorkflow(t, plan, clarifyReplies, opts, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() {
			v, err := env.QueryWorkflow(QueryStatus)
			if err != nil {
				t.Error(err)
				return
			}
			var st RunStatus
			if err := v.Get(&st); err != nil {
				t.Error(err)
			}
			asked = st.Questions
			answers := map[string]string{}
			for _, id := range st.Questions {
				answers[id] = "forty-two euros"
			}
			env.SignalWorkflow(SignalAnswers, answers)
		}, time.Hour)
	})
	if len(asked) != 1 {
		t.Fatalf("the waiting run listed questions %v; want one", asked)
	}
	opts.Answers = map[string]string{asked[0]: "forty-two euros"}
	res, want := localRun(t, plan, clarifyReplies, opts)
	local := Outcome(res, nil)
	if out.Status != result.StatusCompleted || out.OutputsDigest != local.OutputsDigest || out.MessagesDigest != local.MessagesDigest {
		t.Errorf("workflow run: %s %s %s; local run: %s", out.Status, out.Error, out.Outputs, local.Outputs)
	}
	if !strings.Contains(string(out.Outputs), "forty-two euros") {
		t.Errorf("outputs %s lack the answer", out.Outputs)
	}
	if got := prompts(srv); !slices.Equal(got, want) {
		t.Errorf("prompts %q, the local run's %q", got, want)
	}
}

// TestSweepWorkflowRunsEachChild: the sweep workflow runs one child run
// workflow per run, at most Parallel at once, and counts how they ended;
// each child gives the outputs of the same run made locally.
func TestSweepWorkflowRunsEachChild(t *testing.T) {
	plan := runtest.RoundsPlan(t, "0")
	srv := llmtest.New(t, runtest.AnswerSeven)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	Register(env, &Workflows{Registry: nodes.Registry()}, &Activities{Getenv: runtest.Env(srv.URL, "k")})
	b, err := NewBundle(plan, nodes.Registry(), "")
	if err != nil {
		t.Fatal(err)
	}
	in := SweepInput{Bundle: b, Parallel: 2}
	questions := []string{"one?", "two?", "three?"}
	for i, q := range questions {
		ri, err := NewRunInput(plan, nil, runtime.Options{Launch: launch.Launch{Given: launch.Given{Inputs: []string{"question=" + q}}}}, ChildID("sweep", i+1), "")
		if err != nil {
			t.Fatal(err)
		}
		in.Runs = append(in.Runs, ri)
	}
	env.ExecuteWorkflow(SweepWorkflowName, in)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out SweepOutcome
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if out.Completed != 3 || out.Failed != 0 {
		t.Errorf("sweep outcome %+v, want 3 completed", out)
	}
	if srv.Count() != 3*6 {
		t.Errorf("%d requests, want 18", srv.Count())
	}
	for _, q := range questions {
		n := 0
		for _, r := range srv.Requests() {
			if strings.Contains(r.LastUser(), q) {
				n++
			}
		}
		if n != 6 {
			t.Errorf("question %q was asked in %d calls, want 6", q, n)
		}
	}
}

// TestRunCallsAreLocalActivities: a run's calls are local activities of
// the worker that runs it (runLocalCalls), none an activity the server
// dispatches.
func TestRunCallsAreLocalActivities(t *testing.T) {
	plan := runtest.RoundsPlan(t, "0")
	seed := int64(42)
	opts := runtime.Options{
		Launch: launch.Launch{Given: launch.Given{Inputs: []string{"question=What is 3+4?"}, Sets: []string{"max_rounds=3"}, Seed: &seed}},
	}
	var local, remote atomic.Int64
	out, _ := runWorkflow(t, plan, runtest.AnswerSeven, opts, func(env *testsuite.TestWorkflowEnvironment) {
		env.SetOnLocalActivityStartedListener(func(*activity.Info, context.Context, []any) { local.Add(1) })
		env.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) { remote.Add(1) })
	})
	if out.Status != result.StatusCompleted || out.Calls != 9 {
		t.Fatalf("workflow run ended %s with %d calls: %s", out.Status, out.Calls, out.Error)
	}
	if local.Load() != 9 || remote.Load() != 0 {
		t.Errorf("%d calls made as local activities, %d as activities; want 9 and 0", local.Load(), remote.Load())
	}
}

// TestTaskTimeout: a run's workflow task timeout is its calls' heartbeat,
// between a second and MaxTaskTimeout.
func TestTaskTimeout(t *testing.T) {
	for _, c := range []struct{ heartbeat, want time.Duration }{
		{0, MaxTaskTimeout}, {2 * time.Second, 2 * time.Second}, {100 * time.Millisecond, time.Second}, {DefaultHeartbeat, MaxTaskTimeout},
	} {
		if got := TaskTimeout(c.heartbeat); got != c.want {
			t.Errorf("TaskTimeout(%v) = %v, want %v", c.heartbeat, got, c.want)
		}
	}
}
