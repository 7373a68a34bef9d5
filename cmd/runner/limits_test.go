package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
)

// The tests in this file hold runs to their limits with the CLI: waits
// between retries, budgets, a resume with a fixed spec, and secrets that a
// model or an input brings into a run.

// TestRetryAfterBounded: a server asking for an hour's pause fails the call
// at once (exit 3) with the wait named, instead of holding the run; a
// short Retry-After is waited, and -v says how long.
func TestRetryAfterBounded(t *testing.T) {
	var n atomic.Int64
	longWait := atomic.Bool{}
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		if longWait.Load() {
			return llmtest.Reply{Status: 429, RetryAfter: "3600"}
		}
		if n.Add(1) == 1 {
			return llmtest.Reply{Status: 429, RetryAfter: "0.3"}
		}
		return e2eAnswers(0)(r)
	})
	spec := e2eSpec(t, simpleSource, "endpoints: {local: {base_url: '"+srv.URL+"', api_key_env: OPENAI_API_KEY, timeout: 3s, max_retry_wait: 10s}}\nmodels: {default: {model: m, endpoint: local}}\n")

	code, _, stderr := invoke(t, e2eEnv(srv), "run", spec, "-i", "question=q", "--runs-dir", t.TempDir(), "-v", "--no-cache")
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	m := regexp.MustCompile(`retrying answer/-/\w+ in (\d+)ms`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("-v does not say how long the retry waits:\n%s", stderr)
	}
	if ms, _ := strconv.Atoi(m[1]); ms < 300 || ms > 10000 {
		t.Errorf("the retry waits %sms; want the 300ms asked for, at most max_retry_wait", m[1])
	}

	longWait.Store(true)
	code, _, stderr = invoke(t, e2eEnv(srv), "run", spec, "-i", "question=q", "--runs-dir", t.TempDir(), "-q", "--no-cache")
	if code != exitcode.Endpoint {
		t.Fatalf("Retry-After: 3600: exit %d, want %d\n%s", code, exitcode.Endpoint, stderr)
	}
	for _, want := range []string{"1h0m0s", "max_retry_wait 10s"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestBudgetStopsAndResumes: a run stops before the call that would pass
// max_calls (exit 6, status budget_exceeded, the call not sent); resume
// with a raised --budget finishes it with the result of an unlimited run
// and no call asked twice; result.json counts usage by node.
func TestBudgetStopsAndResumes(t *testing.T) {
	srv := llmtest.New(t, e2eAnswers(0))
	plain := e2eSpec(t, debateSource, "")
	refRuns := t.TempDir()
	if code, _, stderr := invoke(t, e2eEnv(srv), "run", plain, "-i", "question=q", "--runs-dir", refRuns, "-q", "--no-cache"); code != exitcode.OK {
		t.Fatalf("unlimited run: exit %d\n%s", code, stderr)
	}
	ref := runDirs(t, refRuns)[0]
	total := srv.Count()

	limited := e2eSpec(t, debateSource, "budget: {max_calls: 5}\n")
	runs := t.TempDir()
	before := srv.Count()
	code, _, stderr := invoke(t, e2eEnv(srv), "run", limited, "-i", "question=q", "--runs-dir", runs, "-q", "--no-cache")
	if code != exitcode.Budget {
		t.Fatalf("exit %d, want %d (budget)\n%s", code, exitcode.Budget, stderr)
	}
	dir := runDirs(t, runs)[0]
	if sent := srv.Count() - before; sent != 5 {
		evs := e2eEvents(t, dir)
		for _, e := range evs {
			t.Logf("%s %s %s", e.Type, e.Key, clipTo(string(e.Data), 300))
		}
		t.Errorf("%d calls sent under max_calls: 5", sent)
	}
	if res := readResult(t, dir); res["status"] != "budget_exceeded" {
		t.Errorf("status %v, want budget_exceeded", res["status"])
	}
	if !strings.Contains(stderr, "--budget") {
		t.Errorf("stderr does not say how to go on:\n%s", stderr)
	}
	if code, _, stderr := invoke(t, e2eEnv(srv), "resume", dir, "--budget", "calls=5", "-q"); code != exitcode.Budget {
		t.Errorf("resume within the same budget: exit %d, want %d\n%s", code, exitcode.Budget, stderr)
	}
	before = srv.Count()
	if code, _, stderr := invoke(t, e2eEnv(srv), "resume", dir, "--budget", "calls=1000", "-q"); code != exitcode.OK {
		t.Fatalf("resume with a raised budget: exit %d\n%s", code, stderr)
	}
	if sent := srv.Count() - before; sent != total-5 {
		t.Errorf("the resume sent %d calls; want the %d not made before", sent, total-5)
	}
	if got, want := e2eOutcome(t, dir), e2eOutcome(t, ref); got != want {
		t.Errorf("the resumed run differs from the unlimited one:\n%s\nwant:\n%s", got, want)
	}
	var usage struct {
		ByNode  map[string]any `json:"by_node"`
		ByRound map[string]any `json:"by_round"`
	}
	data, _ := json.Marshal(readResult(t, dir)["usage"])
	if err := json.Unmarshal(data, &usage); err != nil {
		t.Fatal(err)
	}
	if usage.ByNode["critique"] == nil || usage.ByRound["1"] == nil || usage.ByRound["3"] == nil {
		t.Errorf("result.json usage lacks counts by node and round: %s", data)
	}

	// The dry run warns when its worst case passes the budget.
	code, stdout, stderr := invoke(t, e2eEnv(srv), "run", limited, "-i", "question=q", "--dry-run")
	if code != exitcode.OK || !strings.Contains(stdout+stderr, "max_calls") {
		t.Errorf("dry run under max_calls: 5: exit %d, no warning naming the limit:\n%s\n%s", code, stdout, stderr)
	}
}

// TestResumeWithFixedSpec: a run that failed on a template error late in
// its flow resumes with --spec FIXED.yaml: the calls made before are reused
// (same key and request), and only the fixed node's calls are made.
func TestResumeWithFixedSpec(t *testing.T) {
	srv := llmtest.New(t, e2eAnswers(0))
	base, err := os.ReadFile(simpleSource)
	if err != nil {
		t.Fatal(err)
	}
	// A second node whose template fails when rendered on this run's input
	// ("q"): index out of range. (Not on every input: validate accepts it.)
	broken := strings.Replace(string(base), "flow: [answer]", `  final: {kind: ask, agents: [a], template: final, record: final}
flow: [answer, final]`, 1)
	broken = strings.Replace(broken, "    answer: ", "    final: \"KEY=a/r0/final {{index .Inputs.question 5}}\"\n    answer: ", 1)
	dir := t.TempDir()
	brokenPath := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(brokenPath, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	code, _, stderr := invoke(t, e2eEnv(srv), "run", brokenPath, "-i", "question=q", "--runs-dir", runs, "-q", "--no-cache")
	if code != exitcode.Failure {
		t.Fatalf("the broken spec: exit %d, want %d\n%s", code, exitcode.Failure, stderr)
	}
	run := runDirs(t, runs)[0]
	asked := srv.Count()
	if asked != 2 {
		t.Fatalf("%d calls before the template error; want the 2 of node answer", asked)
	}

	// Without --spec the run keeps its own copy, even after the file is fixed.
	fixed := strings.Replace(broken, "{{index .Inputs.question 5}}", "{{index .Inputs.question 0}}", 1)
	if err := os.WriteFile(brokenPath, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	// That resume would fail the same way without asking a model: it is
	// refused (exit 2), naming the error and --spec as the way out.
	if code, _, stderr := invoke(t, e2eEnv(srv), "resume", run, "-q"); code != exitcode.Usage || !strings.Contains(stderr, "index") ||
		!strings.Contains(stderr, "--spec FIXED.yaml") || srv.Count() != asked {
		t.Errorf("resume without --spec: exit %d (want %d, the same template error, refused), %d calls\n%s", code, exitcode.Usage, srv.Count()-asked, stderr)
	}
	if code, _, stderr := invoke(t, e2eEnv(srv), "resume", run, "--spec", brokenPath, "-q"); code != exitcode.OK {
		t.Fatalf("resume --spec FIXED: exit %d\n%s", code, stderr)
	}
	if sent := srv.Count() - asked; sent != 1 {
		t.Errorf("the resume with the fixed spec sent %d calls; want only node final's 1", sent)
	}
	out, _ := json.Marshal(readResult(t, run)["status"])
	if string(out) != `"completed"` {
		t.Errorf("status %s after the fixed resume", out)
	}

	// A fix that also changes a prompt answered before: that call is made
	// again, and the resume says which and why.
	if err := os.WriteFile(brokenPath, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	runs = t.TempDir()
	if code, _, stderr := invoke(t, e2eEnv(srv), "run", brokenPath, "-i", "question=q", "--runs-dir", runs, "-q", "--no-cache"); code != exitcode.Failure {
		t.Fatalf("the broken spec: exit %d\n%s", code, stderr)
	}
	run = runDirs(t, runs)[0]
	reworded := strings.Replace(fixed, `/answer\n`, `/answer Please be brief.\n`, 1)
	if reworded == fixed {
		t.Fatal("the test could not reword the answer template")
	}
	if err := os.WriteFile(brokenPath, []byte(reworded), 0o644); err != nil {
		t.Fatal(err)
	}
	asked = srv.Count()
	code, _, stderr = invoke(t, e2eEnv(srv), "resume", run, "--spec", brokenPath, "-v")
	if code != exitcode.OK {
		t.Fatalf("resume --spec REWORDED: exit %d\n%s", code, stderr)
	}
	if sent := srv.Count() - asked; sent != 3 {
		t.Errorf("the resume sent %d calls; want 3 (answer's 2 again, final's 1)", sent)
	}
	for _, key := range []string{"answer/-/a", "answer/-/b"} {
		if !strings.Contains(stderr, "model call "+key+" is made again") {
			t.Errorf("the resume does not say %s is made again:\n%s", key, stderr)
		}
	}
}

// TestSecretsFromRepliesAndInputs: a key echoed by a model reply, or given
// in an input, is redacted from every file of the run, the cache, stdout
// and --json.
func TestSecretsFromRepliesAndInputs(t *testing.T) {
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: "my key is " + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + " and " + e2eCallKey(r)}
	})
	spec := e2eSpec(t, simpleSource, "")
	cache := t.TempDir()
	env := e2eEnv(srv)
	env["RUNNER_CACHE_DIR"] = cache
	runs := t.TempDir()
	code, stdout, stderr := invoke(t, env, "run", spec, "-i", "question=the key is "+e2eKey, "--runs-dir", runs, "--json")
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if strings.Contains(stdout+stderr, e2eKey) {
		t.Errorf("the key reached stdout or stderr:\n%s\n%s", stdout, stderr)
	}
	if !strings.Contains(stdout, "[REDACTED]") {
		t.Errorf("stdout should show the echoed key as [REDACTED]: %q", stdout)
	}
	dir := runDirs(t, runs)[0]
	assertNoSecret(t, dir, e2eKey)
	err := filepath.WalkDir(cache, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(data), e2eKey) {
			t.Errorf("cache entry %s holds the key", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func clipTo(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
