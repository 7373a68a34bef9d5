package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/result"
)

// ev is a journal event for the tests below.
func ev(typ event.Type, key string, data map[string]any) journal.Event {
	raw, _ := json.Marshal(data)
	return journal.Event{Type: typ, Key: key, Data: raw}
}

// failedOnReply is the journal of a run whose judge (agent b) failed on a
// reply still invalid after one repair, all calls answered.
func failedOnReply() []journal.Event {
	return []journal.Event{
		ev("run_started", "", nil),
		ev("model_request", "first/-/a", map[string]any{"agent": "a", "node": "first"}),
		ev("model_response", "first/-/a", map[string]any{"content": "ok"}),
		ev("model_request", "judge/-/a", map[string]any{"agent": "a", "node": "judge"}),
		ev("model_response", "judge/-/a", map[string]any{"content": "{}"}),
		ev("model_request", "judge/-/b", map[string]any{"agent": "b", "node": "judge"}),
		ev("model_response", "judge/-/b", map[string]any{"content": "bad"}),
		ev("repair", "judge/-/b", nil),
		ev("model_request", "judge/-/b#repair1", map[string]any{"agent": "b", "node": "judge"}),
		ev("model_response", "judge/-/b#repair1", map[string]any{"content": "bad"}),
		ev("node_failed", "judge/-", map[string]any{"node": "judge", "error": `node "judge", agent "b": reply is not valid json after 1 repair(s)`}),
		ev("error", "", map[string]any{"error": `node "judge", agent "b": reply is not valid json after 1 repair(s)`, "kind": failFailure}),
		ev("run_finished", "", map[string]any{"status": result.StatusFailed}),
	}
}

// priorOf reads events as readPrior would.
func priorOf(t *testing.T, events []journal.Event) *prior {
	t.Helper()
	dir := t.TempDir()
	w, err := journal.Create(dir + "/journal.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if _, err := w.Append(e.Type, e.Key, e.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := readPrior(dir + "/journal.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStuckRule: which failed attempts a resume as it is would only
// replay, and which calls --resample asks afresh.
func TestStuckRule(t *testing.T) {
	base := failedOnReply()
	p := priorOf(t, base)
	st := p.stuck("RUN")
	if st == nil {
		t.Fatal("a failure on answered, journaled replies is not a dead end")
	}
	// The error names agent b: only b's calls, with the repair, not a's.
	if got := strings.Join(st.Calls, ","); got != "judge/-/b,judge/-/b#repair1" || st.Node != "judge" {
		t.Errorf("failed calls %q of node %q", got, st.Node)
	}

	replace := func(i int, e journal.Event) []journal.Event {
		out := append([]journal.Event(nil), base...)
		out[i] = e
		return out
	}
	insert := func(i int, e ...journal.Event) []journal.Event {
		out := append([]journal.Event(nil), base[:i]...)
		out = append(out, e...)
		return append(out, base[i:]...)
	}
	last := len(base) - 1
	errAt := last - 1
	notStuck := map[string][]journal.Event{
		"interrupted":                            replace(errAt, ev("error", "", map[string]any{"error": "interrupted", "kind": failInterrupted})),
		"interrupted, old journal without kinds": replace(errAt, ev("error", "", map[string]any{"error": "interrupted"})),
		"endpoint gave up": insert(errAt, ev("model_request", "judge/-/c", map[string]any{"agent": "c"}),
			ev("model_error", "judge/-/c", map[string]any{"error": "503"})),
		"a call cancelled in flight":        insert(errAt, ev("model_request", "judge/-/c", map[string]any{"agent": "c"})),
		"records not written":               replace(last, ev("run_finished", "", map[string]any{"status": result.StatusFailed, "error": "disk full"})),
		"killed (no run_finished)":          base[:last],
		"waiting":                           replace(last, ev("run_finished", "", map[string]any{"status": result.StatusWaiting})),
		"resumed since":                     append(append([]journal.Event(nil), base...), ev("run_resumed", "", nil)),
		"replay lacked a call, old journal": replace(errAt, ev("error", "", map[string]any{"error": (&calls.MissingError{Key: "x"}).Error()})),
	}
	for name, events := range notStuck {
		if st := priorOf(t, events).stuck("RUN"); st != nil {
			t.Errorf("%s: taken for a dead end: %v", name, st)
		}
	}
	// An earlier attempt's endpoint failure does not count: only the last
	// attempt's calls do.
	earlier := append([]journal.Event{
		ev("run_started", "", nil),
		ev("model_request", "first/-/a", map[string]any{"agent": "a"}),
		ev("model_error", "first/-/a", map[string]any{"error": "503"}),
		ev("error", "", map[string]any{"error": "model call first/-/a failed", "kind": failEndpoint}),
		ev("run_finished", "", map[string]any{"status": result.StatusFailed}),
		ev("run_resumed", "", nil),
	}, base[1:]...)
	if priorOf(t, earlier).stuck("RUN") == nil {
		t.Error("a dead end after an earlier endpoint failure was not found")
	}
	// A failure that names no agent of the node resamples all its calls; a
	// failure outside any node has none to resample.
	all := replace(10, ev("node_failed", "judge/-", map[string]any{"node": "judge", "error": "rendering template judge: boom"}))
	if st := priorOf(t, all).stuck("RUN"); st == nil || len(st.Calls) != 3 {
		t.Errorf("a node failure naming no agent: %+v", st)
	}
	output := append(append([]journal.Event(nil), base[:10]...), ev("error", "", map[string]any{"error": `output "x": boom`, "kind": failFailure}), base[last])
	if st := priorOf(t, output).stuck("RUN"); st == nil || st.Node != "" || len(st.Calls) != 0 || strings.Contains(st.Error(), "--resample") {
		t.Errorf("an output failure: %+v", st)
	}
}

// TestStuckOnFallback: an output that fails when no node failed rests on
// the replies that gave way to a fallback output, which --resample asks
// afresh; a chain asked again since it fell back is no longer one of them.
func TestStuckOnFallback(t *testing.T) {
	events := []journal.Event{
		ev("run_started", "", nil),
		ev("model_request", "first/-/a", map[string]any{"agent": "a"}),
		ev("model_response", "first/-/a", map[string]any{"content": "ok"}),
		ev("model_request", "judge/-/b", map[string]any{"agent": "b"}),
		ev("model_response", "judge/-/b", map[string]any{"content": "bad"}),
		ev("model_request", "judge/-/b#repair1", map[string]any{"agent": "b"}),
		ev("model_response", "judge/-/b#repair1", map[string]any{"content": "bad"}),
		ev("fallback", "judge/-/b#repair1", map[string]any{"error": "not JSON"}),
		ev("error", "", map[string]any{"error": `output "x": <nil> + string`, "kind": failFailure}),
		ev("run_finished", "", map[string]any{"status": result.StatusFailed}),
	}
	st := priorOf(t, events).stuck("RUN")
	if st == nil || !st.Fallback || strings.Join(st.Calls, ",") != "judge/-/b,judge/-/b#repair1" || !strings.Contains(st.Error(), "--resample") {
		t.Fatalf("a failure on a fallback output: %+v", st)
	}
	// The chain was asked afresh since (and did not fall back): the output
	// failure no longer rests on a fallback.
	again := append(append([]journal.Event(nil), events[:8]...),
		ev("run_finished", "", map[string]any{"status": result.StatusFailed}),
		ev("run_resumed", "", nil),
		ev("model_request", "judge/-/b", map[string]any{"agent": "b", "resample": 1}),
		ev("model_response", "judge/-/b", map[string]any{"content": "{}"}),
		events[8], events[9])
	st = priorOf(t, again).stuck("RUN")
	if st == nil || len(st.Calls) != 0 || strings.Contains(st.Error(), "--resample") {
		t.Errorf("after the chain was asked afresh: %+v", st)
	}
}

func TestFailureKind(t *testing.T) {
	for err, want := range map[error]string{
		ErrInterrupted:                 failInterrupted,
		context.Canceled:               failInterrupted,
		&calls.EndpointError{Key: "k"}: failEndpoint,
		fmt.Errorf("x: %w", &calls.MissingError{Key: "k"}):  failReplayMissing,
		fmt.Errorf("node %q: reply is not valid json", "n"): failFailure,
	} {
		if got := failureKind(err); got != want {
			t.Errorf("failureKind(%v) = %q, want %q", err, got, want)
		}
	}
}
