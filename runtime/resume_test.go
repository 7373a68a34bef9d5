package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/result"
)

// respondedCalls returns the journal keys of every call whose model_response
// is in the run's journal.
func respondedCalls(t testing.TB, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, ev := range eventsOf(readEvents(t, dir), "model_response") {
		out[ev.Key] = true
	}
	return out
}

// journalKeyOf maps a prompt KEY= marker of the debate spec to the call key
// the runtime journals, e.g. "a>b/r2/critique" -> "critique/round=2/a>b".
func journalKeyOf(promptKey string) string {
	parts := strings.Split(promptKey, "/")
	if len(parts) != 3 {
		return ""
	}
	return parts[2] + "/round=" + strings.TrimPrefix(parts[1], "r") + "/" + parts[0]
}

// TestResumeAfterEndpointFailure: a run that failed because the endpoint
// went down resumes once it is back, asks only the calls it had no answer
// for, and ends with the result of an uninterrupted run.
func TestResumeAfterEndpointFailure(t *testing.T) {
	plan := loadPlan(t, "testdata/debate.yaml")
	clean := llmtest.New(t, keyed(answerOf))
	cleanRun, _, err := execute(t, plan, debateOpts(clean.URL))
	if err != nil {
		t.Fatal(err)
	}

	// The endpoint dies after 15 successful calls (inside round 1's refine
	// or round 2's critique) and stays down.
	var served atomic.Int64
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		if served.Add(1) > 15 {
			return llmtest.Reply{Status: 503, ErrorMessage: "down for maintenance"}
		}
		return llmtest.Reply{Content: answerOf(callKey(r))}
	})
	opts := debateOpts(srv.URL)
	opts.RunsDir = t.TempDir()
	r, res, err := execute(t, plan, opts)
	var ee *calls.EndpointError
	if !errors.As(err, &ee) || res.Status != result.StatusFailed {
		t.Fatalf("first attempt: err = %v, status %v; want an endpoint failure", err, res.Status)
	}
	before := respondedCalls(t, r.Dir)
	if len(before) == 0 || len(before) >= debateCalls {
		t.Fatalf("%d calls answered before the failure; the test needs a partial run", len(before))
	}

	srv.SetHandler(keyed(answerOf))
	firstRequests := srv.Count()
	resumed, err := Resume(r.Dir, nodes.Registry(), Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}})
	if err != nil {
		t.Fatal(err)
	}
	res, err = resumed.Execute(context.Background())
	if err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("resume: err = %v, status %s", err, res.Status)
	}
	again := srv.Requests()[firstRequests:]
	for _, req := range again {
		if before[journalKeyOf(callKey(req))] {
			t.Errorf("call %s was answered before the failure but asked again", callKey(req))
		}
	}
	if len(again) != debateCalls-len(before) {
		t.Errorf("resume made %d calls, want %d (the %d unanswered ones)", len(again), debateCalls-len(before), debateCalls-len(before))
	}
	if got, want := outputsAndMessages(t, r.Dir), outputsAndMessages(t, cleanRun.Dir); string(got) != string(want) {
		t.Errorf("resumed result differs from an uninterrupted run:\n got %s\nwant %s", got, want)
	}
	if got, want := stableResult(t, r.Dir), stableResult(t, cleanRun.Dir); string(got) != string(want) {
		t.Errorf("resumed result.json differs beyond timings:\n got %s\nwant %s", got, want)
	}
	evs := readEvents(t, r.Dir)
	if n := len(eventsOf(evs, "run_resumed")); n != 1 {
		t.Errorf("%d run_resumed events", n)
	}
	// Every message is a reply, whose text the journal already holds (from
	// before the failure or from the resumed calls): message events refer to
	// it by digest instead of repeating it.
	resumedAt := eventsOf(evs, "run_resumed")[0].Seq
	for _, ev := range eventsOf(evs, "message") {
		var m struct {
			Content string `json:"content"`
			Digest  string `json:"content_digest"`
			Output  any    `json:"output"`
		}
		if err := json.Unmarshal(ev.Data, &m); err != nil {
			t.Fatal(err)
		}
		if ev.Seq > resumedAt && (m.Content != "" || m.Digest == "" || m.Output != nil) {
			t.Errorf("message event %s after the resume repeats its reply: %s", ev.Key, ev.Data)
		}
	}

	// The resumed run walks the flow again but does not journal again what
	// the journal already holds: each message and each node start appears
	// once, as in the journal of the uninterrupted run.
	for _, typ := range []event.Type{"message", "node_started", "node_finished", "output"} {
		seen := map[string]int{}
		for _, ev := range eventsOf(evs, typ) {
			seen[ev.Key]++
		}
		clean := map[string]int{}
		for _, ev := range eventsOf(readEvents(t, cleanRun.Dir), typ) {
			clean[ev.Key]++
		}
		if !reflect.DeepEqual(seen, clean) {
			t.Errorf("%s events by key after resume = %v, want those of an uninterrupted run %v", typ, seen, clean)
		}
	}

	// A completed run has nothing to resume.
	if _, err := Resume(r.Dir, nodes.Registry(), Options{Settings: Settings{Getenv: envFor(srv.URL)}}); !errors.Is(err, ErrCompleted) {
		t.Errorf("resume of a completed run: err = %v, want ErrCompleted", err)
	}
}

// TestResumeTornJournal: a journal whose last line was cut mid-write (a
// crash) resumes: the torn line is dropped, and the call it described is
// simply asked again.
func TestResumeTornJournal(t *testing.T) {
	plan := loadPlan(t, "testdata/debate.yaml")
	var served atomic.Int64
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		if served.Add(1) > 20 {
			return llmtest.Reply{Status: 400, ErrorMessage: "stop here"}
		}
		return llmtest.Reply{Content: answerOf(callKey(r))}
	})
	opts := debateOpts(srv.URL)
	r, _, err := execute(t, plan, opts)
	if err == nil {
		t.Fatal("the first attempt should fail")
	}
	// Cut the journal in the middle of its last model_response, as if the
	// process died while writing it; everything after it is lost too.
	path := filepath.Join(r.Dir, "journal.jsonl")
	data := mustRead(t, path)
	last := strings.LastIndex(string(data), `"type":"model_response"`)
	lineStart := strings.LastIndexByte(string(data[:last]), '\n') + 1
	lineEnd := lineStart + strings.IndexByte(string(data[lineStart:]), '\n')
	cut := lineStart + (lineEnd-lineStart)/2
	var torn struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(data[lineStart:lineEnd], &torn); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data[:cut], 0o600); err != nil {
		t.Fatal(err)
	}
	answered := respondedCalls(t, r.Dir)
	if answered[torn.Key] {
		t.Fatalf("the torn response %s is still readable", torn.Key)
	}

	srv.SetHandler(keyed(answerOf))
	n0 := srv.Count()
	resumed, err := Resume(r.Dir, nodes.Registry(), Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}})
	if err != nil {
		t.Fatalf("resume with a torn last line: %v", err)
	}
	res, err := resumed.Execute(context.Background())
	if err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("resume: %v, status %s", err, res.Status)
	}
	asked := map[string]bool{}
	for _, req := range srv.Requests()[n0:] {
		k := journalKeyOf(callKey(req))
		asked[k] = true
		if answered[k] {
			t.Errorf("call %s asked again although its response survived", k)
		}
	}
	if !asked[torn.Key] {
		t.Errorf("the call whose response was torn (%s) was not asked again", torn.Key)
	}
	var resumedEv struct {
		Truncated int64 `json:"truncated_bytes"`
	}
	rs := eventsOf(readEvents(t, r.Dir), "run_resumed")
	if len(rs) != 1 {
		t.Fatalf("%d run_resumed events", len(rs))
	}
	_ = json.Unmarshal(rs[0].Data, &resumedEv)
	if resumedEv.Truncated != int64(cut-lineStart) {
		t.Errorf("run_resumed reports %d truncated bytes, want %d", resumedEv.Truncated, cut-lineStart)
	}
}

// TestResumeNotARunDir: resuming something that is not a run directory is
// a usage error naming the argument.
func TestResumeNotARunDir(t *testing.T) {
	_, err := Resume(t.TempDir(), nodes.Registry(), Options{})
	var fe *args.FlagError
	if !errors.As(err, &fe) || fe.Flag != "RUN_DIR" {
		t.Errorf("err = %v, want a args.FlagError for RUN_DIR", err)
	}
}
