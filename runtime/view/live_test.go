package view_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/answers"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/view"
)

// runAtTerminal starts a run of design-debate (offline, one round) in
// root, made at a terminal: it asks its clarifying questions there as it
// goes. What the test writes to typed is read there, and out is what the
// terminal prints; done gets the run's result when it ends (executing,
// within 30 s).
func runAtTerminal(t *testing.T, root string) (r *runtime.Run, typed io.Writer, out *runtest.Output, done chan *result.Result) {
	t.Helper()
	plan := runtest.LoadPlan(t, filepath.Join(designDebate(t), "spec.yaml"))
	offline, err := args.Offline(plan)
	if err != nil {
		t.Fatal(err)
	}
	in, typed, out := runtest.Terminal(t)
	r, err = runtime.Start(plan, runtime.Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"problem=A URL shortener"}, Sets: []string{"max_rounds=1"}, Models: offline}},
		Settings: runtime.Settings{RunsDir: root, Getenv: func(string) string { return "" }, Ask: answers.Terminal(in, out)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r, typed, out, executing(t, r, 30*time.Second)
}

// TestAnsweredFromPageOrTerminal: a run of design-debate (offline) made
// at a terminal asks its clarifying questions there as it goes, and the
// view shows each one as a form too. The questions are answered in turn
// from the page and from the terminal: the page's answer goes into the
// run and the terminal says so; an answer the page sends to a question
// the terminal answered first is refused (409) and says why. The run
// finishes without stopping, both sides' answers in its journal.
func TestAnsweredFromPageOrTerminal(t *testing.T) {
	root := t.TempDir()
	ts, v := actingServer(t, root, designDebate(t), nil)
	host := strings.TrimPrefix(ts.URL, "http://")
	r, typed, out, done := runAtTerminal(t, root)
	id := filepath.Base(r.Dir)

	// posted is the question the terminal asks now, as the page sees it
	// ("" when the run ended).
	posted := func() (view.Question, bool) {
		for {
			select {
			case res := <-done:
				done <- res
				return view.Question{}, false
			case <-time.After(20 * time.Millisecond):
			}
			code, body := get(t, ts, "/api/run?id="+id)
			if code != http.StatusOK {
				continue // the run's folder is being made
			}
			var info struct {
				Status        string
				OpenQuestions []view.Question `json:"open_questions"`
			}
			if err := json.Unmarshal(body, &info); err != nil {
				t.Fatal(err)
			}
			if len(info.OpenQuestions) > 0 {
				if info.Status != view.StatusRunning || !info.OpenQuestions[0].Terminal {
					t.Fatalf("a question asked at the terminal is shown as %+v of a %s run", info.OpenQuestions[0], info.Status)
				}
				return info.OpenQuestions[0], true
			}
		}
	}
	var fromPage, fromTerminal []string
	for i := 0; ; i++ {
		q, ok := posted()
		if !ok {
			break
		}
		if i == 12 {
			t.Fatal("the run still asks after 12 answers")
		}
		if i%2 == 0 {
			ans := "page answer " + q.ID
			if rec := act(t, v, host, "/api/act/answer", view.RunRequest{ID: id, Answers: map[string]string{q.ID: ans}}); rec.Code != http.StatusOK {
				t.Fatalf("the page's answer to %s: %d %s", q.ID, rec.Code, rec.Body)
			}
			fromPage = append(fromPage, ans)
			continue
		}
		ans := "terminal answer " + q.ID
		if _, err := io.WriteString(typed, ans+"\n"); err != nil {
			t.Fatal(err)
		}
		fromTerminal = append(fromTerminal, ans)
		// Once the terminal's answer is in, the page's comes too late.
		for deadline := time.Now().Add(10 * time.Second); ; {
			if again, ok := posted(); !ok || again.ID != q.ID {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the terminal's answer to %s was not taken", q.ID)
			}
		}
		rec := act(t, v, host, "/api/act/answer", view.RunRequest{ID: id, Answers: map[string]string{q.ID: "too late"}})
		if rec.Code != http.StatusConflict && rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "terminal") && !strings.Contains(rec.Body.String(), "not waiting") {
			t.Errorf("the page's answer after the terminal's: %d %s", rec.Code, rec.Body)
		}
	}
	res := <-done
	if res == nil || res.Status != result.StatusCompleted {
		t.Fatalf("the run: %+v", res)
	}
	if len(fromPage) == 0 || len(fromTerminal) == 0 {
		t.Fatalf("answered %d from the page and %d from the terminal: want both", len(fromPage), len(fromTerminal))
	}
	journal, err := os.ReadFile(filepath.Join(r.Dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range append(append([]string{}, fromPage...), fromTerminal...) {
		if !strings.Contains(string(journal), a) {
			t.Errorf("%q is not in the journal", a)
		}
	}
	if strings.Contains(string(journal), "too late") {
		t.Error("an answer refused went into the journal")
	}
	if got := strings.Count(out.String(), "(answered from the page: "); got != len(fromPage) {
		t.Errorf("the terminal said %d times that the page answered, for %d answers:\n%s", got, len(fromPage), out.String())
	}
	if _, err := os.Stat(filepath.Join(r.Dir, answers.AskingDir)); err == nil {
		t.Errorf("the run left its %s folder", answers.AskingDir)
	}
	t.Logf("%d answers from the page, %d from the terminal", len(fromPage), len(fromTerminal))

	// A question left posted by a run killed while a terminal asked it is
	// offered no more once a process takes the run up again.
	stale := filepath.Join(r.Dir, answers.AskingDir, "stale.json")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte(`{"question": {"id": "architect.q9", "agent": "architect", "question": "Still there?"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if qs, _ := view.PostedQuestions(r.Dir); len(qs) != 1 {
		t.Fatalf("the stale question is not read back: %v", qs)
	}
	if _, err := runtime.Resume(r.Dir, nodes.Registry(), runtime.Options{}); err == nil {
		t.Fatal("a completed run was resumed")
	}
	if qs, _ := view.PostedQuestions(r.Dir); len(qs) != 0 {
		t.Errorf("a question of a killed terminal is still offered: %v", qs)
	}
}
