package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/journal"
)

// killedDebate runs the debate with the real binary and kills it with
// SIGKILL once some of its calls are journaled; it returns the run
// directory, the calls answered before the kill and the outcome an
// uninterrupted run gives.
func killedDebate(t *testing.T, bin string, srv *llmtest.Server) (dir string, answered map[string]bool, want string) {
	t.Helper()
	spec, err := filepath.Abs(debateSource)
	if err != nil {
		t.Fatal(err)
	}
	ref := llmtest.New(t, e2eAnswers(0))
	code, _, stderr := invoke(t, e2eEnv(ref), "run", spec, "-i", "question=q", "--runs-dir", t.TempDir(), "-q")
	if code != exitcode.OK {
		t.Fatalf("reference run: exit %d\n%s", code, stderr)
	}
	want = e2eOutcome(t, runDirFrom(t, stderr))

	runs := t.TempDir()
	cmd, out, exited := startRunner(t, bin, srv, "run", spec, "-i", "question=q", "--runs-dir", runs, "-q")
	dir = waitForResponses(t, runs, 8, exited, out)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	return dir, e2eResponded(t, dir), want
}

// TestTwoResumesRace starts two `runner resume` processes on one killed
// run at the same moment, several times over: exactly one works on the run
// and finishes it; the other is refused at once, says that another process
// is working on the run, and appends nothing. No call answered before the
// kill is asked again, no call is asked twice, and the outcome is the one
// an uninterrupted run gives.
func TestTwoResumesRace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary; skipped with -short")
	}
	bin := runnerBinary(t)
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			srv := llmtest.New(t, e2eAnswers(60*time.Millisecond))
			dir, answered, want := killedDebate(t, bin, srv)
			before := srv.Count()

			type proc struct {
				out    fmt.Stringer
				exited chan error
			}
			var procs [2]proc
			for i := range procs {
				_, out, exited := startRunner(t, bin, srv, "resume", dir, "-q")
				procs[i] = proc{out, exited}
			}
			var won, lost int
			for i, p := range procs {
				err := <-p.exited
				var ee *exec.ExitError
				switch {
				case err == nil:
					won++
				case errors.As(err, &ee) && ee.ExitCode() == exitcode.Failure && strings.Contains(p.out.String(), "another runner process is working on this run"):
					lost++
				default:
					t.Errorf("resume %d: %v\n%s", i, err, p.out.String())
				}
			}
			if won != 1 || lost != 1 {
				t.Fatalf("%d resumes finished the run and %d were refused; want one of each", won, lost)
			}
			seen := map[string]bool{}
			for _, r := range srv.Requests()[before:] {
				key := e2eCallKey(r)
				if answered[e2eJournalKey(key)] {
					t.Errorf("call %s was answered before the kill but asked again", key)
				}
				if seen[key] {
					t.Errorf("call %s was asked twice by the two resumes", key)
				}
				seen[key] = true
			}
			if got := e2eOutcome(t, dir); got != want {
				t.Errorf("outcome differs from an uninterrupted run:\n got %s\nwant %s", got, want)
			}
			if evs := e2eEvents(t, dir); e2eCount(evs, "run_finished") != 1 {
				t.Errorf("the journal holds %d run_finished events; want 1", e2eCount(evs, "run_finished"))
			}
		})
	}
}

// TestCtrlCAtATerminal runs the binary in a real terminal (tmux) and types
// Ctrl-C while calls are in flight: the terminal's SIGINT reaches the run,
// which stops as failed, leaves no live line behind, says how to resume and
// exits 1; the resume then finishes the run without asking again any call
// answered before.
func TestCtrlCAtATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a terminal; skipped with -short")
	}
	bin := runnerBinary(t)
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("RUNNER_REQUIRE_TMUX") != "" {
			t.Fatal("RUNNER_REQUIRE_TMUX is set but tmux is not on PATH")
		}
		t.Skip("tmux is not installed")
	}
	spec, err := filepath.Abs(debateSource)
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(t, e2eAnswers(150*time.Millisecond))
	tm := tmuxServer(t, tmux, "ctrlc")
	runs := t.TempDir()
	shell := fmt.Sprintf("env OPENAI_BASE_URL=%s OPENAI_API_KEY=%s RUNNER_CACHE_DIR=%s %s run %s -i question=q --runs-dir %s --no-cache; echo EXIT=$?; sleep 60",
		srv.URL, e2eKey, t.TempDir(), bin, spec, runs)
	tm("new-session", "-d", "-s", "ctrlc", "-x", "80", "-y", "30", shell)

	deadline := time.Now().Add(60 * time.Second)
	var dir string
	sawLive := false
	for dir == "" || !sawLive {
		if time.Now().After(deadline) {
			t.Fatalf("no responses or no live line within 60s:\n%s", tm("capture-pane", "-p", "-t", "ctrlc"))
		}
		time.Sleep(20 * time.Millisecond)
		sawLive = sawLive || strings.Contains(tm("capture-pane", "-p", "-J", "-t", "ctrlc"), " · ")
		if dirs := runDirs(t, runs); len(dirs) == 1 {
			if evs, err := journal.Read(filepath.Join(dirs[0], "journal.jsonl")); err == nil && e2eCount(evs, "model_response") >= 6 {
				dir = dirs[0]
			}
		}
	}
	tm("send-keys", "-t", "ctrlc", "C-c")
	var screen string
	for {
		screen = tm("capture-pane", "-p", "-J", "-t", "ctrlc")
		if strings.Contains(screen, "EXIT=") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not stop after Ctrl-C:\n%s", screen)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(screen, "EXIT=1") {
		t.Errorf("exit after Ctrl-C: want 1\n%s", screen)
	}
	if !strings.Contains(screen, "runner resume "+dir) {
		t.Errorf("the interrupted run does not say how to resume it:\n%s", screen)
	}
	if !strings.Contains(screen, ": stopped") {
		t.Errorf("the node Ctrl-C stopped is not said to be stopped:\n%s", screen)
	}
	if strings.Contains(screen, "context canceled") {
		t.Errorf("Ctrl-C is reported as an error:\n%s", screen)
	}
	if strings.Contains(screen, " · ") {
		t.Errorf("the live line was left on the screen:\n%s", screen)
	}
	if res := readResult(t, dir); res["status"] != "failed" {
		t.Errorf("status after Ctrl-C: %v", res["status"])
	}

	answered := e2eResponded(t, dir)
	srv.SetHandler(e2eAnswers(0))
	before := srv.Count()
	_, out, exited := startRunner(t, bin, srv, "resume", dir, "-q")
	if err := <-exited; err != nil {
		t.Fatalf("resume: %v\n%s", err, out.String())
	}
	for _, r := range srv.Requests()[before:] {
		if answered[e2eJournalKey(e2eCallKey(r))] {
			t.Errorf("call %s was answered before Ctrl-C but asked again", e2eCallKey(r))
		}
	}
	if res := readResult(t, dir); res["status"] != "completed" {
		t.Errorf("status after resume: %v", res["status"])
	}
}
