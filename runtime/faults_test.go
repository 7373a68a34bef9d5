package runtime

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/debate-runner/runner/runtime/launch"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/runtime/result"
)

// firstThen answers fault to the first request and hands the rest to next.
func firstThen(fault llmtest.Reply, next llmtest.Handler) llmtest.Handler {
	var n atomic.Int64
	return func(r llmtest.Request) llmtest.Reply {
		if n.Add(1) == 1 {
			return fault
		}
		return next(r)
	}
}

// TestTransientFaultsRecover: every kind of transient failure on one call is
// retried, journaled as a retry, and the run ends exactly as a clean run.
func TestTransientFaultsRecover(t *testing.T) {
	tests := []struct {
		name   string
		extra  string // appended to the spec; URL stands for the server's
		fault  llmtest.Reply
		status int // status of the journaled retry, 0 for none
		minDur time.Duration
	}{
		{"429 with Retry-After", "", llmtest.Reply{Status: 429, RetryAfter: "0.01"}, 429, 0},
		{"500", "", llmtest.Reply{Status: 500}, 500, 0},
		{"503 overloaded", "", llmtest.Reply{Status: 503, ErrorMessage: "overloaded"}, 503, 0},
		{"hang past the default timeout", "defaults: {timeout: 200ms}\n", llmtest.Reply{Hang: true}, 0, 200 * time.Millisecond},
		{"hang past the endpoint timeout", "endpoints: {local: {base_url: URL, timeout: 200ms}}\nmodels: {default: {model: gpt-4o-mini, endpoint: local}}\n", llmtest.Reply{Hang: true}, 0, 200 * time.Millisecond},
		{"stall mid-stream past the timeout", "defaults: {timeout: 300ms}\nmodels: {default: {model: gpt-4o-mini, stream: true}}\n", llmtest.Reply{Content: "a slow stream of words that stops", ChunkDelay: time.Second}, 200, 300 * time.Millisecond},
		{"malformed JSON body", "", llmtest.Reply{RawBody: `{"id": "x", "choices": [`}, 200, 0},
		{"connection dropped", "", llmtest.Reply{Drop: true}, 0, 0},
		{"no choices", "", llmtest.Reply{RawBody: `{"id":"x","object":"chat.completion","choices":[]}`}, 200, 0},
	}
	clean := llmtest.New(t, keyed(answerOf))
	cleanRun, _, err := execute(t, simpleSpec(t, ""), Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}},
		Settings: Settings{Getenv: envFor(clean.URL)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := outputsAndMessages(t, cleanRun.Dir)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t, firstThen(tt.fault, keyed(answerOf)))
			plan := simpleSpec(t, strings.ReplaceAll(tt.extra, "URL", srv.URL))
			start := time.Now()
			r, res, err := execute(t, plan, Options{
				Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}},
				Settings: Settings{Getenv: envFor(srv.URL)},
				Seams:    Seams{Sleep: noSleep},
			})
			if err != nil {
				t.Fatalf("run failed: %v", err)
			}
			if elapsed := time.Since(start); elapsed < tt.minDur {
				t.Errorf("run took %s; the fault should have cost at least %s", elapsed, tt.minDur)
			}
			if res.Status != result.StatusCompleted {
				t.Errorf("status %q, want completed", res.Status)
			}
			if got := outputsAndMessages(t, r.Dir); string(got) != string(want) {
				t.Errorf("result differs from a clean run:\n got %s\nwant %s", got, want)
			}
			if srv.Count() != 3 {
				t.Errorf("server saw %d requests, want 3 (2 calls + 1 retry)", srv.Count())
			}
			retries := eventsOf(readEvents(t, r.Dir), "retry")
			if len(retries) != 1 {
				t.Fatalf("%d retry events, want 1", len(retries))
			}
			var data struct {
				Attempt int    `json:"attempt"`
				Status  int    `json:"status"`
				Error   string `json:"error"`
			}
			if err := json.Unmarshal(retries[0].Data, &data); err != nil {
				t.Fatal(err)
			}
			if data.Attempt != 1 || data.Status != tt.status || data.Error == "" {
				t.Errorf("retry event = %+v, want attempt 1, status %d and an error", data, tt.status)
			}
			if !strings.HasPrefix(retries[0].Key, "answer/-/") {
				t.Errorf("retry event key %q does not name the call", retries[0].Key)
			}
			if res.Usage.Total.Calls != 2 {
				t.Errorf("usage counts %d calls, want 2 (retries are attempts of one call)", res.Usage.Total.Calls)
			}
		})
	}
}

// TestStreamingMatchesNonStreaming: a streamed model gives the result a
// non-streamed one does, and the requests really were streamed.
func TestStreamingMatchesNonStreaming(t *testing.T) {
	results := map[bool][]byte{}
	for _, stream := range []bool{false, true} {
		srv := llmtest.New(t, keyed(func(k string) string {
			return "Answer to " + k + " with \"quotes\", <tags> & unicode é 🙂, spread over several stream chunks of text."
		}))
		extra := "models: {default: {model: m, stream: false}}\n"
		if stream {
			extra = "models: {default: {model: m, stream: true}}\n"
		}
		r, res, err := execute(t, simpleSpec(t, extra), Options{
			Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}},
			Settings: Settings{Getenv: envFor(srv.URL)},
		})
		if err != nil {
			t.Fatalf("stream=%v: %v", stream, err)
		}
		for _, req := range srv.Requests() {
			if req.Stream != stream || (stream && !req.IncludeUsage) {
				t.Errorf("stream=%v: request stream=%v include_usage=%v", stream, req.Stream, req.IncludeUsage)
			}
		}
		if res.Usage.Total.CompletionTokens == 0 {
			t.Errorf("stream=%v: no completion tokens counted", stream)
		}
		// The two specs differ in their stream setting, so in their digest.
		results[stream] = stripFields(t, mustRead(t, filepath.Join(r.Dir, "result.json")), map[string]bool{"run_id": true, "duration_ms": true, "latency_ms": true, "spec_digest": true})
	}
	if string(results[true]) != string(results[false]) {
		t.Errorf("streamed result differs:\n%s\nnon-streamed:\n%s", results[true], results[false])
	}
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestRetryBudgetExhausted: a call that keeps failing fails the run with an
// EndpointError naming the call and the cause, after exactly the configured
// attempts, with every retry and the error journaled and result.json failed.
// The budget comes from defaults or from the endpoint, which wins.
func TestRetryBudgetExhausted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra string
	}{
		{"defaults", "defaults: {max_retries: 2}\n"},
		{"endpoint", "defaults: {max_retries: 5}\nendpoints: {local: {base_url: URL, max_retries: 2}}\nmodels: {default: {model: m, endpoint: local}}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
				if callKey(r) == "b/r0/answer" {
					return llmtest.Reply{Status: 503, ErrorMessage: "model overloaded"}
				}
				return llmtest.Reply{Content: answerOf(callKey(r))}
			})
			plan := simpleSpec(t, strings.ReplaceAll(tc.extra, "URL", srv.URL))
			r, res, err := execute(t, plan, Options{
				Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}},
				Settings: Settings{Getenv: envFor(srv.URL)},
				Seams:    Seams{Sleep: noSleep},
			})
			checkBudgetExhausted(t, srv, r, res, err)
		})
	}
}

func checkBudgetExhausted(t *testing.T, srv *llmtest.Server, r *Run, res *result.Result, err error) {
	t.Helper()
	var ee *calls.EndpointError
	if !errors.As(err, &ee) {
		t.Fatalf("err = %v (%T), want an *EndpointError", err, err)
	}
	var le *llm.Error
	if !errors.As(err, &le) || le.Status != 503 || le.Attempts != 3 {
		t.Errorf("llm error = %+v, want status 503 after 3 attempts", le)
	}
	for _, want := range []string{"answer/-/b", "503", "model overloaded"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if got := keysOf(srv.Requests())["b/r0/answer"]; got != 3 {
		t.Errorf("failing call was sent %d times, want 3 (1 + max_retries 2)", got)
	}
	if res.Status != result.StatusFailed || !strings.Contains(res.Error, "answer/-/b") {
		t.Errorf("result status %q error %q", res.Status, res.Error)
	}
	var onDisk result.Result
	if err := json.Unmarshal(mustRead(t, filepath.Join(r.Dir, "result.json")), &onDisk); err != nil {
		t.Fatal(err)
	}
	if onDisk.Status != result.StatusFailed || onDisk.Error == "" {
		t.Errorf("result.json status %q error %q", onDisk.Status, onDisk.Error)
	}
	evs := readEvents(t, r.Dir)
	if n := len(eventsOf(evs, "retry")); n != 2 {
		t.Errorf("%d retry events, want 2", n)
	}
	for _, typ := range []event.Type{"model_error", "node_failed", "error", "run_finished"} {
		if len(eventsOf(evs, typ)) != 1 {
			t.Errorf("want one %s event, got %d", typ, len(eventsOf(evs, typ)))
		}
	}
	if me := eventsOf(evs, "model_error"); len(me) == 1 && me[0].Key != "answer/-/b" {
		t.Errorf("model_error key %q", me[0].Key)
	}
}

// TestNonRetryableFailsAtOnce: a 400 or 401 is not retried.
func TestNonRetryableFailsAtOnce(t *testing.T) {
	for _, status := range []int{http.StatusBadRequest, http.StatusUnauthorized} {
		srv := llmtest.New(t, func(llmtest.Request) llmtest.Reply { return llmtest.Reply{Status: status} })
		plan := simpleSpec(t, "defaults: {max_retries: 3}\n")
		r, _, err := execute(t, plan, Options{
			Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}},
			Settings: Settings{Getenv: envFor(srv.URL)},
			Seams:    Seams{Sleep: noSleep},
		})
		var ee *calls.EndpointError
		if !errors.As(err, &ee) {
			t.Fatalf("status %d: err = %v, want *EndpointError", status, err)
		}
		if n := len(eventsOf(readEvents(t, r.Dir), "retry")); n != 0 {
			t.Errorf("status %d: %d retries, want none", status, n)
		}
		if srv.Count() > 2 {
			t.Errorf("status %d: %d requests, want at most one per agent", status, srv.Count())
		}
	}
}
