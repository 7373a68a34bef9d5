package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/runtime/result"
)

// TestHumanSeatFromTheTerminal takes the seat of runtime/testdata/seat.yaml
// with the binary, as a person without the view does: run (offline) stops
// waiting (exit 5) with the turn in questions.yaml, each resume with the
// message written there goes to the next turn, and the run finishes with
// the messages given. A replay of it, with nobody to answer, ends the same;
// the dry run plans the person's turns apart from the calls.
func TestHumanSeatFromTheTerminal(t *testing.T) {
	bin := runnerBinary(t)
	spec, err := filepath.Abs(filepath.Join("..", "..", "runtime", "testdata", "seat.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	runner := func(want int, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "OPENAI_API_KEY=", "NO_COLOR=1")
		out, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != want {
			t.Fatalf("runner %s: exit %d, want %d:\n%s", strings.Join(args, " "), code, want, out)
		}
		return string(out)
	}
	out := runner(5, "run", spec, "--offline", "--input", "question=Tabs or spaces?", "--runs-dir", runs)
	if !strings.Contains(out, "waiting for answers") {
		t.Errorf("the waiting run says:\n%s", out)
	}
	entries, err := os.ReadDir(runs)
	if err != nil || len(entries) != 1 {
		t.Fatalf("runs: %v %v", entries, err)
	}
	dir := filepath.Join(runs, entries[0].Name())
	questions := filepath.Join(dir, "questions.yaml")
	said := []string{"Spaces: a file reads the same everywhere.", "Tabs let each reader choose; spaces still win."}
	for i, msg := range said {
		data, err := os.ReadFile(questions)
		if err != nil {
			t.Fatal(err)
		}
		id := []string{"debate/-/t1/you", "debate/-/t3/you"}[i]
		blank := id + `: ""`
		if !strings.Contains(string(data), blank) || !strings.Contains(string(data), "You are You, in a debate on: Tabs or spaces?") {
			t.Fatalf("questions.yaml does not ask for %s with its prompt:\n%s", id, data)
		}
		if err := os.WriteFile(questions, []byte(strings.Replace(string(data), blank, id+": "+strconvQuote(msg), 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		runner([]int{5, 0}[i], "resume", dir, "--answers", questions)
	}
	res, err := result.Read(dir)
	if err != nil || res.Status != result.StatusCompleted || len(res.Messages) != 4 {
		t.Fatalf("the run: %v %v", res, err)
	}
	if res.Messages[0].Content != said[0] || res.Messages[2].Content != said[1] {
		t.Errorf("the person's messages: %q, %q", res.Messages[0].Content, res.Messages[2].Content)
	}

	runner(0, "run", spec, "--replay", dir, "--input", "question=Tabs or spaces?", "--runs-dir", runs)
	replayed := latestResult(t, runs, dir)
	a, _ := json.Marshal(res.Messages)
	b, _ := json.Marshal(replayed.Messages)
	if string(a) != string(b) {
		t.Errorf("the replay's messages differ:\n%s\n%s", b, a)
	}

	if out := runner(0, "run", spec, "--dry-run", "--offline", "--input", "question=q"); !strings.Contains(out, "Turns a person takes (agents with human: true): 2") {
		t.Errorf("the dry run:\n%s", out)
	}
}

// latestResult is the result of the run in runs other than skip.
func latestResult(t *testing.T, runs, skip string) *result.Result {
	t.Helper()
	entries, err := os.ReadDir(runs)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if d := filepath.Join(runs, e.Name()); d != skip && e.IsDir() {
			res, err := result.Read(d)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
	}
	t.Fatal("no other run")
	return nil
}

func strconvQuote(s string) string {
	data, _ := json.Marshal(s)
	return string(data)
}
