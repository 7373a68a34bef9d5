package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes/kit"
)

// The tests in this file hold a run to recording what it was given besides
// its spec (the context folder and what its tools read, its template
// libraries) and to giving it back on resume and replay, with the binary.

// toolSpec has Alice read the context folder with tools, then Bob answer.
const toolSpec = `version: 1
name: tools
inputs:
  question: {required: true}
agents:
  a: {name: Alice, tools: [read_file, list_files]}
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

// toolReplies has Alice read notes.md and the FIFO, then answer with what
// the tools gave her; Bob answers from Alice's message. Bob fails while
// bobDown is set.
func toolReplies(bobDown *atomic.Bool) llmtest.Handler {
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
				return llmtest.Reply{ToolCalls: []kit.ToolCall{
					{ID: "c1", Name: "read_file", Arguments: `{"path": "notes.md"}`},
					{ID: "c2", Name: "read_file", Arguments: `{"path": "pipe"}`},
				}}
			}
			return llmtest.Reply{Content: "tools said: " + strings.Join(results, " | ")}
		case "b/second":
			if bobDown.Load() {
				return llmtest.Reply{Status: 400, ErrorMessage: "bad request"}
			}
			return llmtest.Reply{Content: "Bob read: " + r.LastUser()}
		}
		return llmtest.Reply{Status: 400, ErrorMessage: "unexpected call"}
	}
}

// contextFolder makes a context folder with notes.md and a FIFO named
// pipe, which nobody ever writes to.
func contextFolder(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("the notes say 42"), 0o644); err != nil {
		t.Fatal(err)
	}
	mkfifo(t, filepath.Join(dir, "pipe"))
	return dir
}

// TestContextFolderRecordedAndReplayed: a FIFO in the context folder is
// refused, not waited on; a run that failed after its tool calls resumes
// without --context and gets the tool results it had; a --replay does not
// read the folder again, and warns, naming the file, when it changed.
func TestContextFolderRecordedAndReplayed(t *testing.T) {
	var bobDown atomic.Bool
	srv := llmtest.New(t, toolReplies(&bobDown))
	specPath := writeSpecFile(t, "spec.yaml", toolSpec)
	ctxDir := contextFolder(t)
	args := []string{"run", specPath, "-i", "question=q", "--context", ctxDir, "-q", "--no-cache"}

	// The uninterrupted run.
	refRuns := t.TempDir()
	code, _, stderr := invoke(t, e2eEnv(srv), append(args, "--runs-dir", refRuns)...)
	if code != exitcode.OK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	ref := runDirs(t, refRuns)[0]
	firstJSON, _ := json.Marshal(readResult(t, ref)["outputs"].(map[string]any)["first"])
	first := string(firstJSON)
	for _, want := range []string{"the notes say 42", `pipe\" is not a regular file (a named pipe)`} {
		if !strings.Contains(first, want) {
			t.Errorf("Alice's answer lacks %q: %s", want, first)
		}
	}

	// A run that fails at Bob's call, after Alice's tools ran, resumes
	// without --context once the folder is gone.
	bobDown.Store(true)
	runs := t.TempDir()
	code, _, stderr = invoke(t, e2eEnv(srv), append(args, "--runs-dir", runs)...)
	if code == exitcode.OK {
		t.Fatalf("the run did not fail at Bob's call:\n%s", stderr)
	}
	dir := runDirs(t, runs)[0]
	bobDown.Store(false)
	if err := os.Rename(ctxDir, ctxDir+".moved"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Rename(ctxDir+".moved", ctxDir) })
	code, _, stderr = invoke(t, e2eEnv(srv), "resume", dir, "-q")
	if code != exitcode.OK {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	if got, want := e2eOutcome(t, dir), e2eOutcome(t, ref); got != want {
		t.Errorf("the resumed run differs from the uninterrupted one:\n%s\nwant:\n%s", got, want)
	}
	if err := os.Rename(ctxDir+".moved", ctxDir); err != nil {
		t.Fatal(err)
	}

	// --replay serves the journaled tool results: a changed file is named
	// in a warning, and its new text is not read.
	if err := os.WriteFile(filepath.Join(ctxDir, "notes.md"), []byte("the notes now say 7"), 0o644); err != nil {
		t.Fatal(err)
	}
	replayRuns := t.TempDir()
	asked := srv.Count()
	code, _, stderr = invoke(t, e2eEnv(srv), "run", specPath, "-i", "question=q", "--context", ctxDir, "--no-cache", "--replay", ref, "--runs-dir", replayRuns)
	if code != exitcode.OK {
		t.Fatalf("replay: exit %d\n%s", code, stderr)
	}
	if srv.Count() != asked {
		t.Errorf("the replay asked the model %d times", srv.Count()-asked)
	}
	replayed := runDirs(t, replayRuns)[0]
	if got, want := e2eOutcome(t, replayed), e2eOutcome(t, ref); got != want {
		t.Errorf("the replay differs from the run it replays:\n%s\nwant:\n%s", got, want)
	}
	warnings, _ := json.Marshal(readResult(t, replayed)["warnings"])
	if !strings.Contains(string(warnings)+stderr, "notes.md") {
		t.Errorf("no warning names the changed notes.md:\nwarnings: %s\nstderr: %s", warnings, stderr)
	}
}

// TestLibrariesStoredByContent: a run keeps a copy of each template
// library it used; a resume compiles the spec with those copies even when
// the library on disk changed or moved.
func TestLibrariesStoredByContent(t *testing.T) {
	var down atomic.Bool
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		if down.Load() && e2eCallKey(r) == "b/ask" {
			return llmtest.Reply{Status: 400, ErrorMessage: "bad request"}
		}
		return llmtest.Reply{Content: "reply to " + r.LastUser()}
	})
	root := t.TempDir()
	lib := filepath.Join(root, "mylib")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	writeLib := func(text string) {
		if err := os.WriteFile(filepath.Join(lib, "ask.tmpl"), []byte("KEY={{.Agent.ID}}/ask "+text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeLib("the first wording")
	specPath := filepath.Join(root, "spec.yaml")
	if err := os.WriteFile(specPath, []byte(`version: 1
name: libs
agents:
  a: {name: Alice}
  b: {name: Bob}
templates:
  use: [./mylib]
nodes:
  first: {kind: ask, agents: [a], template: mylib/ask, record: first}
  second: {kind: ask, agents: [b], template: mylib/ask, record: second}
flow: [first, second]
outputs:
  second: map(latest("second"), {.content})
`), 0o644); err != nil {
		t.Fatal(err)
	}
	down.Store(true)
	runs := t.TempDir()
	code, _, stderr := invoke(t, e2eEnv(srv), "run", specPath, "--runs-dir", runs, "-q", "--no-cache")
	if code == exitcode.OK {
		t.Fatalf("the run did not fail at Bob's call:\n%s", stderr)
	}
	dir := runDirs(t, runs)[0]
	down.Store(false)
	writeLib("a new wording")
	if err := os.Rename(lib, lib+".moved"); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = invoke(t, e2eEnv(srv), "resume", dir, "-q")
	if code != exitcode.OK {
		t.Fatalf("resume with the library moved away: exit %d\n%s", code, stderr)
	}
	out, _ := json.Marshal(readResult(t, dir)["outputs"])
	if !strings.Contains(string(out), "the first wording") || strings.Contains(string(out), "new wording") {
		t.Errorf("the resumed run did not use the library it started with: %s", out)
	}
}
