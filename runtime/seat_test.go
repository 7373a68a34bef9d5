package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/answers"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
)

// TestSeatWaitsAndResumes: in testdata/seat.yaml a person plays "you".
// Each of its turns stops the run as waiting (exit 5) with the turn in
// questions.yaml and turns.json, and no request reaches the endpoint for
// it; resumed with the message, the run goes on to the next turn; the
// finished run's messages are the person's and the model's in turn, the
// person's journaled as replies of source "human", costing nothing. A
// replay of the finished run, without answers, key or server, gives the
// same outputs and messages byte for byte.
func TestSeatWaitsAndResumes(t *testing.T) {
	srv := llmtest.New(t, keyed(answerOf))
	plan := loadPlan(t, "testdata/seat.yaml")
	opts := Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=Tabs or spaces?"}}},
		Settings: Settings{Getenv: envFor(srv.URL)},
		Seams:    Seams{Sleep: noSleep},
	}
	r, res, err := execute(t, plan, opts)
	said := map[string]string{}
	for turn := 1; ; turn += 2 {
		if turn > 5 {
			t.Fatalf("the run still waits after %d turns of the person", len(said))
		}
		if res.Status == result.StatusCompleted {
			break
		}
		if !errors.Is(err, kit.ErrWaiting) || exitcode.Of(err) != exitcode.Waiting || res.Status != result.StatusWaiting {
			t.Fatalf("turn %d: status %s, err %v; want waiting (exit 5)", turn, res.Status, err)
		}
		turns, rerr := answers.ReadTurns(filepath.Join(r.Dir, answers.TurnsFile))
		if rerr != nil || len(turns) != 1 {
			t.Fatalf("turn %d: turns.json holds %v, %v", turn, turns, rerr)
		}
		tn := turns[0]
		if want := "debate/-/t" + strconv.Itoa(turn) + "/you"; tn.ID != want || tn.Agent != "you" || tn.Node != "debate" {
			t.Fatalf("turn %d: waits for %+v, want %s", turn, tn, want)
		}
		// The prompt shown is the agent's: every message said so far.
		last := tn.Messages[len(tn.Messages)-1].Content
		for id, msg := range said {
			if !strings.Contains(last, msg) {
				t.Errorf("turn %d: the prompt lacks %s's message %q:\n%s", turn, id, msg, last)
			}
		}
		qs, rerr := os.ReadFile(filepath.Join(r.Dir, "questions.yaml"))
		if rerr != nil || !strings.Contains(string(qs), tn.ID+`: ""`) {
			t.Fatalf("questions.yaml does not ask for the turn:\n%s %v", qs, rerr)
		}
		msg := "Person's argument " + strconv.Itoa(turn) + ": spaces."
		said[tn.ID] = msg
		r, err = Resume(r.Dir, nodes.Registry(), Options{Launch: launch.Launch{Answers: map[string]string{tn.ID: msg}}, Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}})
		if err != nil {
			t.Fatal(err)
		}
		res, err = r.Execute(context.Background())
	}
	if err != nil {
		t.Fatalf("status %s: %v", res.Status, err)
	}
	var got []string
	for _, m := range res.Messages {
		got = append(got, m.From+": "+m.Content)
	}
	want := []string{"you: Person's argument 1: spaces.", "critic: answer to t2/critic", "you: Person's argument 3: spaces.", "critic: answer to t4/critic"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("messages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, req := range srv.Requests() {
		if k := callKey(req); strings.HasSuffix(k, "/you") {
			t.Errorf("the person's turn %s was sent to the endpoint", k)
		}
	}
	if srv.Count() != 2 {
		t.Errorf("%d requests, want 2 (the critic's turns)", srv.Count())
	}
	if _, ok := res.Usage.ByAgent["you"]; ok || res.Usage.Total.Calls != 2 {
		t.Errorf("usage counts the person's turns: %+v", res.Usage.Total)
	}
	if report, err := os.ReadFile(filepath.Join(r.Dir, "report.md")); err != nil || !strings.Contains(string(report), "| you | You |  | a person (human: true) |") {
		t.Errorf("the report does not say a person played you: %v", err)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, answers.TurnsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the finished run keeps turns.json: %v", err)
	}
	human := 0
	for _, ev := range eventsOf(readEvents(t, r.Dir), event.ModelResponse) {
		var rep replayedReply
		if err := json.Unmarshal(ev.Data, &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Source == "human" {
			human++
			if rep.Content != said[ev.Key] {
				t.Errorf("journaled %s = %q, want %q", ev.Key, rep.Content, said[ev.Key])
			}
		}
	}
	if human != 2 {
		t.Errorf("%d replies of source human in the journal, want 2", human)
	}

	recorded, err := LoadReplay(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	before := srv.Count()
	rr, replayed, err := execute(t, plan, Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=Tabs or spaces?"}}, Recording: launch.Recording{Replay: recorded}},
		Settings: Settings{Getenv: func(string) string { return "" }},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stableParts(t, replayed), stableParts(t, res)) {
		t.Errorf("the replay differs:\n%s\n%s", stableParts(t, replayed), stableParts(t, res))
	}
	if srv.Count() != before || rr.CallCounts().Human != 0 {
		t.Errorf("the replay sent %d requests and asked the person %d times", srv.Count()-before, rr.CallCounts().Human)
	}
}

// TestSeatAtTheTerminal: with a terminal (Options.Ask) the person's turns
// are asked there as the run goes, each shown with the agent's prompt, and
// the run finishes without waiting.
func TestSeatAtTheTerminal(t *testing.T) {
	srv := llmtest.New(t, keyed(answerOf))
	var shown bytes.Buffer
	opts := Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=Tabs or spaces?"}}},
		Settings: Settings{Getenv: envFor(srv.URL), Ask: answers.Terminal(strings.NewReader("Spaces, always.\nThey read the same everywhere.\n\nStill spaces.\n"), &shown)},
		Seams:    Seams{Sleep: noSleep},
	}
	_, res, err := execute(t, loadPlan(t, "testdata/seat.yaml"), opts)
	if err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("status %s, %v", res.Status, err)
	}
	if got := res.Messages[2].Content; got != "Still spaces." {
		t.Errorf("the second turn's message = %q", got)
	}
	// A message is the lines typed up to an empty line.
	if got := res.Messages[0].Content; got != "Spaces, always.\nThey read the same everywhere." {
		t.Errorf("the first turn's message = %q", got)
	}
	if !strings.Contains(shown.String(), "critic: answer to t2/critic") || !strings.Contains(shown.String(), "--- user ---\nKEY=t3/you") ||
		!strings.Contains(shown.String(), "(debate/-/t3/you)\nyou's message (lines; an empty line ends it") || strings.Contains(shown.String(), "empty = NA") {
		t.Errorf("the terminal did not show the agent's prompt:\n%s", shown.String())
	}
}
