package runtime

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/rundir"
)

// TestReplyDurableBeforeLaterReply checks what a machine crash may lose
// now that a call is sent while the replies before it are synced (see
// syncedEvents): when a model call's reply is journaled, every reply
// journaled before its request is durable. The server answers at once,
// sooner than an fsync, so a reply handed on without waiting for the
// sync would be journaled first.
func TestReplyDurableBeforeLaterReply(t *testing.T) {
	srv := llmtest.New(t, keyed(answerOf))
	opts := debateOpts(srv.URL)
	var (
		mu       sync.Mutex
		run      *Run
		lastResp int64
		need     = map[string]int64{}
		checked  int
	)
	opts.Observer = func(n Notice) {
		mu.Lock()
		defer mu.Unlock()
		if n.Event == nil || run == nil {
			return // Start's own notices come before the test holds the run
		}
		switch n.Event.Type {
		case event.ModelRequest:
			need[n.Event.Key] = lastResp
		case event.ModelResponse:
			if d := run.journal.Durable(); d < need[n.Event.Key] {
				t.Errorf("reply of %s journaled (seq %d) while the journal was durable to %d only; its request came after the reply at %d",
					n.Event.Key, n.Event.Seq, d, need[n.Event.Key])
			}
			if need[n.Event.Key] > 0 {
				checked++
			}
			lastResp = n.Event.Seq
		}
	}
	opts.RunsDir = t.TempDir()
	r, err := Start(loadPlan(t, "testdata/debate.yaml"), opts)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	run = r
	mu.Unlock()
	if _, err := r.Execute(t.Context()); err != nil {
		t.Fatal(err)
	}
	if checked < debateCalls/2 {
		t.Errorf("checked %d replies made after earlier ones, want most of the %d calls", checked, debateCalls)
	}
}

// TestEarlyCallsWaitForFolder checks a run whose first calls go out while
// its folder is made durable (Settings.EarlyCalls): no reply is journaled
// before the folder is in place under its name, and the run ends with its
// folder whole and no staging folder left.
func TestEarlyCallsWaitForFolder(t *testing.T) {
	srv := llmtest.New(t, keyed(answerOf))
	opts := debateOpts(srv.URL)
	opts.RunsDir = t.TempDir()
	opts.EarlyCalls = true
	var (
		mu      sync.Mutex
		dir     string
		replies int
	)
	opts.Observer = func(n Notice) {
		if n.Event == nil || n.Event.Type != event.ModelResponse {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		replies++
		if _, err := os.Stat(filepath.Join(dir, "run.json")); err != nil {
			t.Errorf("reply of %s journaled before the run's folder was in place: %v", n.Event.Key, err)
		}
	}
	r, err := Start(loadPlan(t, "testdata/debate.yaml"), opts)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	dir = r.Dir
	mu.Unlock()
	res, err := r.Execute(t.Context())
	if err != nil || res.Status != "completed" {
		t.Fatalf("run ended %v, %v", res, err)
	}
	if replies != debateCalls {
		t.Errorf("%d replies journaled, want %d", replies, debateCalls)
	}
	entries, err := os.ReadDir(opts.RunsDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != filepath.Base(r.Dir) {
		t.Errorf("runs folder holds %v, want only %s", entries, filepath.Base(r.Dir))
	}
	for _, f := range []string{"run.json", "spec.yaml", "journal.jsonl", "result.json", "report.md"} {
		if _, err := os.Stat(filepath.Join(r.Dir, f)); err != nil {
			t.Error(err)
		}
	}
	if n := len(eventsOf(readEvents(t, r.Dir), event.ModelResponse)); n != debateCalls {
		t.Errorf("journal holds %d replies, want %d", n, debateCalls)
	}
}

// TestEarlyCallsFolderNotSetUp: when a new run's folder cannot be put in
// place while its first calls are out, the run fails saying why, journals
// no reply, and leaves nothing in the runs folder (there is nothing to
// resume), not even the hidden folder.
func TestEarlyCallsFolderNotSetUp(t *testing.T) {
	srv := llmtest.New(t, keyed(answerOf))
	opts := debateOpts(srv.URL)
	opts.RunsDir = t.TempDir()
	opts.EarlyCalls = true
	failed := errors.New("no space left on device")
	publish = func(staging, final string) error { return failed }
	t.Cleanup(func() { publish = rundir.Publish })
	var mu sync.Mutex
	var replies int
	opts.Observer = func(n Notice) {
		if n.Event != nil && n.Event.Type == event.ModelResponse {
			mu.Lock()
			replies++
			mu.Unlock()
		}
	}
	r, err := Start(loadPlan(t, "testdata/debate.yaml"), opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Execute(t.Context())
	if !errors.Is(err, failed) || !strings.Contains(err.Error(), "setting up the run's folder") {
		t.Fatalf("run ended with %v, want it to say its folder was not set up", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if replies != 0 {
		t.Errorf("%d replies told as journaled in a folder never set up", replies)
	}
	entries, err := os.ReadDir(opts.RunsDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("runs folder holds %v, want nothing", entries)
	}
	if r.Dir != "" {
		t.Errorf("the run names %s as its folder, which does not exist", r.Dir)
	}
}
