package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/durable"
)

// replayHistoryFile is the newest recorded run history runtime/durable's
// TestReplayRecordedRunHistory replays without a server (calls as local
// activities); the older ones stay as they were recorded.
const replayHistoryFile = "../../runtime/durable/testdata/run-history-local.json"

// replaySpec is small, so its history is, yet has agents asked at once
// (workflow coroutines) and a node that reads their answers.
const replaySpec = `version: 1
name: replayed
inputs: {question: {required: true}}
models:
  default: {model: test-model}
agents:
  a: {name: A}
  b: {name: B}
templates:
  define:
    p: "KEY=first {{.Inputs.question}}"
    q: "KEY=second {{.Inputs.question}}{{range .History}} / {{.Content}}{{end}}"
nodes:
  first: {kind: ask, agents: [a, b], template: p}
  second: {kind: ask, agents: [a], template: q}
flow: [first, second]
outputs:
  n: len(messages)
`

// TestTemporalReplayHistory makes a run on a real development server,
// fetches its workflow history and replays it against this build's
// workflow code: a change that makes the workflow issue other commands
// fails here. RUNNER_UPDATE_HISTORY=1 also stores the history where
// runtime/durable replays it without a server.
func TestTemporalReplayHistory(t *testing.T) {
	bin := runnerBinary(t)
	addr := devServer(t)
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: "seen: " + r.LastUser()}
	})
	const queue = "runner-test-replay"
	startWorker(t, bin, addr, queue, srv)
	spec := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(spec, []byte(replaySpec), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := invoke(t, e2eEnv(srv), "run", spec, "-i", "question=q", "--runs-dir", t.TempDir(), "-q",
		"--temporal", addr, "--task-queue", queue, "--no-cache")
	if code != exitcode.OK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	dir := runDirFrom(t, stderr)
	h := runHistory(t, addr, dir)
	if len(h.Events) == 0 || h.Events[len(h.Events)-1].GetWorkflowExecutionCompletedEventAttributes() == nil {
		t.Fatalf("the workflow of %s has not completed: %d events", dir, len(h.Events))
	}
	if os.Getenv("RUNNER_UPDATE_HISTORY") != "" {
		data, err := protojson.MarshalOptions{Multiline: true}.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(replayHistoryFile, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: %d events", replayHistoryFile, len(h.Events))
	}
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{DataConverter: durable.DataConverter()})
	if err != nil {
		t.Fatal(err)
	}
	wf := &durable.Workflows{Registry: nodes.Registry()}
	r.RegisterWorkflowWithOptions(wf.Run, workflow.RegisterOptions{Name: durable.RunWorkflowName})
	if err := r.ReplayWorkflowHistory(nil, h); err != nil {
		t.Fatalf("replaying the history of the workflow of %s: %v", dir, err)
	}
}

// TestTemporalCallLongerThanItsWorkflowTask: a run's calls are local
// activities inside its workflow task, whose timeout is the heartbeat (1 s
// here). Calls of 2.5 s outlast it: the worker reports the task while they
// go (every 0.8 s), the task never times out, and no call is made twice.
func TestTemporalCallLongerThanItsWorkflowTask(t *testing.T) {
	bin := runnerBinary(t)
	addr := devServer(t)
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: "seen: " + r.LastUser(), Delay: 2500 * time.Millisecond}
	})
	const queue = "runner-test-long-call"
	startWorker(t, bin, addr, queue, srv)
	spec := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(spec, []byte(replaySpec), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := invoke(t, e2eEnv(srv), "run", spec, "-i", "question=q", "--runs-dir", t.TempDir(), "-q",
		"--temporal", addr, "--task-queue", queue, "--no-cache", "--temporal-heartbeat", "1s")
	if code != exitcode.OK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	if srv.Count() != 3 {
		t.Errorf("the endpoint saw %d requests for 3 calls", srv.Count())
	}
	var completed, timedOut, markers int
	for _, ev := range runHistory(t, addr, runDirFrom(t, stderr)).Events {
		switch {
		case ev.GetWorkflowTaskCompletedEventAttributes() != nil:
			completed++
		case ev.GetWorkflowTaskTimedOutEventAttributes() != nil || ev.GetWorkflowTaskFailedEventAttributes() != nil:
			timedOut++
		case ev.GetMarkerRecordedEventAttributes().GetMarkerName() == "LocalActivity":
			markers++
		}
	}
	// Two rounds of 2.5 s: the task reported at least four times.
	if completed < 4 || timedOut != 0 || markers != 3 {
		t.Errorf("the run's history has %d workflow tasks completed, %d timed out or failed, %d calls; want at least 4, none, 3", completed, timedOut, markers)
	}
	t.Logf("%d workflow tasks completed for 3 calls in two rounds of 2.5 s", completed)
}
