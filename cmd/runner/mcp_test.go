package main

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/mcptest"
	"github.com/debate-runner/runner/nodes/kit"
)

// The tests in this file run debates whose agents call tools of a real MCP
// server of ours (internal/mcptest): the test binary started again over
// stdio, or an HTTP server on 127.0.0.1.

// mcpSpec has Alice use the calc server's tools, then Bob answer; SERVER is
// the server's declaration.
const mcpSpec = `version: 1
name: mcp
inputs:
  question: {required: true}
mcp_servers:
  calc:
SERVER
agents:
  a: {name: Alice, tools: [calc.add, calc.lookup]}
  b: {name: Bob}
templates:
  define:
    first: "KEY=a/first\n{{.Inputs.question}}"
    second: "KEY=b/second\n{{.Inputs.question}}"
nodes:
  first: {kind: ask, agents: [a], template: first, record: first}
  second: {kind: ask, agents: [b], template: second, record: second}
flow: [first, second]
outputs:
  first: map(latest("first"), {.content})
  second: map(latest("second"), {.content})
`

// stdioServer declares the test binary as a stdio server counting its
// calls in countFile.
func stdioServer(t *testing.T, countFile string) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("    command: %q\n    env: {RUNNER_MCPTEST_STDIO: \"1\", MCPTEST_COUNT: %q}\n    tools: [add, lookup, crash]\n    timeout: 20s", exe, countFile)
}

// mcpReplies has Alice call the tools named in calls (model names), then
// answer with what they gave; Bob answers from Alice's message and fails
// while bobDown is set.
func mcpReplies(bobDown *atomic.Bool, calls ...kit.ToolCall) llmtest.Handler {
	return func(r llmtest.Request) llmtest.Reply {
		switch e2eCallKey(r) {
		case "a/first":
			var results []string
			for _, m := range r.Messages {
				if m.Role == "tool" {
					results = append(results, m.Content)
				}
			}
			if len(results) == 0 {
				var offered []string
				for _, tl := range r.Tools {
					offered = append(offered, tl.Name)
				}
				if !strings.HasPrefix(strings.Join(offered, ","), "calc__add,calc__lookup") {
					return llmtest.Reply{Status: 400, ErrorMessage: "tools offered: " + strings.Join(offered, ",")}
				}
				return llmtest.Reply{ToolCalls: calls}
			}
			return llmtest.Reply{Content: "tools said: " + strings.Join(results, " | ")}
		case "b/second":
			if bobDown != nil && bobDown.Load() {
				return llmtest.Reply{Status: 400, ErrorMessage: "bad request"}
			}
			return llmtest.Reply{Content: "Bob read: " + r.LastUser()}
		}
		return llmtest.Reply{Status: 400, ErrorMessage: "unexpected call"}
	}
}

var addAndLookup = []kit.ToolCall{
	{ID: "c1", Name: "calc__add", Arguments: `{"a": 2, "b": 3}`},
	{ID: "c2", Name: "calc__lookup", Arguments: `{"key": "speed_of_light"}`},
}

// TestMCPToolsStdioResumeReplay: Alice's tools run on the MCP server once;
// a run that failed after them resumes without calling them again; a
// --replay neither starts the server nor calls it, even when it cannot be
// started any more.
func TestMCPToolsStdioResumeReplay(t *testing.T) {
	var bobDown atomic.Bool
	srv := llmtest.New(t, mcpReplies(&bobDown, addAndLookup...))
	count := filepath.Join(t.TempDir(), "calls")
	specPath := writeSpecFile(t, "spec.yaml", strings.Replace(mcpSpec, "SERVER", stdioServer(t, count), 1))
	args := []string{"run", specPath, "-i", "question=q", "-q", "--no-cache"}

	refRuns := t.TempDir()
	code, _, stderr := invoke(t, e2eEnv(srv), append(args, "--runs-dir", refRuns)...)
	if code != exitcode.OK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	ref := runDirs(t, refRuns)[0]
	first := e2eOutcome(t, ref)
	for _, want := range []string{"2 + 3 = 5", "299,792 km/s"} {
		if !strings.Contains(first, want) {
			t.Errorf("Alice's answer lacks %q: %s", want, first)
		}
	}
	if got := mcptest.Counts(count); got["add"] != 1 || got["lookup"] != 1 {
		t.Fatalf("the server was called %v, want add and lookup once", got)
	}
	journal, _ := os.ReadFile(filepath.Join(ref, "journal.jsonl"))
	for _, want := range []string{`"type":"mcp_tools"`, `"tool":"calc__add"`, `2 + 3 = 5`} {
		if !strings.Contains(string(journal), want) {
			t.Errorf("the journal lacks %s", want)
		}
	}

	// A run that fails at Bob's call, after Alice's tools ran, resumes
	// without calling them again.
	bobDown.Store(true)
	runs := t.TempDir()
	code, _, stderr = invoke(t, e2eEnv(srv), append(args, "--runs-dir", runs)...)
	if code == exitcode.OK {
		t.Fatalf("the run did not fail at Bob's call:\n%s", stderr)
	}
	dir := runDirs(t, runs)[0]
	if got := mcptest.Counts(count); got["add"] != 2 || got["lookup"] != 2 {
		t.Fatalf("after the failed run the server was called %v, want add and lookup twice", got)
	}
	bobDown.Store(false)
	code, _, stderr = invoke(t, e2eEnv(srv), "resume", dir, "-q")
	if code != exitcode.OK {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	if got := mcptest.Counts(count); got["add"] != 2 || got["lookup"] != 2 {
		t.Errorf("the resume called the tools again: %v", got)
	}
	if got, want := e2eOutcome(t, dir), first; got != want {
		t.Errorf("the resumed run differs from the uninterrupted one:\n%s\nwant:\n%s", got, want)
	}

	// --replay with a server that cannot start: the journaled tool list and
	// results serve, nothing is started or called.
	broken := writeSpecFile(t, "spec.yaml", strings.Replace(mcpSpec, "SERVER", "    command: /nonexistent/mcp-server\n    tools: [add, lookup, crash]\n    timeout: 20s", 1))
	replayRuns := t.TempDir()
	asked := srv.Count()
	code, _, stderr = invoke(t, e2eEnv(srv), "run", broken, "-i", "question=q", "--no-cache", "-q", "--replay", ref, "--runs-dir", replayRuns)
	if code != exitcode.OK {
		t.Fatalf("replay: exit %d\n%s", code, stderr)
	}
	if srv.Count() != asked {
		t.Errorf("the replay asked the model %d times", srv.Count()-asked)
	}
	if got := mcptest.Counts(count); got["add"] != 2 || got["lookup"] != 2 {
		t.Errorf("the replay called the tools: %v", got)
	}
	if got, want := e2eOutcome(t, runDirs(t, replayRuns)[0]), first; got != want {
		t.Errorf("the replay differs from the run it replays:\n%s\nwant:\n%s", got, want)
	}
}

// TestMCPToolsHTTPSecretHeader: a streamable HTTP server reached with a
// bearer token from the environment; the token is in no file of the run.
func TestMCPToolsHTTPSecretHeader(t *testing.T) {
	var calls atomic.Int32
	const token = "s3cret-mcp-token-9431"
	hs := httptest.NewServer(mcptest.Handler(mcptest.Options{OnCall: func(string) { calls.Add(1) }}, token))
	defer hs.Close()
	srv := llmtest.New(t, mcpReplies(nil, addAndLookup...))
	server := fmt.Sprintf("    url: %s\n    headers: {Authorization: \"Bearer ${CALC_TOKEN}\"}", hs.URL)
	specPath := writeSpecFile(t, "spec.yaml", strings.Replace(mcpSpec, "SERVER", server, 1))
	env := e2eEnv(srv)
	env["CALC_TOKEN"] = token
	runs := t.TempDir()
	code, _, stderr := invoke(t, env, "run", specPath, "-i", "question=q", "-q", "--no-cache", "--runs-dir", runs)
	if code != exitcode.OK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	if calls.Load() != 2 {
		t.Errorf("the server was called %d times, want 2", calls.Load())
	}
	dir := runDirs(t, runs)[0]
	if out := e2eOutcome(t, dir); !strings.Contains(out, "2 + 3 = 5") {
		t.Errorf("Alice's answer lacks the sum: %s", out)
	}
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), token) {
				t.Errorf("%s holds the secret header", p)
			}
		}
		return nil
	})

	// Without the token the server refuses, and the run says which server.
	delete(env, "CALC_TOKEN")
	env["CALC_TOKEN"] = "wrong"
	code, _, stderr = invoke(t, env, "run", specPath, "-i", "question=q", "-q", "--no-cache", "--runs-dir", t.TempDir())
	if code == exitcode.OK || !strings.Contains(stderr, `mcp server "calc"`) {
		t.Errorf("a refused connection: exit %d\n%s", code, stderr)
	}
}

// TestMCPServerDies: a server that exits during a call fails the run with
// an error naming the server and the tool, recorded in the journal; the
// call is not journaled as a result, so a resume would ask again.
func TestMCPServerDies(t *testing.T) {
	srv := llmtest.New(t, mcpReplies(nil, kit.ToolCall{ID: "c1", Name: "calc__crash", Arguments: `{}`}))
	count := filepath.Join(t.TempDir(), "calls")
	text := strings.Replace(mcpSpec, "SERVER", stdioServer(t, count), 1)
	text = strings.Replace(text, "tools: [calc.add, calc.lookup]", "tools: [calc.add, calc.lookup, calc.crash]", 1)
	specPath := writeSpecFile(t, "spec.yaml", text)
	runs := t.TempDir()
	code, _, stderr := invoke(t, e2eEnv(srv), "run", specPath, "-i", "question=q", "-q", "--no-cache", "--runs-dir", runs)
	if code != exitcode.Failure {
		t.Fatalf("exit %d, want %d\n%s", code, exitcode.Failure, stderr)
	}
	want := `mcp server "calc" failed while calling crash`
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	journal, _ := os.ReadFile(filepath.Join(runDirs(t, runs)[0], "journal.jsonl"))
	var recorded bool
	for _, line := range strings.Split(string(journal), "\n") {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				Error string `json:"error"`
			} `json:"data"`
		}
		_ = json.Unmarshal([]byte(line), &ev)
		if ev.Type == "tool_call" {
			t.Errorf("the failed call was journaled as a result: %s", line)
		}
		if ev.Type == "error" && strings.Contains(ev.Data.Error, want) {
			recorded = true
		}
	}
	if !recorded {
		t.Errorf("the journal has no error naming the server:\n%s", journal)
	}
}

// TestValidateMCPToolNames: validate checks tool names against what the
// server lists when it starts, at the line and column of the name, and
// warns when it cannot start the server.
func TestValidateMCPToolNames(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	server := fmt.Sprintf("    command: %q\n    env: {RUNNER_MCPTEST_STDIO: \"1\"}", exe)
	text := strings.Replace(mcpSpec, "SERVER", server, 1)
	text = strings.Replace(text, "tools: [calc.add, calc.lookup]", "tools: [calc.add, calc.lokup]", 1)
	path := writeSpecFile(t, "spec.yaml", text)
	code, _, stderr := invoke(t, nil, "validate", path)
	want := path + `:10:38: error: tool "calc.lokup": mcp server "calc" lists no tool "lokup" (did you mean "lookup"?)`
	if code != exitcode.InvalidSpec || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant %s", code, stderr, want)
	}
	if code, _, _ := invoke(t, nil, "validate", "--no-servers", path); code != exitcode.OK {
		t.Errorf("--no-servers: exit %d, want 0", code)
	}

	// A server that cannot start: a warning, and the spec is valid.
	path = writeSpecFile(t, "spec.yaml", strings.Replace(mcpSpec, "SERVER", "    command: /nonexistent/mcp-server", 1))
	code, stdout, stderr := invoke(t, nil, "validate", path)
	if code != exitcode.OK || stdout != path+": ok\n" || !strings.Contains(stderr, path+`:6:3: warning: mcp server "calc": starting /nonexistent/mcp-server`) || !strings.Contains(stderr, "its tool names were not checked") {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}

	// Names the spec alone shows wrong: no such server, a tool the server
	// does not allow, a server with neither command nor url.
	bad := strings.Replace(mcpSpec, "SERVER", "    command: x\n    tools: [add]\n  empty: {}\n  both: {command: x, url: \"http://h/mcp\"}\n  web: {url: \"ftp://h\", env: {A: b}, timeout: soon}", 1)
	bad = strings.Replace(bad, "tools: [calc.add, calc.lookup]", "tools: [calx.add, calc.lookup]", 1)
	path = writeSpecFile(t, "spec.yaml", bad)
	code, _, stderr = invoke(t, nil, "validate", "--no-servers", path)
	for _, want := range []string{
		`:13:28: error: tool "calx.add": no MCP server "calx" is declared under mcp_servers: (did you mean "calc"?)`,
		`:13:38: error: tool "calc.lookup": mcp server "calc" allows only add (its tools:)`,
		`:9:3: error: mcp server "empty" has neither command:`,
		`:10:27: error: mcp server "both" has both command: and url:`,
		`:11:14: error: mcp server "web": url "ftp://h" is not an http:// or https:// URL`,
		`:11:31: error: mcp server "web": env: is for a server the run starts`,
		`:11:47: error: mcp_servers.web.timeout: "soon" is not a duration`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %s:\n%s", want, stderr)
		}
	}
	if code != exitcode.InvalidSpec {
		t.Errorf("exit %d, want %d", code, exitcode.InvalidSpec)
	}
}

// TestMCPToolCallBudget: a node's max_tool_calls stops the run (exit 6)
// before the tool past it runs; a resume with a higher limit runs only
// that one.
func TestMCPToolCallBudget(t *testing.T) {
	srv := llmtest.New(t, mcpReplies(nil, addAndLookup...))
	count := filepath.Join(t.TempDir(), "calls")
	text := strings.Replace(mcpSpec, "SERVER", stdioServer(t, count), 1) + "budget:\n  nodes:\n    first: {max_tool_calls: 1}\n"
	specPath := writeSpecFile(t, "spec.yaml", text)
	runs := t.TempDir()
	code, _, stderr := invoke(t, e2eEnv(srv), "run", specPath, "-i", "question=q", "-q", "--no-cache", "--runs-dir", runs)
	if code != exitcode.Budget || !strings.Contains(stderr, "node first has made the 1 tool calls its max_tool_calls allows") {
		t.Fatalf("exit %d, want %d\n%s", code, exitcode.Budget, stderr)
	}
	if got := mcptest.Counts(count); got["add"] != 1 || got["lookup"] != 0 {
		t.Fatalf("the server was called %v, want add only", got)
	}
	dir := runDirs(t, runs)[0]
	code, _, stderr = invoke(t, e2eEnv(srv), "resume", dir, "-q", "--budget", "first.tool_calls=2")
	if code != exitcode.OK {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	if got := mcptest.Counts(count); got["add"] != 1 || got["lookup"] != 1 {
		t.Errorf("after the resume the server was called %v, want add and lookup once", got)
	}
}

// TestMCPToolsKillAndResume kills the real binary with SIGKILL once
// Alice's tool calls are journaled (Bob's call is held), then resumes: the
// tools are not called again and the result is the uninterrupted run's.
func TestMCPToolsKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary; skipped with -short")
	}
	bin := runnerBinary(t)
	release := make(chan struct{})
	var released atomic.Bool
	inner := mcpReplies(nil, addAndLookup...)
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		if e2eCallKey(r) == "b/second" && !released.Load() {
			<-release
		}
		return inner(r)
	})
	defer func() {
		if !released.Swap(true) {
			close(release)
		}
	}()
	count := filepath.Join(t.TempDir(), "calls")
	specPath := writeSpecFile(t, "spec.yaml", strings.Replace(mcpSpec, "SERVER", stdioServer(t, count), 1))
	runs := t.TempDir()
	cmd, out, exited := startRunner(t, bin, srv, "run", specPath, "-i", "question=q", "--no-cache", "--runs-dir", runs, "-q")
	// Alice's first reply, then her answer after the tools: 2 responses.
	dir := waitForResponses(t, runs, 2, exited, out)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the run was not killed: %v", err)
	}
	if got := mcptest.Counts(count); got["add"] != 1 || got["lookup"] != 1 {
		t.Fatalf("before the kill the server was called %v, want add and lookup once", got)
	}
	released.Store(true)
	close(release)
	code, _, stderr := invoke(t, e2eEnv(srv), "resume", dir, "-q")
	if code != exitcode.OK {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	if got := mcptest.Counts(count); got["add"] != 1 || got["lookup"] != 1 {
		t.Errorf("the resume called the tools again: %v", got)
	}
	if out := e2eOutcome(t, dir); !strings.Contains(out, "2 + 3 = 5") || !strings.Contains(out, "Bob read") {
		t.Errorf("the resumed run's outcome: %s", out)
	}
}

// TestMCPToolsInConverse: a converse node's speakers get the node's MCP
// tools (command: runner starts this binary as runner mcp-demo).
func TestMCPToolsInConverse(t *testing.T) {
	const text = `version: 1
name: converse-mcp
mcp_servers:
  calc: {command: runner, args: [mcp-demo]}
templates:
  define:
    turn: |-
      KEY=turn {{.Agent.Name}}: {{.Goal.Description}}
      {{range .History}}{{.From}}: {{.Content}}
      {{end}}
verdicts:
  vote: [YES, NO]
goals:
  - {id: sum, description: "Is 2 + 3 five?"}
agents:
  ana: {name: Ana}
  bo: {name: Bo}
nodes:
  panel:
    kind: converse
    agents: [ana, bo]
    tools: [calc.add]
    speaker: least_spoken
    message: {format: tags, template: turn}
    verdict: {options: verdicts.vote}
    until: all(participants, {.withdrawn})
    max_turns: 4
flow:
  - foreach: {in: goals, do: [panel]}
outputs:
  verdicts: goal_verdicts
`
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		var result string
		for _, m := range r.Messages {
			if m.Role == "tool" {
				result = m.Content
			}
		}
		if result == "" {
			if len(r.Tools) != 1 || r.Tools[0].Name != "calc__add" {
				return llmtest.Reply{Status: 400, ErrorMessage: "no calc__add tool offered"}
			}
			return llmtest.Reply{ToolCalls: []kit.ToolCall{{ID: "c1", Name: "calc__add", Arguments: `{"a": 2, "b": 3}`}}}
		}
		return llmtest.Reply{Content: "<SpeakingTo>All</SpeakingTo><Content>" + result + "</Content><Verdict>YES</Verdict><VerdictReasoning>the sum</VerdictReasoning><Withdrawn>true</Withdrawn>"}
	})
	specPath := writeSpecFile(t, "spec.yaml", text)
	runs := t.TempDir()
	code, _, stderr := invoke(t, e2eEnv(srv), "run", specPath, "-q", "--no-cache", "--runs-dir", runs)
	if code != exitcode.OK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	res := readResult(t, runDirs(t, runs)[0])
	calls, _ := json.Marshal(res["tool_calls"])
	if n := strings.Count(string(calls), `"result":"2 + 3 = 5"`); n != 2 {
		t.Errorf("want both speakers' calc__add calls answered by the server, got %s", calls)
	}
}
