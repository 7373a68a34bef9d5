package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/callview"
	"github.com/debate-runner/runner/runtime/journal"
)

// checkEveryExampleCallShows takes the run directories that `runner test
// --keep keep examples/` kept (TestEveryExampleHasAPassingTest runs it, once
// for both checks: the examples' spec tests are the longest part of this
// package under -race) and opens every call of every run with `runner
// show`: the list names each call the journal has, each call prints its
// messages with their texts (kept runs log their prompts), its reply and,
// where the node parsed one, its output.
func checkEveryExampleCallShows(t *testing.T, keep string) {
	runs, _ := filepath.Glob(filepath.Join(keep, "*", "*", "run.json"))
	if len(runs) < 20 {
		t.Fatalf("runner test --keep kept %d runs, want one per case", len(runs))
	}
	specs := map[string]bool{}
	calls, outputs, repairs := 0, 0, 0
	for _, manifest := range runs {
		dir := filepath.Dir(manifest)
		evs, err := journal.Read(filepath.Join(dir, "journal.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for _, ev := range evs {
			if ev.Type == "model_request" || ev.Type == "model_response" {
				want[ev.Key] = true
			}
		}
		code, out, errOut := invoke(t, nil, "show", dir, "--json")
		if code != exitcode.OK {
			t.Fatalf("runner show %s: exit %d: %s", dir, code, errOut)
		}
		var list struct {
			Spec  string             `json:"spec"`
			Calls []callview.Summary `json:"calls"`
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatalf("runner show %s --json: %v\n%s", dir, err, out)
		}
		specs[list.Spec] = true
		if len(list.Calls) != len(want) {
			t.Errorf("%s: runner show lists %d calls, the journal has %d", dir, len(list.Calls), len(want))
		}
		code, text, _ := invoke(t, nil, "show", dir)
		if code != exitcode.OK {
			t.Fatalf("runner show %s: exit %d", dir, code)
		}
		// Every call is read and written through callview, which the
		// command calls; the command itself is run on a few calls of each
		// run (the first, the last, the first with a parsed output and the
		// first with repairs), as running it on each of some 1,650 calls
		// re-reads the journal as often and took minutes under -race.
		view, err := callview.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		viaCLI := map[string]bool{}
		if n := len(list.Calls); n > 0 {
			viaCLI[list.Calls[0].Key], viaCLI[list.Calls[n-1].Key] = true, true
		}
		sawOutput, sawRepair := false, false
		for _, s := range list.Calls {
			if !want[s.Key] {
				t.Errorf("%s: runner show lists %s, which the journal does not have", dir, s.Key)
			}
			if !strings.Contains(text, s.Key) {
				t.Errorf("%s: the text list lacks %s", dir, s.Key)
			}
			calls++
			c, ok := view.Call(s.Key)
			if !ok {
				t.Fatalf("%s: callview has no call %s", dir, s.Key)
			}
			if len(c.Output) > 0 && !sawOutput {
				sawOutput, viaCLI[s.Key] = true, true
			}
			if len(c.Repairs) > 0 && !sawRepair {
				sawRepair, viaCLI[s.Key] = true, true
			}
			var b strings.Builder
			if err := callview.Write(&b, c); err != nil {
				t.Fatalf("%s %s: %v", dir, s.Key, err)
			}
			checkShownCall(t, dir, s.Key, c, b.String())
			if len(c.Output) > 0 {
				outputs++
			}
			repairs += len(c.Repairs)
		}
		for key := range viaCLI {
			code, out, errOut := invoke(t, nil, "show", dir, key, "--json")
			if code != exitcode.OK {
				t.Fatalf("runner show %s %s --json: exit %d: %s", dir, key, code, errOut)
			}
			var c callview.Call
			if err := json.Unmarshal([]byte(out), &c); err != nil {
				t.Fatalf("runner show %s %s --json: %v", dir, key, err)
			}
			code, out, errOut = invoke(t, nil, "show", dir, key)
			if code != exitcode.OK {
				t.Fatalf("runner show %s %s: exit %d: %s", dir, key, code, errOut)
			}
			checkShownCall(t, dir, key, &c, out)
		}
	}
	if len(specs) < 15 {
		t.Errorf("calls of %d specs shown, want every example's", len(specs))
	}
	if outputs == 0 || repairs == 0 {
		t.Errorf("%d calls shown, %d with a parsed output and %d repairs: the examples' tests have both", calls, outputs, repairs)
	}
	t.Logf("%d calls of %d runs of %d specs shown; %d with a parsed output, %d repairs", calls, len(runs), len(specs), outputs, repairs)
}

// checkShownCall checks one call as runner show gives it: c its JSON form,
// text its text form.
func checkShownCall(t *testing.T, dir, key string, c *callview.Call, text string) {
	t.Helper()
	if c.Key != key {
		t.Errorf("runner show %s %s shows call %s", dir, key, c.Key)
	}
	if c.Requested {
		if len(c.Messages) == 0 {
			t.Errorf("%s %s: no messages", dir, key)
		}
		for i, m := range c.Messages {
			if m.TextFrom != "journal" || len(m.Text) != m.Chars {
				t.Errorf("%s %s: message %d (%s, %d chars) has no logged text (from %q, %d chars)", dir, key, i+1, m.Role, m.Chars, m.TextFrom, len(m.Text))
			}
		}
	}
	for _, part := range []string{"Call " + key, "Messages sent", "Reply"} {
		if !strings.Contains(text, part) {
			t.Errorf("runner show %s %s lacks %q:\n%s", dir, key, part, text)
		}
	}
	if c.Done && c.Reply != "" {
		first := strings.TrimSpace(strings.SplitN(strings.TrimSpace(c.Reply), "\n", 2)[0])
		if !strings.Contains(text, first) {
			t.Errorf("runner show %s %s does not print the reply %q", dir, key, first)
		}
	}
	if len(c.Output) > 0 && !strings.Contains(text, "Parsed output") {
		t.Errorf("runner show %s %s does not print its parsed output", dir, key)
	}
}

func TestShowUsageErrors(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := invoke(t, nil, "show", filepath.Join(dir, "nope"))
	if code != exitcode.Usage || !strings.Contains(stderr, "not a run directory") {
		t.Errorf("runner show of a missing run: exit %d, %s", code, stderr)
	}
	keep := t.TempDir()
	if code, out, errOut := invoke(t, nil, "test", "--keep", keep, "../../examples/reasoning-debate/spec.test.yaml"); code != exitcode.OK {
		t.Fatalf("runner test: %d\n%s%s", code, out, errOut)
	}
	runs, _ := filepath.Glob(filepath.Join(keep, "*", "*", "run.json"))
	if len(runs) == 0 {
		t.Fatal("no run kept")
	}
	run := filepath.Dir(runs[0])
	code, _, stderr = invoke(t, nil, "show", run, "no/such/call")
	if code != exitcode.Usage || !strings.Contains(stderr, `has no call "no/such/call"`) || !strings.Contains(stderr, "lists them") {
		t.Errorf("runner show of a missing call: exit %d, %s", code, stderr)
	}
	// A run id is found in --runs-dir; a number picks from the list.
	code, out, stderr := invoke(t, nil, "show", filepath.Base(run), "1", "--runs-dir", filepath.Dir(run))
	if code != exitcode.OK || !strings.HasPrefix(out, "Call ") {
		t.Errorf("runner show ID 1 --runs-dir: exit %d\n%s%s", code, out, stderr)
	}
}

// TestShowReplayedCall: a --replay run does not ask its calls again; its
// call's page shows the reply and the messages the recording sent.
func TestShowReplayedCall(t *testing.T) {
	srv := llmtest.New(t, solver)
	runs := t.TempDir()
	q := "question=What is the result of 10+20*30+40-5*6?"
	_, stderr := mustRun(t, live(srv), "run", debateSpec, "-i", q, "--runs-dir", runs, "-q", "--log-prompts")
	recording := runDirFrom(t, stderr)
	_, stderr = mustRun(t, map[string]string{}, "run", debateSpec, "--replay", recording, "--runs-dir", runs, "-q")
	replay := runDirFrom(t, stderr)
	code, out, errOut := invoke(t, nil, "show", replay, "1", "--json")
	if code != exitcode.OK {
		t.Fatalf("runner show: %d %s", code, errOut)
	}
	var c callview.Call
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	if c.Requested || c.Source != "replay" || c.RequestFrom == "" || len(c.Messages) == 0 || c.Messages[0].TextFrom != "journal" || c.Reply == "" {
		t.Errorf("the replayed call: %+v", c)
	}
	code, out, _ = invoke(t, nil, "show", replay, "1")
	if code != exitcode.OK || !strings.Contains(out, "As the recording asked them") || !strings.Contains(out, "replay (a recorded run's reply)") {
		t.Errorf("runner show of a replayed call:\n%s", out)
	}
}
