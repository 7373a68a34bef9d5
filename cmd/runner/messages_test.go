package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
)

// TestValidateInitProjectTestFiles: "runner validate *.yaml" in a project
// made by runner init checks its *.test.yaml files against the test
// schema, not the spec schema, and a broken test file is still reported.
func TestValidateInitProjectTestFiles(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := invoke(t, nil, "init", dir); code != 0 {
		t.Fatalf("init: exit %d: %s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	var tests int
	for _, f := range files {
		if strings.HasSuffix(f, ".test.yaml") {
			tests++
		}
	}
	if tests == 0 {
		t.Fatalf("init made no *.test.yaml among %v", files)
	}
	code, stdout, stderr := invoke(t, nil, append([]string{"validate"}, files...)...)
	if code != 0 {
		t.Fatalf("validate *.yaml: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "spec.test.yaml: ok (test file)") {
		t.Errorf("stdout does not say the test file is ok:\n%s", stdout)
	}
	// A test file with a field the test schema does not know, named
	// otherwise, recognised by its cases:.
	bad := filepath.Join(dir, "extra.yaml")
	if err := os.WriteFile(bad, []byte("spec: spec.yaml\ncases:\n  - name: one\n    bogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = invoke(t, nil, "validate", bad)
	if code != 4 || !strings.Contains(stderr, "extra.yaml:4:") || !strings.Contains(stderr, "bogus") {
		t.Errorf("bad test file: exit %d, stderr:\n%s", code, stderr)
	}
	// A test file whose spec is absent.
	orphan := filepath.Join(dir, "gone.test.yaml")
	if err := os.WriteFile(orphan, []byte("cases:\n  - name: one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = invoke(t, nil, "validate", orphan)
	if code != 4 || !strings.Contains(stderr, "gone.yaml") {
		t.Errorf("orphan test file: exit %d, stderr:\n%s", code, stderr)
	}
}

// TestResumeWantsRunDir: resume given a spec, or a path that does not
// exist, is a usage error (exit 2) that says it wants a run directory,
// and points a spec at runner run.
func TestResumeWantsRunDir(t *testing.T) {
	dir := t.TempDir()
	specPath := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(specPath, []byte("nodes:\n  a: {kind: output}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := invoke(t, nil, "resume", specPath)
	if code != 2 || !strings.Contains(stderr, "run directory") && !strings.Contains(stderr, "from its directory") ||
		!strings.Contains(stderr, "runner run "+specPath) || strings.Contains(stderr, "not a directory") {
		t.Errorf("resume SPEC: exit %d, stderr:\n%s", code, stderr)
	}
	other := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(other, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = invoke(t, nil, "resume", other)
	if code != 2 || strings.Contains(stderr, "runner run "+other) {
		t.Errorf("resume FILE: exit %d, stderr:\n%s", code, stderr)
	}
	code, _, stderr = invoke(t, nil, "resume", filepath.Join(dir, "runs", "nope"))
	if code != 2 || !strings.Contains(stderr, "no such run directory") {
		t.Errorf("resume MISSING: exit %d, stderr:\n%s", code, stderr)
	}
}

// TestRunsWithoutRunsFolder: runner runs in a project before its first
// run says there are none yet and how to make one (exit 0, as for an
// empty folder); a DIR given that does not exist is a usage error with
// the near folder's name.
func TestRunsWithoutRunsFolder(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	code, stdout, stderr := invoke(t, nil, "runs")
	if code != 0 || !strings.Contains(stdout, "no runs yet") || !strings.Contains(stdout, "runner run SPEC") || stderr != "" {
		t.Errorf("runs without runs/: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	code, stdout, _ = invoke(t, nil, "runs", "--csv")
	if code != 0 || !strings.HasPrefix(stdout, "id,") {
		t.Errorf("runs --csv without runs/: exit %d, stdout: %q", code, stdout)
	}
	if err := os.Mkdir(filepath.Join(dir, "runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = invoke(t, nil, "runs", "runz")
	if code != 2 || !strings.Contains(stderr, "runs runz: no such folder (did you mean runs?)") {
		t.Errorf("runs runz: exit %d, stderr: %s", code, stderr)
	}
}

// TestDatasetLineLacksInput: a dataset line without a required input's
// field is named by file and line, with the field, not answered with a
// hint about --input alone; --input giving it to all lines is accepted.
func TestDatasetLineLacksInput(t *testing.T) {
	ds := filepath.Join(t.TempDir(), "ds.jsonl")
	if err := os.WriteFile(ds, []byte("{\"question\": \"a\", \"expected\": \"x\"}\n\n{\"expected\": \"y\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENAI_API_KEY": "k"}
	code, _, stderr := invoke(t, env, "run", debateSpec, "--dataset", ds, "--runs-dir", t.TempDir())
	want := "--dataset: " + ds + `:3: the line has no field "question": the spec's input "question" is required and has no default`
	if code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant %q", code, stderr, want)
	}
}

// TestSpecPathTypo: a spec path that names nothing is a usage error
// (exit 2, not 4) with the near file of that folder; validate, whose exit
// codes are 0 and 4, names the near file too.
func TestSpecPathTypo(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(good, []byte("nodes: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	typo := filepath.Join(dir, "sepc.yaml")
	for _, cmd := range []string{"run", "graph"} {
		code, _, stderr := invoke(t, nil, cmd, typo)
		if want := typo + ": no such spec file (did you mean " + good + "?)"; code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("%s TYPO: exit %d, stderr:\n%s\nwant %q", cmd, code, stderr, want)
		}
	}
	code, _, stderr := invoke(t, nil, "run", dir)
	if code != 2 || !strings.Contains(stderr, "give its spec file: "+good) {
		t.Errorf("run DIR: exit %d, stderr:\n%s", code, stderr)
	}
	code, _, stderr = invoke(t, nil, "run", filepath.Join(dir, "zzzzzzzz.yaml"))
	if code != 2 || strings.Contains(stderr, "did you mean") {
		t.Errorf("run FAR: exit %d, stderr:\n%s", code, stderr)
	}
	code, _, stderr = invoke(t, nil, "validate", typo)
	if code != 4 || !strings.Contains(stderr, "no such file (did you mean "+good+"?)") {
		t.Errorf("validate TYPO: exit %d, stderr:\n%s", code, stderr)
	}
}

// TestHelpCommand: runner help prints what runner prints, runner help
// COMMAND what runner COMMAND --help prints; an unknown command is a
// usage error with the near name.
func TestHelpCommand(t *testing.T) {
	code, bare, _ := invoke(t, nil)
	if code != 0 || !strings.Contains(bare, "Commands:") && !strings.Contains(bare, "validate") {
		t.Fatalf("runner: exit %d, stdout:\n%s", code, bare)
	}
	code, stdout, stderr := invoke(t, nil, "help")
	if code != 0 || stdout != bare {
		t.Errorf("runner help: exit %d, stdout differs from runner's:\n%s\nstderr: %s", code, stdout, stderr)
	}
	_, want, _ := invoke(t, nil, "validate", "--help")
	code, stdout, _ = invoke(t, nil, "help", "validate")
	if code != 0 || stdout != want || !strings.Contains(stdout, "test schema") {
		t.Errorf("runner help validate: exit %d, stdout:\n%s", code, stdout)
	}
	_, want, _ = invoke(t, nil, "cache", "clear", "--help")
	code, stdout, _ = invoke(t, nil, "help", "cache", "clear")
	if code != 0 || stdout != want {
		t.Errorf("runner help cache clear: exit %d, stdout:\n%s", code, stdout)
	}
	code, _, stderr = invoke(t, nil, "help", "valdiate")
	if code != 2 || !strings.Contains(stderr, `runner has no command "valdiate" (did you mean "validate"?)`) {
		t.Errorf("runner help valdiate: exit %d, stderr: %s", code, stderr)
	}
}

// TestRetriesCollapseInPlainProgress: an endpoint that keeps failing
// prints, with -v, the first retry of each call and one line when it
// ends, not a line per retry; the journal still has every retry event.
func TestRetriesCollapseInPlainProgress(t *testing.T) {
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Status: 503, RetryAfter: "0.01"}
	})
	spec := e2eSpec(t, simpleSource, "")
	runs := t.TempDir()
	code, _, stderr := invoke(t, e2eEnv(srv), "run", spec, "-i", "question=q", "--runs-dir", runs, "-v", "--no-cache")
	if code != exitcode.Endpoint {
		t.Fatalf("exit %d, want %d\n%s", code, exitcode.Endpoint, stderr)
	}
	journals, _ := filepath.Glob(filepath.Join(runs, "*", "journal.jsonl"))
	if len(journals) != 1 {
		t.Fatalf("journals: %v", journals)
	}
	data, err := os.ReadFile(journals[0])
	if err != nil {
		t.Fatal(err)
	}
	retries := strings.Count(string(data), `"type":"retry"`)
	calls := strings.Count(stderr, "retrying ")
	if retries <= calls || calls == 0 {
		t.Fatalf("%d retry events in the journal, %d retrying lines:\n%s", retries, calls, stderr)
	}
	if !strings.Contains(stderr, "retries, then it failed (last error: ") {
		t.Errorf("no line says how the retried calls ended:\n%s", stderr)
	}
	if lines := strings.Count(stderr, "\n"); lines > 2*calls+6 {
		t.Errorf("%d lines of progress for %d retried calls:\n%s", lines, calls, stderr)
	}
}
