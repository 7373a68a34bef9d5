package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/durable"
	"github.com/debate-runner/runner/runtime/llm"
)

// temporalCLI finds the Temporal CLI (for its development server): $RUNNER_TEMPORAL_CLI
// or temporal on PATH. .ci/run installs it and sets RUNNER_REQUIRE_TEMPORAL,
// so there a missing CLI fails the test instead of skipping it.
func temporalCLI(t testing.TB) string {
	t.Helper()
	path := os.Getenv("RUNNER_TEMPORAL_CLI")
	if path == "" {
		path, _ = exec.LookPath("temporal")
	}
	if path == "" {
		if os.Getenv("RUNNER_REQUIRE_TEMPORAL") != "" {
			t.Fatal("the Temporal CLI is required (RUNNER_REQUIRE_TEMPORAL) but neither RUNNER_TEMPORAL_CLI nor temporal on PATH gives it")
		}
		t.Skip("no Temporal CLI (set RUNNER_TEMPORAL_CLI or put temporal on PATH)")
	}
	return path
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// devServer starts a Temporal development server (in memory, no UI) for
// the test, with args added to its command line, and returns its frontend
// address.
//
// Its ports are picked free and then handed to the server, so another
// process may take one in between (CI once saw the HTTP port taken by a
// parallel test package). A server that says a port is in use, or ends
// before it answers, is started again on new ports, up to four times.
func devServer(t testing.TB, args ...string) string {
	t.Helper()
	cli := temporalCLI(t)
	var last string
	for attempt := 0; attempt < 4; attempt++ {
		addr, out, ok := startDevServer(t, cli, args)
		if ok {
			return addr
		}
		last = out
		if !strings.Contains(out, "address already in use") {
			break
		}
		t.Logf("the Temporal dev server found a port taken; starting it again on new ports")
	}
	t.Fatalf("the Temporal dev server did not come up:\n%s", last)
	return ""
}

// startDevServer makes one try at starting the dev server. It gives the
// address and true once the server answers a health check; else what the
// server printed and false, the server stopped.
func startDevServer(t testing.TB, cli string, args []string) (string, string, bool) {
	t.Helper()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(cli, append([]string{"server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", fmt.Sprint(port),
		"--http-port", fmt.Sprint(freePort(t)), "--metrics-port", fmt.Sprint(freePort(t)), "--log-level", "error"}, args...)...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(ended)
	}()
	stop := func() {
		_ = cmd.Process.Kill()
		<-ended
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		c, err := durable.Dial(ctx, durable.Connect{Address: addr})
		if err == nil {
			_, err = c.CheckHealth(ctx, nil)
			c.Close()
			if err == nil {
				t.Cleanup(stop)
				return addr, "", true
			}
		}
		select {
		case <-ended:
			return addr, fmt.Sprintf("it ended before answering at %s: %v\n%s", addr, err, out.String()), false
		default:
		}
		if strings.Contains(out.String(), "address already in use") || ctx.Err() != nil {
			stop()
			return addr, fmt.Sprintf("no answer at %s: %v\n%s", addr, err, out.String()), false
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startWorker starts `runner worker` with the scripted server's key; it is
// killed when the test ends.
func startWorker(t testing.TB, bin, addr, queue string, srv *llmtest.Server) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(bin, "worker", "--temporal", addr, "--task-queue", queue)
	// Each worker has a cache of its own, never the user's.
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY="+e2eKey, "RUNNER_CACHE_DIR="+t.TempDir())
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, out
}

// activityWorkers lists the identity of the worker that started each call
// of the run in dir, from its workflow's history.
func activityWorkers(t *testing.T, addr, dir string) []string {
	t.Helper()
	var ids []string
	var task string
	for _, ev := range runHistory(t, addr, dir).Events {
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			ids = append(ids, a.Identity)
		}
		// A call made as a local activity is made by the worker whose
		// workflow task records it.
		if a := ev.GetWorkflowTaskCompletedEventAttributes(); a != nil {
			task = a.Identity
		}
		if a := ev.GetMarkerRecordedEventAttributes(); a != nil && a.MarkerName == "LocalActivity" {
			ids = append(ids, task)
		}
	}
	return ids
}

// runHistory is the whole history of the workflow of the run in dir, as
// the dev server at addr has it.
func runHistory(t *testing.T, addr, dir string) *historypb.History {
	t.Helper()
	rec, ok, err := durable.ReadRecord(dir)
	if err != nil || !ok {
		t.Fatalf("%s has no %s: %v", dir, durable.RecordFile, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := durable.Dial(ctx, durable.Connect{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var h historypb.History
	it := c.GetWorkflowHistory(ctx, rec.WorkflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	return &h
}

// TestTemporalRunSurvivesAKilledWorker runs the debate spec on a real
// Temporal development server, SIGKILLs the worker that runs it in the
// middle of the run, a second worker having started, and checks that the
// run directory the submitting client wrote holds the outputs and messages
// of a local run, and that no call the client had recorded (the history
// had) was sent again.
func TestTemporalRunSurvivesAKilledWorker(t *testing.T) {
	bin := runnerBinary(t)
	addr := devServer(t)
	spec, err := filepath.Abs(debateSource)
	if err != nil {
		t.Fatal(err)
	}
	const calls = 33

	ref := llmtest.New(t, e2eAnswers(0))
	code, _, stderr := invoke(t, e2eEnv(ref), "run", spec, "-i", "question=q", "--runs-dir", t.TempDir(), "-q")
	if code != exitcode.OK {
		t.Fatalf("reference run: exit %d\n%s", code, stderr)
	}
	want := e2eOutcome(t, runDirFrom(t, stderr))

	// Slow enough that the run's workflow task records replies (every
	// 1.6 s with a 2 s heartbeat) well before its last call.
	srv := llmtest.New(t, e2eAnswers(400*time.Millisecond))
	const queue = "runner-test"
	w1, out1 := startWorker(t, bin, addr, queue, srv)
	runs := t.TempDir()
	client, out, exited := startRunner(t, bin, srv, "run", spec, "-i", "question=q", "--runs-dir", runs, "-q",
		"--temporal", addr, "--task-queue", queue, "--temporal-heartbeat", "2s")
	defer func() { _ = client.Process.Kill() }()
	dir := waitForResponses(t, runs, 10, exited, out)
	completed := e2eResponded(t, dir)
	// The run's calls are local activities of the worker that runs its
	// workflow: worker 1, the only one until now.
	_, out2 := startWorker(t, bin, addr, queue, srv)
	if err := w1.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the run failed: %v\n%s\nworker 1:\n%s\nworker 2:\n%s", err, out, out1, out2)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the run did not finish within 2 minutes\n%s\nworker 2:\n%s", out, out2)
	}
	if got := e2eOutcome(t, dir); got != want {
		t.Errorf("outputs and messages differ from the local run's:\n%s\nwant:\n%s", got, want)
	}
	asked := map[string]int{}
	for _, r := range srv.Requests() {
		asked[e2eJournalKey(e2eCallKey(r))]++
	}
	for key := range completed {
		if asked[key] != 1 {
			t.Errorf("call %s had completed before the kill but was sent %d times", key, asked[key])
		}
	}
	if len(asked) != calls {
		t.Errorf("%d distinct calls were sent, want %d", len(asked), calls)
	}
	// Both workers made calls: the killed one before it died.
	starters := activityWorkers(t, addr, dir)
	w1id := fmt.Sprintf("%d@", w1.Process.Pid)
	var byKilled, byOther int
	for _, id := range starters {
		if strings.HasPrefix(id, w1id) {
			byKilled++
		} else {
			byOther++
		}
	}
	if byKilled == 0 || byOther == 0 {
		t.Errorf("calls started by the killed worker: %d, by the other: %d; want both", byKilled, byOther)
	}
	t.Logf("%d requests for %d calls; %d had completed when worker 1 was killed", srv.Count(), calls, len(completed))
}

const temporalClarifySpec = `version: 1
name: clarifying
inputs: {question: {required: true}}
endpoints:
  local: {base_url: "${OPENAI_BASE_URL}", api_key_env: OPENAI_API_KEY, max_retries: 0}
models:
  default: {model: test-model, endpoint: local}
agents:
  a: {name: A}
templates:
  define:
    clar: "KEY=clar {{.Inputs.question}}"
    p: "KEY=final {{.Inputs.question}}{{range .History}} / {{.Content}}{{end}}"
nodes:
  clarify: {kind: clarify, agents: [a], template: clar, max_iterations: 1}
  final: {kind: ask, agents: [a], template: p, record: final}
flow: [clarify, final]
outputs:
  final: latest("final")[0].content
`

// TestTemporalRunWaitsForAnswersAndRetries: a run on Temporal whose
// clarifying question has no answer waits (exit 5) until `runner resume
// --answers` signals one; a call that fails after its retries fails the
// client's run (exit 3) while the workflow waits, and the next resume has
// it made again. The run ends as a local run given the same answers, and
// only the failed call was sent twice.
func TestTemporalRunWaitsForAnswersAndRetries(t *testing.T) {
	bin := runnerBinary(t)
	addr := devServer(t)
	var failing atomic.Bool
	failing.Store(true)
	handler := func(r llmtest.Request) llmtest.Reply {
		switch e2eCallKey(r) {
		case "clar":
			return llmtest.Reply{Content: `{"questions": ["What budget?"]}`}
		case "final":
			if failing.Load() {
				return llmtest.Reply{Status: 500, ErrorMessage: "the model is down"}
			}
		}
		return llmtest.Reply{Content: "final: " + r.LastUser()}
	}
	srv := llmtest.New(t, handler)
	const queue = "runner-test-wait"
	_, wout := startWorker(t, bin, addr, queue, srv)
	spec := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(spec, []byte(temporalClarifySpec), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	env := e2eEnv(srv)
	code, _, stderr := invoke(t, env, "run", spec, "-i", "question=Plan a party", "--runs-dir", runs,
		"--temporal", addr, "--task-queue", queue)
	if code != exitcode.Waiting {
		t.Fatalf("run: exit %d, want %d (waiting)\n%s\nworker:\n%s", code, exitcode.Waiting, stderr, wout)
	}
	dir := runDirFrom(t, stderr)
	qfile := filepath.Join(dir, "questions.yaml")
	data, err := os.ReadFile(qfile)
	if err != nil {
		t.Fatal(err)
	}
	answers := filepath.Join(t.TempDir(), "answers.yaml")
	if err := os.WriteFile(answers, bytes.Replace(data, []byte(`""`), []byte(`"forty-two euros"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}

	code, _, stderr = invoke(t, env, "resume", dir, "--answers", answers, "-q")
	if code != exitcode.Endpoint || !strings.Contains(stderr, "the model is down") {
		t.Fatalf("resume with answers while the model is down: exit %d, want %d\n%s", code, exitcode.Endpoint, stderr)
	}
	failing.Store(false)
	// As after a local run's failure, answers are given again.
	code, stdout, stderr := invoke(t, env, "resume", dir, "--answers", answers, "-q")
	if code != exitcode.OK {
		t.Fatalf("resume once the model is back: exit %d\n%s\nworker:\n%s", code, stderr, wout)
	}
	if !strings.Contains(stdout, "forty-two euros") {
		t.Errorf("the final answer does not see the clarification: %q", stdout)
	}
	asked := map[string]int{}
	for _, r := range srv.Requests() {
		asked[e2eCallKey(r)]++
	}
	if asked["clar"] != 1 || asked["final"] != 2 {
		t.Errorf("requests by call: %v; want clar once, final twice (it failed once)", asked)
	}

	ref := llmtest.New(t, handler)
	code, _, stderr = invoke(t, e2eEnv(ref), "run", spec, "-i", "question=Plan a party", "--runs-dir", t.TempDir(), "--answers", answers, "-q")
	if code != exitcode.OK {
		t.Fatalf("local run: exit %d\n%s", code, stderr)
	}
	if got, want := e2eOutcome(t, dir), e2eOutcome(t, runDirFrom(t, stderr)); got != want {
		t.Errorf("outputs and messages differ from the local run's:\n%s\nwant:\n%s", got, want)
	}
}

// TestTemporalDatasetSweep runs a dataset as a sweep workflow with a child
// run workflow per line, on two workers, and checks that the sweep the
// client wrote scores as the local sweep does, each run sent once.
func TestTemporalDatasetSweep(t *testing.T) {
	bin := runnerBinary(t)
	addr := devServer(t)
	ref := llmtest.New(t, solver)
	local, _ := mustRun(t, live(ref), "run", debateSpec, "--dataset", datasetFile, "--runs-dir", t.TempDir(), "-q", "--no-cache")

	srv := llmtest.New(t, solver)
	const queue = "runner-test-sweep"
	startWorker(t, bin, addr, queue, srv)
	startWorker(t, bin, addr, queue, srv)
	runs := t.TempDir()
	stdout, stderr := mustRun(t, live(srv), "run", debateSpec, "--dataset", datasetFile, "--runs-dir", runs, "-q", "--no-cache",
		"--temporal", addr, "--task-queue", queue, "--parallel", "3")
	const accuracy = "accuracy: 0.600 (95% CI 0.313–0.832, wilson, n=10)"
	if !strings.Contains(stdout, accuracy) || !strings.Contains(local, accuracy) {
		t.Errorf("accuracy on Temporal:\n%s\nlocally:\n%s", stdout, local)
	}
	if srv.Count() != ref.Count() || srv.Count() != 60 {
		t.Errorf("the workers sent %d requests, the local sweep %d; want 60", srv.Count(), ref.Count())
	}
	sweepDir := strings.TrimPrefix(strings.TrimSpace(stderr), "sweep: ")
	var dirs []string
	for _, d := range runDirs(t, sweepDir) {
		if _, err := os.Stat(filepath.Join(d, "journal.jsonl")); err == nil {
			dirs = append(dirs, d) // a run (the sweep also keeps what its resume needs)
		}
	}
	if len(dirs) != 10 {
		t.Fatalf("%s holds %d runs, want 10", sweepDir, len(dirs))
	}
	for _, d := range dirs {
		if rec, ok, err := durable.ReadRecord(d); err != nil || !ok || !strings.HasPrefix(rec.WorkflowID, rec.Sweep+"/") {
			t.Errorf("%s: temporal.json %+v, %v", d, rec, err)
		}
	}
}

// TestTemporalWorkersShareLimits: an endpoint's max_concurrency holds for
// all workers together: two workers on a spec that asks three agents at
// once with max_concurrency 1 never send two requests at once.
func TestTemporalWorkersShareLimits(t *testing.T) {
	bin := runnerBinary(t)
	addr := devServer(t)
	var inflight, most atomic.Int32
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
		return e2eAnswers(0)(r)
	})
	spec := e2eSpec(t, debateSource, `endpoints:
  local: {base_url: "${OPENAI_BASE_URL}", api_key_env: OPENAI_API_KEY, max_concurrency: 1}
models:
  default: {model: test-model, endpoint: local}
`)
	const queue = "runner-test-limits"
	startWorker(t, bin, addr, queue, srv)
	startWorker(t, bin, addr, queue, srv)
	mustRun(t, e2eEnv(srv), "run", spec, "-i", "question=q", "--runs-dir", t.TempDir(), "-q", "--set", "rounds=1",
		"--temporal", addr, "--task-queue", queue)
	if most.Load() != 1 || srv.Count() != 13 {
		t.Errorf("%d requests, at most %d at once; want 13, one at a time", srv.Count(), most.Load())
	}
}

// TestTemporalWorkerCache: a worker answers a call it has made before from
// its response cache, as a local run would, and a run submitted with
// --no-cache goes to the model again.
func TestTemporalWorkerCache(t *testing.T) {
	bin := runnerBinary(t)
	addr := devServer(t)
	srv := llmtest.New(t, solver)
	const queue = "runner-test-cache"
	startWorker(t, bin, addr, queue, srv)
	submit := func(extra ...string) string {
		args := append([]string{"run", debateSpec, "-i", "question=What is 2+2?", "--runs-dir", t.TempDir(), "-q",
			"--temporal", addr, "--task-queue", queue}, extra...)
		stdout, _ := mustRun(t, live(srv), args...)
		return stdout
	}
	first := submit()
	sent := srv.Count()
	if sent == 0 {
		t.Fatal("the first run sent no request")
	}
	if again := submit(); again != first || srv.Count() != sent {
		t.Errorf("the second run sent %d more requests (want 0, all cached) and printed:\n%s\nwant:\n%s", srv.Count()-sent, again, first)
	}
	if fresh := submit("--no-cache"); fresh != first || srv.Count() != 2*sent {
		t.Errorf("a --no-cache run sent %d requests, want %d; it printed:\n%s", srv.Count()-sent, sent, fresh)
	}
}

// TestTemporalResumeUsesTheSubmittedContext: a run on Temporal given
// --context whose first call fails before any tool ran is resumed after the
// folder changed. The workers answer the tools from the snapshot sent with
// the run; the resumed client must answer them alike (from the snapshot it
// stored in the run directory), so the run completes as a local run on the
// folder as it was.
func TestTemporalResumeUsesTheSubmittedContext(t *testing.T) {
	bin := runnerBinary(t)
	addr := devServer(t)
	var aliceDown, bobDown atomic.Bool
	tools := toolReplies(&bobDown)
	handler := func(r llmtest.Request) llmtest.Reply {
		if e2eCallKey(r) == "a/first" && aliceDown.Load() {
			return llmtest.Reply{Status: 400, ErrorMessage: "Alice is down"}
		}
		return tools(r)
	}
	specPath := writeSpecFile(t, "spec.yaml", toolSpec)
	ctxDir := contextFolder(t)
	args := []string{"run", specPath, "-i", "question=q", "--context", ctxDir, "-q", "--no-cache"}
	ref := llmtest.New(t, handler)
	code, _, stderr := invoke(t, e2eEnv(ref), append(args, "--runs-dir", t.TempDir())...)
	if code != exitcode.OK {
		t.Fatalf("local run: exit %d\n%s", code, stderr)
	}
	want := e2eOutcome(t, runDirFrom(t, stderr))

	srv := llmtest.New(t, handler)
	const queue = "runner-test-context"
	_, wout := startWorker(t, bin, addr, queue, srv)
	aliceDown.Store(true)
	env := e2eEnv(srv)
	code, _, stderr = invoke(t, env, append(args, "--runs-dir", t.TempDir(), "--temporal", addr, "--task-queue", queue)...)
	if code != exitcode.Endpoint {
		t.Fatalf("run while Alice is down: exit %d, want %d\n%s\nworker:\n%s", code, exitcode.Endpoint, stderr, wout)
	}
	dir := runDirFrom(t, stderr)
	data, err := os.ReadFile(filepath.Join(dir, durable.ContextFile))
	if err != nil {
		t.Fatalf("the run directory lacks the context snapshot: %v", err)
	}
	if !strings.Contains(string(data), "the notes say 42") || strings.Contains(string(data), e2eKey) {
		t.Errorf("%s does not hold the folder's notes, or holds the API key:\n%s", durable.ContextFile, data)
	}
	// The folder changes; the workers still read it as it was.
	if err := os.WriteFile(filepath.Join(ctxDir, "notes.md"), []byte("the notes now say 43"), 0o644); err != nil {
		t.Fatal(err)
	}
	aliceDown.Store(false)
	code, _, stderr = invoke(t, env, "resume", dir, "--context", ctxDir, "-q")
	if code != exitcode.Usage || !strings.Contains(stderr, "--context") {
		t.Errorf("resume --context of a Temporal run: exit %d, want %d naming --context\n%s", code, exitcode.Usage, stderr)
	}
	code, _, stderr = invoke(t, env, "resume", dir, "-q")
	if code != exitcode.OK {
		t.Fatalf("resume: exit %d\n%s\nworker:\n%s", code, stderr, wout)
	}
	if got := e2eOutcome(t, dir); got != want {
		t.Errorf("outputs and messages differ from the local run's:\n%s\nwant:\n%s", got, want)
	}
	// The client's tools (journaled as tool_call events) read what the
	// workers' read: the folder as it was.
	journal, err := os.ReadFile(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(journal), "the notes say 42") || strings.Contains(string(journal), "the notes now say 43") {
		t.Errorf("the resumed run's tools did not read the submitted folder:\n%s", journal)
	}
}

// TestTemporalRunView: `run --view --temporal` serves the view of the runs
// folder the client records the run in, shows the new run's page while the
// workers make it, and ends with the run, as `run --view` does locally.
func TestTemporalRunView(t *testing.T) {
	bin := runnerBinary(t)
	addr := devServer(t)
	srv := llmtest.New(t, e2eAnswers(60*time.Millisecond))
	const queue = "runner-test-view"
	_, wout := startWorker(t, bin, addr, queue, srv)
	runs := t.TempDir()
	opened := filepath.Join(t.TempDir(), "opened")
	browser := filepath.Join(t.TempDir(), "browser.sh")
	if err := os.WriteFile(browser, []byte("#!/bin/sh\nprintf '%s' \"$1\" > "+opened+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	errs := &syncBuffer{}
	envv := e2eEnv(srv)
	envv["BROWSER"] = browser
	e := &env{stdout: &stdout, stderr: errs, stdin: strings.NewReader(""), getenv: func(k string) string { return envv[k] }}
	exited := make(chan error, 1)
	go func() {
		if code := run([]string{"run", debateSource, "-i", "question=q", "--runs-dir", runs, "--view", "--view-addr", "127.0.0.1:0", "-q",
			"--temporal", addr, "--task-queue", queue}, e); code != exitcode.OK {
			exited <- fmt.Errorf("exit %d", code)
			return
		}
		exited <- nil
	}()
	base, page := waitForView(t, errs, exited)
	if !strings.HasPrefix(page, "/run/") {
		t.Fatalf("run --view --temporal printed:\n%s", errs.String())
	}
	id := strings.TrimPrefix(page, "/run/")
	code, body := httpGet(t, base+"/api/run?id="+id)
	if code != http.StatusOK || !strings.Contains(body, `"status":"running"`) {
		t.Errorf("the new run, while the workers make it: %d %.300s", code, body)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("run --view --temporal: %v\n%s\nworker:\n%s", err, errs.String(), wout)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("run --view --temporal did not end with its run")
	}
	if data, err := os.ReadFile(opened); err != nil || string(data) != base+"/#"+page {
		t.Errorf("$BROWSER was given %q (%v), want %s/#%s", data, err, base, page)
	}
	if _, err := os.Stat(filepath.Join(runs, id, durable.RecordFile)); err != nil {
		t.Errorf("the viewed run is not the Temporal run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(runs, id, "result.json")); err != nil {
		t.Errorf("the run did not finish: %v", err)
	}
}

// TestTemporalSweepRunResumesWithTheSubmittedContext: the runs of a sweep
// given --context share one snapshot in the sweep directory, and a run
// resumed on its own after the folder changed answers its tools from it.
func TestTemporalSweepRunResumesWithTheSubmittedContext(t *testing.T) {
	bin := runnerBinary(t)
	addr := devServer(t)
	var aliceDown, bobDown atomic.Bool
	tools := toolReplies(&bobDown)
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		if e2eCallKey(r) == "a/first" && aliceDown.Load() {
			return llmtest.Reply{Status: 400, ErrorMessage: "Alice is down"}
		}
		return tools(r)
	})
	const queue = "runner-test-sweep-context"
	_, wout := startWorker(t, bin, addr, queue, srv)
	specPath := writeSpecFile(t, "spec.yaml", toolSpec)
	ctxDir := contextFolder(t)
	runs := t.TempDir()
	aliceDown.Store(true)
	env := e2eEnv(srv)
	code, _, stderr := invoke(t, env, "run", specPath, "-i", "question=q", "--context", ctxDir, "--repeat", "2", "-q", "--no-cache",
		"--runs-dir", runs, "--temporal", addr, "--task-queue", queue)
	if code == exitcode.OK {
		t.Fatalf("a sweep whose runs all fail ended well:\n%s", stderr)
	}
	sweeps := runDirs(t, runs)
	if len(sweeps) != 1 {
		t.Fatalf("%s holds %v, want one sweep", runs, sweeps)
	}
	if _, err := os.Stat(filepath.Join(sweeps[0], durable.ContextFile)); err != nil {
		t.Fatalf("the sweep directory lacks the context snapshot: %v\n%s", err, stderr)
	}
	var dir string
	for _, d := range runDirs(t, sweeps[0]) {
		if _, ok, _ := durable.ReadRecord(d); ok {
			dir = d
			break
		}
	}
	if dir == "" {
		t.Fatalf("no run of the sweep in %s has %s", sweeps[0], durable.RecordFile)
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "notes.md"), []byte("the notes now say 43"), 0o644); err != nil {
		t.Fatal(err)
	}
	aliceDown.Store(false)
	code, _, stderr = invoke(t, env, "resume", dir, "-q")
	if code != exitcode.OK {
		t.Fatalf("resume of %s: exit %d\n%s\nworker:\n%s", dir, code, stderr, wout)
	}
	journal, err := os.ReadFile(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(journal), "the notes say 42") || strings.Contains(string(journal), "the notes now say 43") {
		t.Errorf("the resumed run's tools did not read the submitted folder:\n%s", journal)
	}
}

// TestTemporalWorkersShareRate: two workers making a dataset sweep through
// an endpoint with requests_per_minute send its requests no faster than
// the rate allows for both together: any n+1 requests span at least n
// times the schedule's spacing (llm.RateSpan / rpm), less the second the
// schedule keeps for requests that reach the endpoint later than their
// turn, with the gate admitting calls ahead and in batches.
func TestTemporalWorkersShareRate(t *testing.T) {
	bin := runnerBinary(t)
	addr := devServer(t)
	var mu sync.Mutex
	var arrivals []time.Time
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		return solver(r)
	})
	const rpm = 600
	spec := e2eSpec(t, debateSpec, fmt.Sprintf(`endpoints:
  local: {base_url: "${OPENAI_BASE_URL}", api_key_env: OPENAI_API_KEY, requests_per_minute: %d}
models:
  default: {model: test-model, endpoint: local}
`, rpm))
	dataset := filepath.Join(t.TempDir(), "dataset.jsonl")
	var lines []string
	for i := range 8 {
		lines = append(lines, fmt.Sprintf(`{"question":"What is the result of %d+2*3+4-5*6?","expected":%d}`, i+1, i+1+6+4-30))
	}
	if err := os.WriteFile(dataset, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const queue = "runner-test-rate"
	startWorker(t, bin, addr, queue, srv)
	startWorker(t, bin, addr, queue, srv)
	mustRun(t, e2eEnv(srv), "run", spec, "--dataset", dataset, "--runs-dir", t.TempDir(), "-q", "--no-cache",
		"--parallel", "8", "--temporal", addr, "--task-queue", queue)
	mu.Lock()
	defer mu.Unlock()
	if len(arrivals) != 8*2*3 {
		t.Fatalf("%d requests, want 48", len(arrivals))
	}
	slices.SortFunc(arrivals, func(a, b time.Time) int { return a.Compare(b) })
	spacing := llm.RateSpan / rpm
	for i := range arrivals {
		for j := i + 1; j < len(arrivals); j++ {
			if span, least := arrivals[j].Sub(arrivals[i]), time.Duration(j-i)*spacing-time.Second; span < least {
				t.Fatalf("requests %d to %d came within %v; the rate allows no less than %v", i+1, j+1, span, least)
			}
		}
	}
	t.Logf("48 requests in %v (at the rate, %v)", arrivals[len(arrivals)-1].Sub(arrivals[0]), 47*spacing)
}
