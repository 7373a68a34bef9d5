package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/spec"
)

// driftSpec is testdata/simple.yaml with its template's text given.
func driftSpec(t *testing.T, text string) *spec.Plan {
	t.Helper()
	base, err := os.ReadFile("testdata/simple.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(base), `answer: "KEY={{.Agent.ID}}/r{{.Round}}/answer\n{{.Inputs.question}}"`,
		fmt.Sprintf("answer: %q", "KEY={{.Agent.ID}}/r{{.Round}}/answer\n"+text+"{{.Inputs.question}}"), 1)
	return loadPlan(t, writeSpec(t, t.TempDir(), src))
}

// TestReplayWithChangedPromptsWarnsOrFails: a recording replayed with a
// template whose text changed at a random place is served with a warning
// naming each call and the first message that differs, and the result
// lists the calls (replayed with changed prompts); --strict fails at the
// first such call. An unchanged template replays without a word.
func TestReplayWithChangedPromptsWarnsOrFails(t *testing.T) {
	srv := llmtest.New(t, keyed(answerOf))
	rng := rand.New(rand.NewPCG(33, 1))
	for i := range 6 {
		text := randomText(rng, 1+rng.IntN(40))
		orig := driftSpec(t, text)
		rec, _, err := execute(t, orig, Options{
			Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}},
			Settings: Settings{Getenv: envFor(srv.URL)},
		})
		if err != nil {
			t.Fatal(err)
		}
		changed := i%3 != 0
		edited := text
		if changed {
			at := rng.IntN(len(text) + 1)
			edited = text[:at] + randomText(rng, 1+rng.IntN(5)) + text[at:]
		}
		recording, _, _, err := LoadRecording(rec.Dir, false)
		if err != nil {
			t.Fatal(err)
		}
		noNet := Settings{Getenv: func(string) string { return "" }}
		_, res, err := execute(t, driftSpec(t, edited), Options{
			Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}, Recording: recording},
			Settings: noNet,
		})
		if err != nil {
			t.Fatalf("replay %d: %v", i, err)
		}
		if !changed {
			if len(res.ChangedPrompts) != 0 || len(res.Warnings) != 0 {
				t.Errorf("replay %d of the same prompts: changed %v, warnings %v", i, res.ChangedPrompts, res.Warnings)
			}
			continue
		}
		if len(res.ChangedPrompts) != 2 {
			t.Errorf("replay %d with %q for %q: changed prompts %v, want both calls", i, edited, text, res.ChangedPrompts)
		}
		for _, key := range []string{"answer/-/a", "answer/-/b"} {
			found := false
			for _, w := range res.Warnings {
				found = found || strings.Contains(w, "model call "+key+" is served from the recording although its prompt differs from the recorded one from message 1 (user")
			}
			if !found {
				t.Errorf("replay %d: no warning naming %s and message 1: %v", i, key, res.Warnings)
			}
		}
		recording.Strict = true
		_, _, err = execute(t, driftSpec(t, edited), Options{
			Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}, Recording: recording},
			Settings: noNet,
		})
		var de *DriftError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), "--strict") {
			t.Errorf("strict replay %d: err = %v, want a DriftError", i, err)
		}
	}
}

// FuzzFirstMessageDrift: for messages and a copy with one message changed
// (or one added or dropped at the end), the drift named is that message's.
func FuzzFirstMessageDrift(f *testing.F) {
	f.Add([]byte("system\x00be brief\x00user\x00what is 2+2\x00"), uint8(1), uint8(0), "+")
	f.Fuzz(func(t *testing.T, data []byte, which, op uint8, insert string) {
		parts := strings.Split(string(data), "\x00")
		var msgs []kit.ChatMessage
		for i := 0; i+1 < len(parts) && len(msgs) < 8; i += 2 {
			msgs = append(msgs, kit.ChatMessage{Role: parts[i], Content: parts[i+1]})
		}
		if len(msgs) == 0 {
			return
		}
		was := make([]launch.RecordedMessage, len(msgs))
		for i, m := range msgs {
			sum := sha256.Sum256([]byte(m.Content))
			was[i] = launch.RecordedMessage{Role: m.Role, Chars: len(m.Content), Digest: hex.EncodeToString(sum[:8]), Content: m.Content}
		}
		now := append([]kit.ChatMessage(nil), msgs...)
		k := int(which) % len(msgs)
		var want string
		switch op % 3 {
		case 0:
			if insert == "" {
				return
			}
			now[k].Content += insert
			want = fmt.Sprintf("from message %d (", k+1)
		case 1:
			now = append(now, kit.ChatMessage{Role: "user", Content: insert})
			want = fmt.Sprintf("message %d (user) is new", len(msgs)+1)
		case 2:
			now = now[:len(now)-1]
			want = fmt.Sprintf("it has %d messages, the recorded one %d", len(msgs)-1, len(msgs))
		}
		got := firstMessageDrift(now, was)
		if !strings.Contains(got, want) {
			t.Fatalf("firstMessageDrift = %q, want it to hold %q", got, want)
		}
		if same := firstMessageDrift(msgs, was); same != "its prompt differs from the recorded one" {
			t.Fatalf("the same messages: %q", same)
		}
	})
}

// TestResumeOfACompletedRunRefusesAndWritesNothing: a completed run,
// even one without its reports (as a first-day runner left it), is refused
// with an ErrCompleted that says so, and no file of it changes.
func TestResumeOfACompletedRunRefusesAndWritesNothing(t *testing.T) {
	srv := llmtest.New(t, keyed(answerOf))
	r, _, err := execute(t, simpleSpec(t, ""), Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}},
		Settings: Settings{Getenv: envFor(srv.URL)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"report.md", "report.html", ".lock"} {
		if err := os.Remove(filepath.Join(r.Dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshotDir(t, r.Dir)
	_, err = Resume(r.Dir, nodes.Registry(), Options{Settings: Settings{Getenv: envFor(srv.URL)}})
	if !errors.Is(err, ErrCompleted) || !strings.Contains(err.Error(), "already completed (status completed") || !strings.Contains(err.Error(), "nothing in "+r.Dir+" was changed") || !strings.Contains(err.Error(), "report.md or report.html") {
		t.Fatalf("resume: %v", err)
	}
	after := snapshotDir(t, r.Dir)
	for name, data := range before {
		if after[name] != data {
			t.Errorf("%s changed", name)
		}
	}
	if len(after) != len(before) {
		t.Errorf("files before %d, after %d", len(before), len(after))
	}
}

// TestStrictResumeFailsOnAChangedRequest: resuming with a fixed spec whose
// prompt changed makes the call again with a warning naming the message;
// --strict fails instead.
func TestStrictResumeFailsOnAChangedRequest(t *testing.T) {
	// Bob's call fails, so the run can be resumed; Alice's is journaled.
	// (Bob's failure waits for Alice's reply to be on its way.)
	aliceDone := make(chan struct{})
	var once sync.Once
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		if strings.HasPrefix(callKey(r), "b/") {
			select {
			case <-aliceDone:
				time.Sleep(300 * time.Millisecond)
			case <-time.After(5 * time.Second):
			}
			return llmtest.Reply{Status: 400, ErrorMessage: "no"}
		}
		defer once.Do(func() { close(aliceDone) })
		return llmtest.Reply{Content: answerOf(callKey(r))}
	})
	plan := driftSpec(t, "first text ")
	r, _, err := execute(t, plan, Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}},
		Settings: Settings{Getenv: envFor(srv.URL)},
		Seams:    Seams{Sleep: noSleep},
	})
	if err == nil {
		t.Fatal("the first attempt should fail")
	}
	srv.SetHandler(keyed(answerOf))
	fixed := driftSpec(t, "other text ")
	opts := Options{Settings: Settings{Getenv: envFor(srv.URL)}, Resuming: Resuming{Spec: fixed.Path}, Seams: Seams{Sleep: noSleep}}
	opts.Strict = true
	res, err := Resume(r.Dir, nodes.Registry(), opts)
	if err == nil {
		_, err = res.Execute(t.Context())
	}
	var de *DriftError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "from message 1 (user") {
		t.Fatalf("strict resume: %v, want a DriftError naming message 1", err)
	}
}

func randomText(rng *rand.Rand, n int) string {
	const letters = "abcdefghij KLMNOP,.\n"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[rng.IntN(len(letters))]
	}
	return string(b)
}

func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		out[p] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
