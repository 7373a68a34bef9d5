package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
)

// syncBuffer is a buffer that a command writes while the test reads it.
type syncBuffer = runtest.Output

// (runner view's address carries its token: /?token=…#page.)
var viewLine = regexp.MustCompile(`view: (http://[^/\s]+)/(?:\?token=[0-9a-f]+)?#(\S*)`)

// waitForView waits until out names the view's address and page.
func waitForView(t *testing.T, out *syncBuffer, exited <-chan error) (base, page string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := viewLine.FindStringSubmatch(out.String()); m != nil {
			return m[1], m[2]
		}
		select {
		case err := <-exited:
			t.Fatalf("exited before serving: %v\n%s", err, out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("no view address within 30s:\n%s", out.String())
	return "", ""
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestViewCommand runs `runner view` (the binary): it serves the runs
// folder on a loopback address, opens a run directory's page when given
// one, warns when it listens beyond this machine, and stops on Ctrl-C.
func TestViewCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH")
	}
	bin := filepath.Join(t.TempDir(), "runner")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	srv := llmtest.New(t, e2eAnswers(0))
	runs := t.TempDir()
	code, _, stderr := invoke(t, e2eEnv(srv), "run", debateSource, "-i", "question=q", "--runs-dir", runs, "-q")
	if code != exitcode.OK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	runDir := runDirFrom(t, stderr)
	id := filepath.Base(runDir)

	start := func(args ...string) (*exec.Cmd, *syncBuffer, chan error) {
		cmd := exec.Command(bin, append([]string{"view"}, args...)...)
		cmd.Env = append(os.Environ(), "BROWSER=none")
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		return cmd, out, exited
	}
	stop := func(cmd *exec.Cmd, out *syncBuffer, exited chan error) {
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("view stopped with %v\n%s", err, out.String())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("view did not stop on Ctrl-C\n%s", out.String())
		}
	}

	cmd, out, exited := start(runs, "--addr", "127.0.0.1:0")
	base, page := waitForView(t, out, exited)
	if !strings.HasPrefix(base, "http://127.0.0.1:") || page != "/" || strings.Contains(out.String(), "warning") {
		t.Errorf("view of the runs folder: %s", out.String())
	}
	if code, body := httpGet(t, base+"/"); code != http.StatusOK || !strings.Contains(body, "/assets/app.js") {
		t.Errorf("GET /: %d %s", code, body)
	}
	code, body := httpGet(t, base+"/api/runs")
	var list struct{ Runs []struct{ ID, Status string } }
	if err := json.Unmarshal([]byte(body), &list); err != nil || code != http.StatusOK || len(list.Runs) != 1 || list.Runs[0].ID != id || list.Runs[0].Status != "completed" {
		t.Errorf("GET /api/runs: %d %s", code, body)
	}
	stop(cmd, out, exited)

	// A run directory opens its page.
	cmd, out, exited = start(runDir, "--addr", "127.0.0.1:0", "--no-open")
	if _, page := waitForView(t, out, exited); page != "/run/"+id {
		t.Errorf("view of a run directory opens %q, want /run/%s", page, id)
	}
	stop(cmd, out, exited)

	// Beyond loopback only when asked, read-only, and with a warning.
	cmd, out, exited = start(runs, "--addr", "0.0.0.0:0", "--read-only")
	waitForView(t, out, exited)
	if !strings.Contains(out.String(), "warning: the view listens on") || strings.Contains(out.String(), "token=") {
		t.Errorf("no warning for a non-loopback address, or a token:\n%s", out.String())
	}
	stop(cmd, out, exited)
	if code, _, stderr := invoke(t, nil, "view", runs, "--addr", "0.0.0.0:0"); code != exitcode.Usage || !strings.Contains(stderr, "--read-only") {
		t.Errorf("a view that acts, beyond loopback: exit %d\n%s", code, stderr)
	}

	if code, _, stderr := invoke(t, nil, "view", filepath.Join(runs, "missing")); code != exitcode.Usage {
		t.Errorf("view of a missing folder: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := invoke(t, nil, "view", runs, "--addr", "nonsense"); code != exitcode.Usage || !strings.Contains(stderr, "--addr") {
		t.Errorf("a bad --addr: exit %d\n%s", code, stderr)
	}
}

// TestRunView: `runner run --view` serves the view while the run goes,
// prints the new run's page and opens it with $BROWSER; the page's run
// reads as running until it ends. Without a terminal the command ends with
// the run.
func TestRunView(t *testing.T) {
	srv := llmtest.New(t, e2eAnswers(60*time.Millisecond))
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
		if code := run([]string{"run", debateSource, "-i", "question=q", "--runs-dir", runs, "--view", "--view-addr", "127.0.0.1:0", "-q"}, e); code != exitcode.OK {
			exited <- exitcode.With(code, io.EOF)
			return
		}
		exited <- nil
	}()
	base, page := waitForView(t, errs, exited)
	if !strings.HasPrefix(page, "/run/") || !strings.Contains(errs.String(), "(opened in your browser)") {
		t.Fatalf("run --view printed:\n%s", errs.String())
	}
	id := strings.TrimPrefix(page, "/run/")
	code, body := httpGet(t, base+"/api/run?id="+id)
	if code != http.StatusOK || !strings.Contains(body, `"status":"running"`) {
		t.Errorf("the new run, while it runs: %d %.300s", code, body)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("run --view: %v\n%s", err, errs.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("run --view did not end with its run")
	}
	data, err := os.ReadFile(opened)
	if err != nil || string(data) != base+"/#"+page {
		t.Errorf("$BROWSER was given %q (%v), want %s/#%s", data, err, base, page)
	}
	if _, err := os.Stat(filepath.Join(runs, id, "result.json")); err != nil {
		t.Errorf("the run did not finish: %v", err)
	}
}
