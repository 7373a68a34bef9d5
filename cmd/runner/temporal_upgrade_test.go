package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/durable"
)

// runnerBuild builds the runner again as version v: another build, as an
// upgrade brings.
func runnerBuild(t *testing.T, v string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "runner")
	cmd := exec.Command("go", "build", "-ldflags", "-X main.version="+v, "-o", path, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building runner %s: %v\n%s", v, err, out)
	}
	return path
}

// workflowTask is a workflow task or an activity of a workflow's history
// and the worker (identity, build) that did it.
type workflowTask struct {
	what, identity, build string
}

func historyTasks(t *testing.T, addr, workflowID string) []workflowTask {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := durable.Dial(ctx, durable.Connect{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var tasks []workflowTask
	it := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if a := ev.GetWorkflowTaskCompletedEventAttributes(); a != nil {
			tasks = append(tasks, workflowTask{"workflow task", a.GetIdentity(), a.GetDeploymentVersion().GetBuildId()})
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			tasks = append(tasks, workflowTask{"call", a.GetIdentity(), ""})
		}
	}
	return tasks
}

// waitForOutput waits until a process's output contains s.
func waitForOutput(t testing.TB, out *syncBuffer, s string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(out.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q within a minute:\n%s", s, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTemporalUpgradeKeepsRunsOnTheirBuild upgrades the workers of a task
// queue while a run is in flight: a run of the old build waits for an
// answer; a worker of a new build starts and the old build's worker stops.
// A run the new build submits is made by the new worker. The old run,
// pinned to its build, is never handed to the new worker: once answered
// it waits, and a worker of its build started again finishes it, as a
// local run given the same answers ends.
func TestTemporalUpgradeKeepsRunsOnTheirBuild(t *testing.T) {
	oldBin := runnerBinary(t)
	const newVersion = "v9.9.9-upgrade-test"
	newBin := runnerBuild(t, newVersion)
	addr := devServer(t)
	handler := func(r llmtest.Request) llmtest.Reply {
		if e2eCallKey(r) == "clar" {
			return llmtest.Reply{Content: `{"questions": ["What budget?"]}`}
		}
		return llmtest.Reply{Content: "final: " + r.LastUser()}
	}
	srv := llmtest.New(t, handler)
	const queue = "runner-test-upgrade"
	oldWorker, oldOut := startWorker(t, oldBin, addr, queue, srv)
	waitForOutput(t, oldOut, "as build devel")
	spec := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(spec, []byte(temporalClarifySpec), 0o644); err != nil {
		t.Fatal(err)
	}

	// 1. A run of the old build, in flight: it waits for an answer.
	runs := t.TempDir()
	code, _, stderr := runBuild(t, oldBin, srv, "run", spec, "-i", "question=Plan a party", "--runs-dir", runs, "--temporal", addr, "--task-queue", queue)
	if code != exitcode.Waiting {
		t.Fatalf("old run: exit %d, want %d (waiting)\n%s\nold worker:\n%s", code, exitcode.Waiting, stderr, oldOut)
	}
	dir := runDirFrom(t, stderr)
	rec, ok, err := durable.ReadRecord(dir)
	if err != nil || !ok {
		t.Fatalf("%s has no %s: %v", dir, durable.RecordFile, err)
	}
	if rec.BuildID != "devel" {
		t.Errorf("the old run's record names build %q, want devel", rec.BuildID)
	}

	// 2. The upgrade: a worker of the new build, then the old one stops.
	newWorker, newOut := startWorker(t, newBin, addr, queue, srv)
	waitForOutput(t, newOut, "as build "+newVersion)
	if err := oldWorker.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = oldWorker.Wait()

	// 3. The new build's runs go to the new worker.
	var stdout string
	code, stdout, stderr = runBuild(t, newBin, srv, "run", spec, "-i", "question=Plan a picnic", "--runs-dir", t.TempDir(), "-q",
		"--temporal", addr, "--task-queue", queue, "--answers", writeAnswers(t, dir, "ten euros"))
	if code != exitcode.OK {
		t.Fatalf("new run: exit %d\n%s\nnew worker:\n%s", code, stderr, newOut)
	}
	if !strings.Contains(stdout, "ten euros") {
		t.Errorf("the new run's answer does not see its clarification: %q", stdout)
	}
	newRec, ok, err := durable.ReadRecord(runDirFrom(t, stderr))
	if err != nil || !ok {
		t.Fatalf("the new run has no %s: %v", durable.RecordFile, err)
	}
	if newRec.BuildID != newVersion {
		t.Errorf("the new run's record names build %q, want %s", newRec.BuildID, newVersion)
	}
	newID := fmt.Sprintf("%d@", newWorker.Process.Pid)
	for _, task := range historyTasks(t, addr, newRec.WorkflowID) {
		if !strings.HasPrefix(task.identity, newID) || (task.what == "workflow task" && task.build != newVersion) {
			t.Errorf("the new run's %s was done by %s (build %q); want the new worker %s (build %s)", task.what, task.identity, task.build, newID, newVersion)
		}
	}

	// 4. The old run, answered, stays on its build: no worker takes it.
	resume, rout, exited := startRunner(t, oldBin, srv, "resume", dir, "--answers", writeAnswers(t, dir, "forty-two euros"), "-q")
	defer func() { _ = resume.Process.Kill() }()
	select {
	case err := <-exited:
		t.Fatalf("the old run ended with no worker of its build: %v\n%s", err, rout)
	case <-time.After(3 * time.Second):
	}
	for _, task := range historyTasks(t, addr, rec.WorkflowID) {
		if strings.HasPrefix(task.identity, newID) || (task.what == "workflow task" && task.build != "devel") {
			t.Errorf("the old run's %s was done by %s (build %q), a worker of another build", task.what, task.identity, task.build)
		}
	}

	// 5. A worker of the old build again: the old run ends there.
	again, againOut := startWorker(t, oldBin, addr, queue, srv)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("resuming the old run: %v\n%s\nold worker:\n%s", err, rout, againOut)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the old run did not end within a minute of its build's worker starting\n%s\nold worker:\n%s", rout, againOut)
	}
	if !strings.Contains(rout.String(), "forty-two euros") {
		t.Errorf("the old run's answer does not see its clarification: %q", rout.String())
	}
	againID := fmt.Sprintf("%d@", again.Process.Pid)
	var byAgain int
	for _, task := range historyTasks(t, addr, rec.WorkflowID) {
		if task.what == "workflow task" && task.build != "devel" {
			t.Errorf("the old run's workflow task was done by %s of build %q", task.identity, task.build)
		}
		if strings.HasPrefix(task.identity, againID) {
			byAgain++
		}
	}
	if byAgain == 0 {
		t.Errorf("the old build's second worker did nothing for the old run")
	}

	ref := llmtest.New(t, handler)
	code, _, stderr = invoke(t, e2eEnv(ref), "run", spec, "-i", "question=Plan a party", "--runs-dir", t.TempDir(),
		"--answers", writeAnswers(t, dir, "forty-two euros"), "-q")
	if code != exitcode.OK {
		t.Fatalf("local run: exit %d\n%s", code, stderr)
	}
	if got, want := e2eOutcome(t, dir), e2eOutcome(t, runDirFrom(t, stderr)); got != want {
		t.Errorf("the old run's outputs and messages differ from the local run's:\n%s\nwant:\n%s", got, want)
	}
}

// TestTemporalRunWarnsWithoutWorkersOfItsBuild: a run submitted where no
// worker of its runner version has polled says it waits for one.
func TestTemporalRunWarnsWithoutWorkersOfItsBuild(t *testing.T) {
	bin := runnerBinary(t)
	addr := devServer(t)
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply { return llmtest.Reply{Content: "x"} })
	spec := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(spec, []byte(replaySpec), 0o644); err != nil {
		t.Fatal(err)
	}
	client := exec.Command(bin, "run", spec, "-i", "question=q", "--runs-dir", t.TempDir(), "-q",
		"--temporal", addr, "--task-queue", "runner-test-nobody")
	client.Env = append(os.Environ(), "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY="+e2eKey)
	out := &syncBuffer{}
	client.Stdout, client.Stderr = out, out
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- client.Wait() }()
	defer func() { _ = client.Process.Kill() }()
	const want = "no worker of runner devel has polled task queue runner-test-nobody yet: the run waits for one"
	deadline := time.After(time.Minute)
	for !strings.Contains(out.String(), want) {
		select {
		case err := <-exited:
			t.Fatalf("the run ended (%v) with no worker to make it:\n%s", err, out)
		case <-deadline:
			t.Fatalf("no warning within a minute:\n%s", out)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// writeAnswers answers the question the run in dir asked with answer.
func writeAnswers(t *testing.T, dir, answer string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "questions.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "answers.yaml")
	if err := os.WriteFile(path, bytes.Replace(data, []byte(`""`), []byte(fmt.Sprintf("%q", answer)), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runBuild runs the runner binary bin to its end.
func runBuild(t *testing.T, bin string, srv *llmtest.Server, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY="+e2eKey, "RUNNER_CACHE_DIR="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// gateHistoryFile is the recorded gate history runtime/durable's
// TestReplayRecordedGateHistory replays without a server, the newest of
// those it replays (gate-history.json is a gate of the token buckets, before
// the strict window and admitting ahead).
const gateHistoryFile = "../../runtime/durable/testdata/gate-history-ahead.json"

// gateSpec asks two agents at once of an endpoint that takes one call at
// a time, so its gate queues one while it admits the other.
const gateSpec = `version: 1
name: gated
inputs: {question: {required: true}}
endpoints:
  local: {base_url: "${OPENAI_BASE_URL}", api_key_env: OPENAI_API_KEY, max_concurrency: 1, requests_per_minute: 600}
models:
  default: {model: test-model, endpoint: local}
agents:
  a: {name: A}
  b: {name: B}
templates:
  define:
    p: "KEY=first {{.Inputs.question}}"
nodes:
  first: {kind: ask, agents: [a, b], template: p}
flow: [first]
outputs:
  n: len(messages)
`

// TestTemporalReplayGateHistory makes a run through an endpoint's gate on
// a real development server and replays the gate's history against this
// build's workflow code. Unlike runs, gates move to each new build
// (deploy.go), so a change to what a gate does must keep replaying old
// gates. RUNNER_UPDATE_HISTORY=1 also stores the history where
// runtime/durable replays it without a server.
func TestTemporalReplayGateHistory(t *testing.T) {
	bin := runnerBinary(t)
	addr := devServer(t)
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		time.Sleep(20 * time.Millisecond)
		return llmtest.Reply{Content: "seen: " + r.LastUser()}
	})
	const queue = "runner-test-gate"
	startWorker(t, bin, addr, queue, srv)
	spec := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(spec, []byte(gateSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := invoke(t, e2eEnv(srv), "run", spec, "-i", "question=q", "--runs-dir", t.TempDir(), "-q",
		"--temporal", addr, "--task-queue", queue, "--no-cache")
	if code != exitcode.OK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := durable.Dial(ctx, durable.Connect{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var gateID string
	for gateID == "" {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: "default", Query: fmt.Sprintf("WorkflowType = %q", durable.GateWorkflowName),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Executions) > 0 {
			gateID = resp.Executions[0].Execution.WorkflowId
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no gate workflow listed within a minute")
		case <-time.After(200 * time.Millisecond):
		}
	}
	var h historypb.History
	var updates int
	it := c.GetWorkflowHistory(ctx, gateID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetWorkflowExecutionUpdateCompletedEventAttributes() != nil {
			updates++
		}
		h.Events = append(h.Events, ev)
	}
	if updates != 2 {
		t.Fatalf("gate %s admitted %d calls, want 2", gateID, updates)
	}
	if os.Getenv("RUNNER_UPDATE_HISTORY") != "" {
		data, err := protojson.MarshalOptions{Multiline: true}.Marshal(&h)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(gateHistoryFile, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: %d events", gateHistoryFile, len(h.Events))
	}
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: durable.DataConverter()})
	if err != nil {
		t.Fatal(err)
	}
	wf := &durable.Workflows{Registry: nodes.Registry()}
	r.RegisterWorkflowWithOptions(wf.Gate, workflow.RegisterOptions{Name: durable.GateWorkflowName})
	if err := r.ReplayWorkflowHistory(nil, &h); err != nil {
		t.Fatalf("replaying the history of gate %s: %v", gateID, err)
	}
}
