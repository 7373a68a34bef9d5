package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/debate-runner/runner/runtime/launch"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/rundir"
)

// TestResumeWritesRecordsAFailedWriteLost: when result.json cannot be
// written (a full disk; here a directory squats its name, so the rename
// fails), the run is not completed: the journal says it failed, and a
// resume writes result.json and the reports from the journal without
// asking the model again.
func TestResumeWritesRecordsAFailedWriteLost(t *testing.T) {
	srv := llmtest.New(t, keyed(answerOf))
	plan := simpleSpec(t, "")
	ref, _, err := execute(t, plan, Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}},
		Settings: Settings{Getenv: envFor(srv.URL)},
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Start(plan, Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}},
		Settings: Settings{RunsDir: t.TempDir(), Getenv: envFor(srv.URL)},
	})
	if err != nil {
		t.Fatal(err)
	}
	squat := filepath.Join(r.Dir, "result.json", "squat")
	if err := os.MkdirAll(squat, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Execute(context.Background()); err == nil {
		t.Fatal("the run succeeded though its result.json could not be written")
	}
	fin := eventsOf(readEvents(t, r.Dir), "run_finished")
	if len(fin) != 1 || !containsJSON(fin[0].Data, `"status":"failed"`) {
		t.Fatalf("run_finished = %v; want one, with status failed", fin)
	}
	asked := srv.Count()
	if err := os.RemoveAll(filepath.Dir(squat)); err != nil {
		t.Fatal(err)
	}
	resumed, err := Resume(r.Dir, nodes.Registry(), Options{Settings: Settings{Getenv: envFor(srv.URL)}})
	if err != nil {
		t.Fatalf("resume after the failed write: %v", err)
	}
	res, err := resumed.Execute(context.Background())
	if err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("resume: err = %v, status %s", err, res.Status)
	}
	if srv.Count() != asked {
		t.Errorf("the resume asked the model %d more times; every reply was journaled", srv.Count()-asked)
	}
	if got, want := stableResult(t, r.Dir), stableResult(t, ref.Dir); string(got) != string(want) {
		t.Errorf("resumed result.json:\n%s\nuninterrupted:\n%s", got, want)
	}
	for _, name := range []string{"report.md", "report.html"} {
		if _, err := os.Stat(filepath.Join(r.Dir, name)); err != nil {
			t.Errorf("%s after the resume: %v", name, err)
		}
	}
	if _, err := Resume(r.Dir, nodes.Registry(), Options{Settings: Settings{Getenv: envFor(srv.URL)}}); !errors.Is(err, ErrCompleted) {
		t.Errorf("a second resume: %v, want ErrCompleted", err)
	}
}

// TestResumeRewritesMissingRecords: a run whose journal says it completed
// but whose result.json and reports are gone (killed between the journal
// and the rename, or deleted) is resumed to write them.
func TestResumeRewritesMissingRecords(t *testing.T) {
	srv := llmtest.New(t, keyed(answerOf))
	plan := simpleSpec(t, "")
	r, _, err := execute(t, plan, Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}},
		Settings: Settings{Getenv: envFor(srv.URL)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := stableResult(t, r.Dir)
	for _, name := range []string{"result.json", "report.md"} {
		if err := os.Remove(filepath.Join(r.Dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	asked := srv.Count()
	resumed, err := Resume(r.Dir, nodes.Registry(), Options{Settings: Settings{Getenv: envFor(srv.URL)}})
	if err != nil {
		t.Fatalf("resume of a completed run without its records: %v", err)
	}
	if _, err := resumed.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	if srv.Count() != asked {
		t.Errorf("rewriting the records asked the model %d times", srv.Count()-asked)
	}
	if got := stableResult(t, r.Dir); string(got) != string(want) {
		t.Errorf("rewritten result.json:\n%s\nbefore:\n%s", got, want)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "report.md")); err != nil {
		t.Errorf("report.md was not rewritten: %v", err)
	}
}

// TestConcurrentResumesOneRuns: two resumes of one run started at the same
// instant: exactly one goes on, the other is refused, every time (the lock
// is taken before the journal is read).
func TestConcurrentResumesOneRuns(t *testing.T) {
	var down sync.Mutex
	failing := true
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		down.Lock()
		defer down.Unlock()
		if failing {
			return llmtest.Reply{Status: 400, ErrorMessage: "bad request"}
		}
		return llmtest.Reply{Content: answerOf(callKey(r))}
	})
	plan := simpleSpec(t, "")
	for i := 0; i < 20; i++ {
		down.Lock()
		failing = true
		down.Unlock()
		r, _, err := execute(t, plan, Options{
			Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}},
			Settings: Settings{Getenv: envFor(srv.URL)},
			Seams:    Seams{Sleep: noSleep},
		})
		if err == nil {
			t.Fatal("the run did not fail")
		}
		down.Lock()
		failing = false
		down.Unlock()
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for k := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resumed, err := Resume(r.Dir, nodes.Registry(), Options{Settings: Settings{Getenv: envFor(srv.URL)}})
				if err != nil {
					errs[k] = err
					return
				}
				_, errs[k] = resumed.Execute(context.Background())
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, rundir.ErrLocked), errors.Is(err, ErrCompleted):
			default:
				t.Fatalf("try %d: %v", i, err)
			}
		}
		if ok != 1 {
			t.Fatalf("try %d: %d resumes ran (%v); want exactly one", i, ok, errs)
		}
		if n := len(eventsOf(readEvents(t, r.Dir), "run_resumed")); n != 1 {
			t.Fatalf("try %d: the journal shows %d resumes", i, n)
		}
	}
}

func containsJSON(data []byte, frag string) bool {
	return strings.Contains(string(data), frag)
}

// TestTypedAnswersNotAskedAgain: answers typed at the terminal exist
// nowhere but in the journal; a run that failed after them resumes without
// a terminal and without --answers, and neither waits nor asks again.
func TestTypedAnswersNotAskedAgain(t *testing.T) {
	var bobDown atomic.Bool
	bobDown.Store(true)
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		key := callKey(r)
		switch {
		case strings.HasSuffix(key, "/clar"):
			if strings.Contains(r.LastUser(), "Answered") {
				return llmtest.Reply{Content: `{"questions": []}`}
			}
			return llmtest.Reply{Content: `{"questions": ["How many users?"]}`}
		case key == "b/r0/answer" && bobDown.Load():
			return llmtest.Reply{Status: 400, ErrorMessage: "bad request"}
		}
		return llmtest.Reply{Content: answerOf(key)}
	})
	plan := loadPlan(t, writeSpec(t, t.TempDir(), `version: 1
name: typed
inputs:
  question: {required: true}
agents:
  a: {name: Alice}
  b: {name: Bob}
templates:
  define:
    clar: "KEY={{.Agent.ID}}/clar\n{{range .Questions}}Answered {{.Question}}: {{.Answer}}\n{{end}}"
    answer: "KEY={{.Agent.ID}}/r{{.Round}}/answer\n{{.Inputs.question}}"
nodes:
  clarify: {kind: clarify, agents: [a], template: clar, max_iterations: 2}
  answer: {kind: ask, agents: [a, b], template: answer, record: answer}
flow: [clarify, answer]
outputs:
  answers: nodes.clarify.output
`))
	var typed atomic.Int64
	ask := func(context.Context, value.Question) (string, error) {
		typed.Add(1)
		return "ten thousand", nil
	}
	r, _, err := execute(t, plan, Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}},
		Settings: Settings{Getenv: envFor(srv.URL), Ask: ask},
	})
	if err == nil {
		t.Fatal("the run did not fail at Bob's call")
	}
	if typed.Load() != 1 {
		t.Fatalf("%d questions typed; want 1", typed.Load())
	}
	bobDown.Store(false)
	resumed, err := Resume(r.Dir, nodes.Registry(), Options{Settings: Settings{Getenv: envFor(srv.URL)}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := resumed.Execute(context.Background())
	if err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("resume: status %s, err %v (a resume that waits has lost the typed answer)", res.Status, err)
	}
	out, _ := json.Marshal(res.Outputs)
	if !strings.Contains(string(out), "ten thousand") {
		t.Errorf("the typed answer is not in the resumed run's outputs: %s", out)
	}
}
