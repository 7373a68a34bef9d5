package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/journal"
)

// The tests in this file run specs end to end through the CLI against
// llmtest servers: exit codes, what stderr says, what a run leaves on disk,
// and killing and resuming the real binary. The specs live in
// runtime/testdata; every prompt starts with a KEY= marker naming the call,
// so servers answer by call and tests can tell which calls were asked.

const (
	e2eKey       = "sk-e2e-secret-key-0123456789"
	simpleSource = "../../runtime/testdata/simple.yaml"
	debateSource = "../../runtime/testdata/debate.yaml"
)

// e2eSpec copies a test spec into a fresh directory, with extra YAML
// appended, and returns its path.
func e2eSpec(t *testing.T, source, extra string) string {
	t.Helper()
	data, err := os.ReadFile(source)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(path, append(data, "\n"+extra...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// e2eEnv points the default endpoint at srv.
func e2eEnv(srv *llmtest.Server) map[string]string {
	return map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": e2eKey}
}

// e2eCallKey extracts the KEY= marker of a request's prompt.
func e2eCallKey(r llmtest.Request) string {
	last := r.LastUser()
	i := strings.Index(last, "KEY=")
	if i < 0 {
		return ""
	}
	rest := last[i+4:]
	if j := strings.IndexAny(rest, " \n"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// e2eJournalKey maps a debate prompt key ("a>b/r2/critique") to the call
// key the runtime journals ("critique/round=2/a>b").
func e2eJournalKey(promptKey string) string {
	parts := strings.Split(promptKey, "/")
	if len(parts) != 3 {
		return ""
	}
	return parts[2] + "/round=" + strings.TrimPrefix(parts[1], "r") + "/" + parts[0]
}

// e2eAnswers answers every call by its key, after delay.
func e2eAnswers(delay time.Duration) llmtest.Handler {
	return func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: "answer to " + e2eCallKey(r), Delay: delay}
	}
}

// e2eEvents reads a run's journal.
func e2eEvents(t *testing.T, dir string) []journal.Event {
	t.Helper()
	evs, err := journal.Read(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func e2eCount(evs []journal.Event, typ event.Type) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// e2eResponded returns the call keys with a model_response in the journal.
func e2eResponded(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, e := range e2eEvents(t, dir) {
		if e.Type == "model_response" {
			out[e.Key] = true
		}
	}
	return out
}

// e2eOutcome is the part of result.json that is the same for every run of a
// spec with the same replies: outputs and messages.
func e2eOutcome(t *testing.T, dir string) string {
	t.Helper()
	res := readResult(t, dir)
	data, err := json.MarshalIndent(map[string]any{"outputs": res["outputs"], "messages": res["messages"]}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// runDirs lists the run directories under runs.
func runDirs(t *testing.T, runs string) []string {
	t.Helper()
	entries, err := os.ReadDir(runs)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(runs, e.Name()))
		}
	}
	return out
}

// TestRunEndpointFailureExit3: a call that fails after its retries exits 3;
// stderr names the call (node and agent) and the cause, result.json says
// failed with the error, and the journal has the retries and the error.
func TestRunEndpointFailureExit3(t *testing.T) {
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		if e2eCallKey(r) == "b/r0/answer" {
			return llmtest.Reply{Status: 503, ErrorMessage: "upstream overloaded", RetryAfter: "0.01"}
		}
		return e2eAnswers(0)(r)
	})
	spec := e2eSpec(t, simpleSource, "defaults: {max_retries: 2}\n")
	runs := t.TempDir()
	code, stdout, stderr := invoke(t, e2eEnv(srv), "run", spec, "-i", "question=q", "--runs-dir", runs, "-q")
	if code != exitcode.Endpoint {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitcode.Endpoint, stderr)
	}
	if stdout != "" {
		t.Errorf("a failed run printed an output: %q", stdout)
	}
	for _, want := range []string{"answer/-/b", "503", "upstream overloaded", "gave up after 3 attempt(s)", "runner resume "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	dir := runDirFrom(t, stderr)
	res := readResult(t, dir)
	if res["status"] != "failed" || !strings.Contains(res["error"].(string), "answer/-/b") {
		t.Errorf("result.json status %v error %v", res["status"], res["error"])
	}
	evs := e2eEvents(t, dir)
	if e2eCount(evs, "retry") != 2 || e2eCount(evs, "error") != 1 || e2eCount(evs, "model_error") != 1 {
		t.Errorf("journal has %d retry, %d error, %d model_error events; want 2, 1, 1",
			e2eCount(evs, "retry"), e2eCount(evs, "error"), e2eCount(evs, "model_error"))
	}
}

// TestRunRetriesThroughRateLimit: a 429 with Retry-After is retried and the
// run succeeds, printing its first output.
func TestRunRetriesThroughRateLimit(t *testing.T) {
	var n atomic.Int64
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		if n.Add(1) == 1 {
			return llmtest.Reply{Status: 429, RetryAfter: "0.01"}
		}
		return e2eAnswers(0)(r)
	})
	spec := e2eSpec(t, simpleSource, "")
	code, stdout, stderr := invoke(t, e2eEnv(srv), "run", spec, "-i", "question=q", "--runs-dir", t.TempDir(), "-v")
	if code != exitcode.OK {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "answer to a/r0/answer") || !strings.Contains(stdout, "answer to b/r0/answer") {
		t.Errorf("stdout lacks the answers: %q", stdout)
	}
	if !strings.Contains(stderr, "retrying answer/-/") {
		t.Errorf("progress does not mention the retry:\n%s", stderr)
	}
}

// TestRunUsageErrors: bad inputs, vars and keys exit 2 naming the flag or
// variable; no run directory is created and no model is called.
func TestRunUsageErrors(t *testing.T) {
	srv := llmtest.New(t, e2eAnswers(0))
	simple := e2eSpec(t, simpleSource, "vars: {rounds: 3, style: terse}\n")
	remote := e2eSpec(t, simpleSource, "endpoints: {remote: {base_url: 'https://api.example.com/v1', api_key_env: REMOTE_API_KEY}}\nmodels: {default: {model: m, endpoint: remote}}\n")
	tests := []struct {
		name string
		args []string
		want []string // substrings of stderr
	}{
		{"unknown input", []string{simple, "-i", "question=q", "-i", "topic=x"}, []string{"--input topic", `no input "topic"`, "declared: question"}},
		{"missing required input", []string{simple}, []string{"--input", "missing required input(s): question"}},
		{"malformed input", []string{simple, "-i", "question"}, []string{"--input question", "NAME=VALUE"}},
		{"unreadable input file", []string{simple, "-i", "question=@/nonexistent/q.txt"}, []string{"--input question", "/nonexistent/q.txt", "no such file"}},
		{"unknown var", []string{simple, "-i", "question=q", "--set", "turns=2"}, []string{"--set turns", `no var "turns"`, "declared: rounds, style"}},
		{"var of the wrong type", []string{simple, "-i", "question=q", "--set", "rounds=abc"}, []string{"--set rounds", `"abc" is not an integer`}},
		{"missing API key", []string{remote, "-i", "question=q"}, []string{"REMOTE_API_KEY", `endpoint "remote"`, ".env"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs := filepath.Join(t.TempDir(), "runs")
			env := e2eEnv(srv)
			code, _, stderr := invoke(t, env, append([]string{"run", "--runs-dir", runs}, tt.args...)...)
			if code != exitcode.Usage {
				t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitcode.Usage, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if dirs := runDirs(t, runs); len(dirs) > 0 {
				t.Errorf("a usage error left run directories: %v", dirs)
			}
		})
	}
	if srv.Count() != 0 {
		t.Errorf("usage errors made %d model calls", srv.Count())
	}
}

// TestRunInvalidSpec: an invalid spec exits 4 before anything is sent or
// created.
func TestRunInvalidSpec(t *testing.T) {
	srv := llmtest.New(t, e2eAnswers(0))
	spec := e2eSpec(t, simpleSource, "outputs: {best: nodes.nosuch.output}\n")
	runs := filepath.Join(t.TempDir(), "runs")
	code, _, stderr := invoke(t, e2eEnv(srv), "run", spec, "-i", "question=q", "--runs-dir", runs)
	if code != exitcode.InvalidSpec {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitcode.InvalidSpec, stderr)
	}
	if !strings.Contains(stderr, spec+":") || !strings.Contains(stderr, "nothing was run") {
		t.Errorf("stderr does not point at the spec:\n%s", stderr)
	}
	if srv.Count() != 0 {
		t.Errorf("an invalid spec made %d model calls", srv.Count())
	}
	if dirs := runDirs(t, runs); len(dirs) > 0 {
		t.Errorf("an invalid spec left run directories: %v", dirs)
	}
}

// dotEnvSpec writes a spec whose endpoint reads its key from MY_KEY, and a
// .env next to it that sets MY_KEY.
func dotEnvSpec(t *testing.T, srv *llmtest.Server, key string) string {
	t.Helper()
	spec := e2eSpec(t, simpleSource, "endpoints: {mine: {base_url: '"+srv.URL+"', api_key_env: MY_KEY}}\nmodels: {default: {model: m, endpoint: mine}}\n")
	if err := os.WriteFile(filepath.Join(filepath.Dir(spec), ".env"), []byte("# test key\nexport MY_KEY=\""+key+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestDotEnvSuppliesKey: a .env next to the spec supplies the endpoint's
// key (the environment wins over it), and the key is sent but never stored.
func TestDotEnvSuppliesKey(t *testing.T) {
	const fromFile = "sk-from-dotenv-0123456789"
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"from .env", nil, fromFile},
		{"environment wins", map[string]string{"MY_KEY": e2eKey}, e2eKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, e2eAnswers(0))
			spec := dotEnvSpec(t, srv, fromFile)
			code, _, stderr := invoke(t, tc.env, "run", spec, "-i", "question=q", "--runs-dir", t.TempDir(), "-q")
			if code != exitcode.OK {
				t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
			}
			for _, r := range srv.Requests() {
				if got := r.Header.Get("Authorization"); got != "Bearer "+tc.want {
					t.Errorf("Authorization = %q, want the key %s", got, tc.name)
				}
			}
			assertNoSecret(t, runDirFrom(t, stderr), fromFile, e2eKey)
		})
	}
}

// assertNoSecret fails if any file of dir contains any of the secrets.
func assertNoSecret(t *testing.T, dir string, secrets ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("empty run directory")
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s contains an API key", e.Name())
			}
		}
	}
}

// TestSecretsNeverStored: the API key reaches no file of the run directory
// and not stderr, even when the server echoes it back in error bodies,
// during retries and in the final failure.
func TestSecretsNeverStored(t *testing.T) {
	echo := func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Status: 401, ErrorMessage: "Incorrect API key provided: " + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")}
	}
	for _, tc := range []struct {
		name    string
		handler func(n int64) llmtest.Handler
		code    int
	}{
		{"echoed in a retried 500", func(n int64) llmtest.Handler {
			return func(r llmtest.Request) llmtest.Reply {
				if n == 1 {
					return llmtest.Reply{Status: 500, RetryAfter: "0.01", ErrorMessage: "internal error for key " + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")}
				}
				return e2eAnswers(0)(r)
			}
		}, exitcode.OK},
		{"echoed in the final 401", func(int64) llmtest.Handler { return echo }, exitcode.Endpoint},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply { return tc.handler(n.Add(1))(r) })
			spec := e2eSpec(t, simpleSource, "")
			code, stdout, stderr := invoke(t, e2eEnv(srv), "run", spec, "-i", "question=q", "--runs-dir", t.TempDir(), "--json")
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstderr:\n%s", code, tc.code, stderr)
			}
			if strings.Contains(stderr, e2eKey) || strings.Contains(stdout, e2eKey) {
				t.Errorf("the key was printed:\n%s", stderr)
			}
			if !strings.Contains(stderr, "[REDACTED]") {
				t.Errorf("the echoed key should show as [REDACTED]:\n%s", stderr)
			}
			assertNoSecret(t, runDirFrom(t, stderr), e2eKey)
		})
	}
}

// TestProgressModes: --json prints every journal event on stderr as a JSON
// line as it happens, and nothing that is not JSON; -q prints nothing but
// the run directory.
func TestProgressModes(t *testing.T) {
	srv := llmtest.New(t, e2eAnswers(0))
	spec := e2eSpec(t, simpleSource, "")

	code, _, stderr := invoke(t, e2eEnv(srv), "run", spec, "-i", "question=q", "--runs-dir", t.TempDir(), "--json")
	if code != exitcode.OK {
		t.Fatalf("--json: exit %d\n%s", code, stderr)
	}
	dir := runDirFrom(t, stderr)
	// Every line is JSON: the journal's events (with a seq), then the run
	// directory.
	var printed []journal.Event
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for i, line := range lines {
		var ev journal.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Type == "" {
			t.Errorf("--json printed a line that is not JSON with a type: %q (%v)", line, err)
			continue
		}
		if ev.Seq == 0 {
			if ev.Type != "run_dir" || i != len(lines)-1 {
				t.Errorf("--json printed %q where a journal event belongs", line)
			}
			continue
		}
		printed = append(printed, ev)
	}
	journaled := e2eEvents(t, dir)
	if len(printed) != len(journaled) {
		t.Fatalf("--json printed %d events, the journal has %d", len(printed), len(journaled))
	}
	for i := range journaled {
		p, j := printed[i], journaled[i]
		if p.Seq != j.Seq || p.Type != j.Type || p.Key != j.Key || !bytes.Equal(p.Data, j.Data) {
			t.Errorf("event %d printed as %+v, journaled as %+v", i, p, j)
		}
	}

	code, stdout, stderr := invoke(t, e2eEnv(srv), "run", spec, "-i", "question=q", "--runs-dir", t.TempDir(), "-q")
	if code != exitcode.OK {
		t.Fatalf("-q: exit %d\n%s", code, stderr)
	}
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "run: ") {
		t.Errorf("-q printed more than the run directory:\n%s", stderr)
	}
	if stdout == "" {
		t.Error("-q must still print the output on stdout")
	}
}

// TestResumeFailedRun: a run that failed because the endpoint went down
// exits 3; once the endpoint is back, resume finishes it without asking
// answered calls again, even from another working directory and with a
// torn last journal line; resuming it again exits 1 saying it completed.
func TestResumeFailedRun(t *testing.T) {
	var served atomic.Int64
	down := func(r llmtest.Request) llmtest.Reply {
		if served.Add(1) > 14 {
			return llmtest.Reply{Status: 503, ErrorMessage: "down", RetryAfter: "0.01"}
		}
		return e2eAnswers(0)(r)
	}
	srv := llmtest.New(t, down)
	const fromFile = "sk-resume-dotenv-0123456789"
	spec := e2eSpec(t, debateSource, "defaults: {max_retries: 0}\nendpoints: {mine: {base_url: '"+srv.URL+"', api_key_env: MY_KEY}}\nmodels: {default: {model: m, endpoint: mine}}\n")
	if err := os.WriteFile(filepath.Join(filepath.Dir(spec), ".env"), []byte("MY_KEY="+fromFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	// Run from the spec's folder with a relative path, resume from
	// elsewhere: the run must remember where its spec (and .env) live.
	t.Chdir(filepath.Dir(spec))
	code, _, stderr := invoke(t, nil, "run", "spec.yaml", "-i", "question=q", "--runs-dir", runs, "-q")
	if code != exitcode.Endpoint {
		t.Fatalf("first attempt: exit %d, want %d\n%s", code, exitcode.Endpoint, stderr)
	}
	dir := runDirFrom(t, stderr)
	answered := e2eResponded(t, dir)
	if len(answered) == 0 {
		t.Fatal("nothing was answered before the failure")
	}
	// Tear the last line, as a crash while writing it would.
	path := filepath.Join(dir, "journal.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data[:len(data)-20], 0o600); err != nil {
		t.Fatal(err)
	}

	t.Chdir(t.TempDir())
	srv.SetHandler(e2eAnswers(0))
	before := srv.Count()
	code, stdout, stderr := invoke(t, nil, "resume", dir, "-q")
	if code != exitcode.OK {
		t.Fatalf("resume: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "answer to judge/r3/evaluate") {
		t.Errorf("resume did not print the output: %q", stdout)
	}
	for _, r := range srv.Requests()[before:] {
		if answered[e2eJournalKey(e2eCallKey(r))] {
			t.Errorf("resume asked %s again", e2eCallKey(r))
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+fromFile {
			t.Errorf("resumed call sent Authorization %q; the .env next to the spec was not read", got)
		}
	}
	if res := readResult(t, dir); res["status"] != "completed" {
		t.Errorf("status after resume: %v", res["status"])
	}

	// A completed run cannot be resumed: exit 1 with a clear message.
	code, _, stderr = invoke(t, nil, "resume", dir)
	if code != exitcode.Failure || !strings.Contains(stderr, "already completed") {
		t.Errorf("resume of a completed run: exit %d\n%s", code, stderr)
	}
}

// startRunner starts the binary with the test server's environment.
func startRunner(t *testing.T, bin string, srv *llmtest.Server, args ...string) (*exec.Cmd, *bytes.Buffer, chan error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out, exited := started(t, cmd, append(os.Environ(), "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY="+e2eKey))
	return cmd, out, exited
}

// started starts cmd with env, its stdout and stderr into one buffer, and
// gives the buffer and a channel that receives what its Wait returns.
func started(t *testing.T, cmd *exec.Cmd, env []string) (*bytes.Buffer, chan error) {
	t.Helper()
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return &out, exited
}

// waitForResponses waits until the only run directory under runs has at
// least n model responses in its journal, and returns it.
func waitForResponses(t *testing.T, runs string, n int, exited chan error, out *bytes.Buffer) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			t.Fatalf("the run ended before %d responses: %v\n%s", n, err, out.String())
		case <-time.After(10 * time.Millisecond):
		}
		if dirs := runDirs(t, runs); len(dirs) == 1 {
			if evs, err := journal.Read(filepath.Join(dirs[0], "journal.jsonl")); err == nil && e2eCount(evs, "model_response") >= n {
				return dirs[0]
			}
		}
	}
	t.Fatalf("fewer than %d responses within 30s\n%s", n, out.String())
	return ""
}

// TestKillAndResume kills the real binary with SIGKILL in the middle of a
// debate, resumes it with the binary, interrupts the resumed run with SIGINT,
// and resumes it again. No call answered before is ever asked again, and
// the result is the one an uninterrupted run gives.
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary; skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH")
	}
	bin := filepath.Join(t.TempDir(), "runner")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	spec, err := filepath.Abs(debateSource)
	if err != nil {
		t.Fatal(err)
	}
	const calls = 33

	// The uninterrupted run, for reference.
	ref := llmtest.New(t, e2eAnswers(0))
	code, _, stderr := invoke(t, e2eEnv(ref), "run", spec, "-i", "question=q", "--runs-dir", t.TempDir(), "-q")
	if code != exitcode.OK {
		t.Fatalf("reference run: exit %d\n%s", code, stderr)
	}
	want := e2eOutcome(t, runDirFrom(t, stderr))

	// 1. Kill -9 once some responses, but not all, are journaled.
	srv := llmtest.New(t, e2eAnswers(100*time.Millisecond))
	runs := t.TempDir()
	cmd, out, exited := startRunner(t, bin, srv, "run", spec, "-i", "question=q", "--runs-dir", runs, "-q")
	dir := waitForResponses(t, runs, 10, exited, out)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the run was not killed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "result.json")); err == nil {
		t.Fatal("a killed run has a result.json")
	}
	answered := e2eResponded(t, dir)
	if len(answered) >= calls {
		t.Fatalf("all calls were answered before the kill")
	}
	killedAt := len(answered)
	assertNotAskedAgain := func(from int, answered map[string]bool) []llmtest.Request {
		t.Helper()
		asked := srv.Requests()[from:]
		for _, r := range asked {
			if answered[e2eJournalKey(e2eCallKey(r))] {
				t.Errorf("call %s was answered before but asked again", e2eCallKey(r))
			}
		}
		return asked
	}

	// 2. Resume, and interrupt the resumed run with SIGINT: it stops
	// cleanly, as failed, and says how to resume.
	before := srv.Count()
	cmd, out, exited = startRunner(t, bin, srv, "resume", dir, "-q")
	waitForResponses(t, runs, killedAt+5, exited, out)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := <-exited; !errors.As(err, &ee) || ee.ExitCode() != exitcode.Failure {
		t.Fatalf("interrupted resume: %v, want exit %d\n%s", err, exitcode.Failure, out.String())
	}
	if !strings.Contains(out.String(), "runner resume "+dir) {
		t.Errorf("an interrupted run should say how to resume it:\n%s", out.String())
	}
	if res := readResult(t, dir); res["status"] != "failed" {
		t.Errorf("status after the interrupt: %v", res["status"])
	}
	assertNotAskedAgain(before, answered)
	answered = e2eResponded(t, dir)
	interruptedAt := len(answered)

	// 3. Resume to the end.
	srv.SetHandler(e2eAnswers(0))
	before = srv.Count()
	_, out, exited = startRunner(t, bin, srv, "resume", dir, "-q")
	if err := <-exited; err != nil {
		t.Fatalf("resume: %v\n%s", err, out.String())
	}
	asked := assertNotAskedAgain(before, answered)
	if len(asked) != calls-interruptedAt {
		t.Errorf("the last resume asked %d calls, want %d", len(asked), calls-interruptedAt)
	}
	if readResult(t, dir)["status"] != "completed" {
		t.Errorf("status after resume: %v", readResult(t, dir)["status"])
	}
	if got := e2eOutcome(t, dir); got != want {
		t.Errorf("resumed outcome differs from an uninterrupted run:\n got %s\nwant %s", got, want)
	}
	t.Logf("killed after %d of %d responses, interrupted after %d, the last resume asked the other %d", killedAt, calls, interruptedAt, len(asked))
}
