package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/otlptest"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// The tests in this file send the traces of real runs to a collector
// started in the test (internal/otlptest decodes what arrives with the
// OTLP protocol's own types) and check the span tree, the GenAI
// attributes, retries, journal and cache hits, and that no key is sent.

const collectorSecret = "collector-token-0123456789"

// otelEnv is the environment of a run traced to recv over protocol.
func otelEnv(srv *llmtest.Server, recv *otlptest.Receiver, protocol string) map[string]string {
	env := e2eEnv(srv)
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = recv.Endpoint
	env["OTEL_EXPORTER_OTLP_PROTOCOL"] = protocol
	env["OTEL_SERVICE_NAME"] = "runner-under-test"
	env["OTEL_RESOURCE_ATTRIBUTES"] = "deployment.environment=test,team=debates%20lab"
	env["OTEL_EXPORTER_OTLP_HEADERS"] = "x-collector-token=" + collectorSecret
	return env
}

// trace is the spans of one run's trace: its run span and what is below.
type trace struct {
	run   otlptest.Span
	nodes []otlptest.Span
	calls []otlptest.Span
	all   []otlptest.Span
}

// traceOf returns the trace whose run span has the given run id, checking
// that its spans form the tree run > node > call.
func traceOf(t *testing.T, recv *otlptest.Receiver, runID string) trace {
	t.Helper()
	spans := recv.Spans()
	var tr trace
	found := false
	for _, s := range spans {
		if strings.HasPrefix(s.Name, "run ") && s.Attrs["runner.run.id"] == runID {
			tr.run, found = s, true
		}
	}
	if !found {
		t.Fatalf("no run span for run %s among %d spans:\n%s", runID, len(spans), otlptest.Tree(spans))
	}
	byID := map[string]otlptest.Span{}
	for _, s := range spans {
		if s.TraceID == tr.run.TraceID {
			byID[s.ID] = s
			tr.all = append(tr.all, s)
		}
	}
	if tr.run.Parent != "" {
		t.Errorf("the run span has a parent %s", tr.run.Parent)
	}
	for _, s := range tr.all {
		parent := byID[s.Parent]
		switch {
		case s.ID == tr.run.ID:
		case strings.HasPrefix(s.Name, "node "):
			if s.Parent != tr.run.ID && !strings.HasPrefix(parent.Name, "node ") {
				t.Errorf("node span %s has parent %q, not the run or a node", s.Name, parent.Name)
			}
			tr.nodes = append(tr.nodes, s)
		case strings.HasPrefix(s.Name, "chat "):
			if !strings.HasPrefix(parent.Name, "node ") || parent.Attrs["runner.node.id"] != s.Attrs["runner.node.id"] {
				t.Errorf("call span %s (%v) has parent %q, not its node", s.Name, s.Attrs["runner.call.key"], parent.Name)
			}
			tr.calls = append(tr.calls, s)
		default:
			t.Errorf("unexpected span %q", s.Name)
		}
	}
	return tr
}

// runIDOf is the id of a run directory.
func runIDOf(dir string) string {
	i := strings.LastIndexAny(dir, `/\`)
	return dir[i+1:]
}

func bySource(calls []otlptest.Span) map[string]int {
	out := map[string]int{}
	for _, c := range calls {
		src, _ := c.Attrs["runner.call.source"].(string)
		out[src]++
	}
	return out
}

// TestTracesOverOTLP runs a debate whose endpoint answers every fifth
// request with a 429 and fails it for good after 20 replies, resumes it,
// and runs it again from the cache, traced to a collector over HTTP and
// over gRPC: each run is one trace of run > node > call spans with the
// GenAI attributes, the 429s are retry events, the resume's journal hits
// and the cache hits are marked, and neither the API key nor a prompt is
// sent to the collector.
func TestTracesOverOTLP(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		receiver func(testing.TB) *otlptest.Receiver
	}{
		{"http/protobuf", otlptest.NewHTTP},
		{"grpc", otlptest.NewGRPC},
	} {
		t.Run(strings.ReplaceAll(tc.protocol, "/", "-"), func(t *testing.T) {
			recv := tc.receiver(t)
			var served atomic.Int64
			srv := llmtest.New(t, llmtest.FailEvery(5, llmtest.Reply{Status: 429, RetryAfter: "0.01"}, func(r llmtest.Request) llmtest.Reply {
				if served.Add(1) > 20 {
					return llmtest.Reply{Status: 400, ErrorMessage: "bad request"}
				}
				return e2eAnswers(0)(r)
			}))
			env := otelEnv(srv, recv, tc.protocol)
			spec := e2eSpec(t, debateSource, "")
			runs, cacheDir := t.TempDir(), t.TempDir()

			// 1. The run fails on the 400.
			code, _, stderr := invoke(t, env, "run", spec, "-i", "question=q", "--runs-dir", runs, "--cache-dir", cacheDir, "-q")
			if code != exitcode.Endpoint {
				t.Fatalf("first run: exit %d, want %d\n%s", code, exitcode.Endpoint, stderr)
			}
			dir := runDirFrom(t, stderr)
			answered := len(e2eResponded(t, dir))
			first := traceOf(t, recv, runIDOf(dir))
			if first.run.Status != tracepb.Status_STATUS_CODE_ERROR || first.run.Attrs["runner.status"] != "failed" {
				t.Errorf("failed run span: status %v, runner.status %v", first.run.Status, first.run.Attrs["runner.status"])
			}
			if got := bySource(first.calls); got["network"] != answered {
				t.Errorf("first run: call spans by source %v, want %d from the network (the journaled replies)", got, answered)
			}
			retries, failed, canceled := 0, 0, 0
			model := srv.Requests()[0].Model
			u, _ := url.Parse(srv.URL)
			port, _ := strconv.Atoi(u.Port())
			for _, c := range first.calls {
				if c.Kind != tracepb.Span_SPAN_KIND_CLIENT {
					t.Errorf("call span %s has kind %v, want client", c.Name, c.Kind)
				}
				if c.Name != "chat "+model {
					t.Errorf("call span named %q, want %q", c.Name, "chat "+model)
				}
				want := map[string]any{
					"gen_ai.operation.name": "chat", "gen_ai.request.model": model, "gen_ai.provider.name": "openai",
					"gen_ai.system": "openai", "server.address": "127.0.0.1", "server.port": int64(port),
				}
				for k, v := range want {
					if c.Attrs[k] != v {
						t.Errorf("call %v: %s = %v, want %v", c.Attrs["runner.call.key"], k, c.Attrs[k], v)
					}
				}
				if c.Attrs["gen_ai.agent.name"] == nil {
					t.Errorf("call %v names no agent", c.Attrs["runner.call.key"])
				}
				for _, e := range c.Events {
					if e.Name == "retry" {
						retries++
						if e.Attrs["http.response.status_code"] != int64(429) {
							t.Errorf("retry event without the 429: %v", e.Attrs)
						}
					}
				}
				if c.Status == tracepb.Status_STATUS_CODE_ERROR {
					switch {
					case c.Attrs["error.type"] == "400" && c.Attrs["http.response.status_code"] == int64(400):
						failed++
					case c.Attrs["error.type"] == "canceled":
						// A call of the same node, stopped by the failure.
						canceled++
					default:
						t.Errorf("failed call: error.type %v, status %v", c.Attrs["error.type"], c.Attrs["http.response.status_code"])
					}
					continue
				}
				if n, _ := c.Attrs["gen_ai.usage.input_tokens"].(int64); n <= 0 {
					t.Errorf("call %v: gen_ai.usage.input_tokens %v", c.Attrs["runner.call.key"], c.Attrs["gen_ai.usage.input_tokens"])
				}
				if n, _ := c.Attrs["gen_ai.usage.output_tokens"].(int64); n <= 0 {
					t.Errorf("call %v: gen_ai.usage.output_tokens %v", c.Attrs["runner.call.key"], c.Attrs["gen_ai.usage.output_tokens"])
				}
				if c.Attrs["gen_ai.response.model"] != model {
					t.Errorf("call %v: gen_ai.response.model %v", c.Attrs["runner.call.key"], c.Attrs["gen_ai.response.model"])
				}
				if fr := fmt.Sprint(c.Attrs["gen_ai.response.finish_reasons"]); fr != "[stop]" {
					t.Errorf("call %v: finish reasons %s", c.Attrs["runner.call.key"], fr)
				}
				if _, ok := c.Attrs["gen_ai.input.messages"]; ok {
					t.Errorf("call %v records its prompt without the opt-in", c.Attrs["runner.call.key"])
				}
			}
			// Requests 5, 10, 15, 20 and 25 were 429s; the last came after
			// the failure began, when the failing call was retried.
			if retries < 4 {
				t.Errorf("%d retry events, want at least 4 (every fifth request was a 429)", retries)
			}
			if failed != 1 {
				t.Errorf("%d failed call spans, want 1", failed)
			}
			if n := len(first.calls); n != answered+failed+canceled {
				t.Errorf("first run: %d call spans, want %d answered + %d failed + %d canceled", n, answered, failed, canceled)
			}
			nodeIDs := map[string]bool{}
			for _, n := range first.nodes {
				nodeIDs[n.Attrs["runner.node.id"].(string)] = true
				if n.Attrs["runner.node.kind"] != "ask" || n.Attrs["runner.scope"] == nil {
					t.Errorf("node span %s: kind %v scope %v", n.Name, n.Attrs["runner.node.kind"], n.Attrs["runner.scope"])
				}
			}
			for _, id := range []string{"propose", "critique", "refine"} {
				if !nodeIDs[id] {
					t.Errorf("no span of node %s:\n%s", id, otlptest.Tree(first.all))
				}
			}
			res := first.run.Resource
			if res["service.name"] != "runner-under-test" || res["deployment.environment"] != "test" || res["team"] != "debates lab" || res["service.version"] == nil {
				t.Errorf("resource: %v", res)
			}

			// 2. The resume answers the journaled calls from the journal.
			srv.SetHandler(e2eAnswers(0))
			code, _, stderr = invoke(t, env, "resume", dir, "-q")
			if code != exitcode.OK {
				t.Fatalf("resume: exit %d\n%s", code, stderr)
			}
			var resumed trace
			for _, s := range recv.Spans() {
				if strings.HasPrefix(s.Name, "run ") && s.Attrs["runner.run.resumed"] == true {
					resumed = traceOfSpan(t, recv, s)
				}
			}
			total := len(e2eResponded(t, dir))
			got := bySource(resumed.calls)
			if got["journal"] != answered || got["network"]+got["cache"] != total-answered || len(resumed.calls) != total {
				t.Errorf("resume: call spans by source %v, want %d from the journal and %d others", got, answered, total-answered)
			}
			if resumed.run.Status == tracepb.Status_STATUS_CODE_ERROR || resumed.run.Attrs["runner.status"] != "completed" || resumed.run.Attrs["runner.calls.journal"] != int64(answered) {
				t.Errorf("resumed run span: status %v, attributes %v", resumed.run.Status, resumed.run.Attrs)
			}

			// 3. Run again: the first run's calls come from the cache (a
			// resume does not use the cache).
			code, _, stderr = invoke(t, env, "run", spec, "-i", "question=q", "--runs-dir", runs, "--cache-dir", cacheDir, "-q")
			if code != exitcode.OK {
				t.Fatalf("cached run: exit %d\n%s", code, stderr)
			}
			cached := traceOf(t, recv, runIDOf(runDirFrom(t, stderr)))
			if got := bySource(cached.calls); got["cache"] != answered || got["network"] != total-answered {
				t.Errorf("cached run: call spans by source %v, want %d from the cache and %d from the network", got, answered, total-answered)
			}

			// Nothing secret or private reached the collector; the
			// collector's own header did arrive.
			for _, text := range []string{e2eKey, collectorSecret, "Critique this proposal"} {
				if recv.Contains(text) {
					t.Errorf("the collector received %q", text)
				}
			}
			if h := recv.Headers(); len(h) == 0 || h[0]["x-collector-token"] != collectorSecret {
				t.Errorf("OTEL_EXPORTER_OTLP_HEADERS did not reach the collector: %v", h)
			}
		})
	}
}

// traceOfSpan is traceOf for the trace of a given run span.
func traceOfSpan(t *testing.T, recv *otlptest.Receiver, run otlptest.Span) trace {
	t.Helper()
	tr := trace{run: run}
	byID := map[string]otlptest.Span{}
	for _, s := range recv.Spans() {
		if s.TraceID == run.TraceID {
			byID[s.ID] = s
			tr.all = append(tr.all, s)
		}
	}
	for _, s := range tr.all {
		switch {
		case strings.HasPrefix(s.Name, "node "):
			tr.nodes = append(tr.nodes, s)
		case strings.HasPrefix(s.Name, "chat "):
			if p := byID[s.Parent]; !strings.HasPrefix(p.Name, "node ") {
				t.Errorf("call span %v has parent %q", s.Attrs["runner.call.key"], p.Name)
			}
			tr.calls = append(tr.calls, s)
		}
	}
	return tr
}

// TestTraceContentOptIn: with the standard opt-in, call spans carry the
// messages sent and received, with the API key (here in an input) redacted.
// The endpoint takes one call at a time, so the second call's span has an
// event for its wait.
func TestTraceContentOptIn(t *testing.T) {
	recv := otlptest.NewHTTP(t)
	srv := llmtest.New(t, e2eAnswers(30*time.Millisecond))
	env := otelEnv(srv, recv, "http/protobuf")
	env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
	spec := e2eSpec(t, simpleSource, "endpoints: {mine: {base_url: '"+srv.URL+"', api_key_env: OPENAI_API_KEY, max_concurrency: 1}}\nmodels: {default: {model: m, endpoint: mine}}\n")
	code, _, stderr := invoke(t, env, "run", spec, "-i", "question=is "+e2eKey+" a key?", "--runs-dir", t.TempDir(), "--no-cache", "-q")
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	tr := traceOf(t, recv, runIDOf(runDirFrom(t, stderr)))
	if len(tr.calls) != 2 {
		t.Fatalf("%d call spans, want 2", len(tr.calls))
	}
	for _, c := range tr.calls {
		in, _ := c.Attrs["gen_ai.input.messages"].(string)
		out, _ := c.Attrs["gen_ai.output.messages"].(string)
		if !strings.Contains(in, `"role":"user"`) || !strings.Contains(in, "[REDACTED] a key?") {
			t.Errorf("gen_ai.input.messages = %s", in)
		}
		if !strings.Contains(out, `"role":"assistant"`) || !strings.Contains(out, "answer to ") || !strings.Contains(out, `"finish_reason":"stop"`) {
			t.Errorf("gen_ai.output.messages = %s", out)
		}
	}
	if recv.Contains(e2eKey) {
		t.Error("the collector received the API key")
	}
	waits := 0
	for _, c := range tr.calls {
		for _, e := range c.Events {
			if e.Name == "wait" && e.Attrs["runner.wait.limit"] == "max_concurrency" {
				if d, _ := e.Attrs["runner.wait.s"].(float64); d <= 0 {
					t.Errorf("wait event without its duration: %v", e.Attrs)
				}
				waits++
			}
		}
	}
	if waits != 1 {
		t.Errorf("%d wait events, want 1 (the second of two calls to an endpoint with max_concurrency 1)", waits)
	}
}

// deadAddress is an address where nothing listens.
func deadAddress(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

// TestUnreachableCollector: a run traced to a collector that is not there
// succeeds as it would untraced, with one warning.
func TestUnreachableCollector(t *testing.T) {
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(strings.ReplaceAll(protocol, "/", "-"), func(t *testing.T) {
			srv := llmtest.New(t, e2eAnswers(0))
			env := e2eEnv(srv)
			env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://" + deadAddress(t)
			env["OTEL_EXPORTER_OTLP_PROTOCOL"] = protocol
			code, stdout, stderr := invoke(t, env, "run", e2eSpec(t, debateSource, ""), "-i", "question=q", "--runs-dir", t.TempDir(), "--no-cache", "-q")
			if code != exitcode.OK {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			if !strings.Contains(stdout, "answer to judge/r3/evaluate") {
				t.Errorf("stdout: %q", stdout)
			}
			if n := strings.Count(stderr, "traces could not be sent"); n != 1 {
				t.Errorf("%d warnings about the collector, want 1:\n%s", n, stderr)
			}
		})
	}
}

// TestTracingOff: OTEL variables that configure no exporter send nothing,
// and an exporter runner lacks is a warning, not a failed run.
func TestTracingOff(t *testing.T) {
	recv := otlptest.NewHTTP(t)
	srv := llmtest.New(t, e2eAnswers(0))
	for _, extra := range []map[string]string{
		{"OTEL_SERVICE_NAME": "x"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.Endpoint, "OTEL_TRACES_EXPORTER": "none"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.Endpoint, "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.Endpoint, "OTEL_TRACES_EXPORTER": "zipkin"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.Endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
	} {
		env := e2eEnv(srv)
		for k, v := range extra {
			env[k] = v
		}
		code, _, stderr := invoke(t, env, "run", e2eSpec(t, simpleSource, ""), "-i", "question=q", "--runs-dir", t.TempDir(), "--no-cache", "-q")
		if code != exitcode.OK {
			t.Fatalf("%v: exit %d\n%s", extra, code, stderr)
		}
		warned := strings.Contains(stderr, "no traces are sent")
		if wantWarn := extra["OTEL_TRACES_EXPORTER"] == "zipkin" || extra["OTEL_EXPORTER_OTLP_PROTOCOL"] != ""; warned != wantWarn {
			t.Errorf("%v: warned %v, want %v\n%s", extra, warned, wantWarn, stderr)
		}
	}
	if n := recv.Exports(); n != 0 {
		t.Errorf("the collector received %d exports with tracing off", n)
	}
}

// TestTracesFlushedOnInterrupt: the binary interrupted with SIGINT in the
// middle of a run still sends its spans, the run span marked failed.
func TestTracesFlushedOnInterrupt(t *testing.T) {
	bin := runnerBinary(t)
	recv := otlptest.NewHTTP(t)
	srv := llmtest.New(t, e2eAnswers(50*time.Millisecond))
	runs := t.TempDir()
	cmd := exec.Command(bin, "run", e2eSpec(t, debateSource, ""), "-i", "question=q", "--runs-dir", runs, "--no-cache", "-q")
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL="+srv.URL, "OPENAI_API_KEY="+e2eKey,
		"OTEL_EXPORTER_OTLP_ENDPOINT="+recv.Endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_BSP_SCHEDULE_DELAY=60000")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	dir := waitForResponses(t, runs, 5, exited, &out)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := <-exited; !errors.As(err, &ee) || ee.ExitCode() != exitcode.Failure {
		t.Fatalf("interrupted run: %v\n%s", err, out.String())
	}
	// The batch delay is a minute: what arrived was sent at exit.
	tr := traceOf(t, recv, runIDOf(dir))
	if tr.run.Status != tracepb.Status_STATUS_CODE_ERROR || !strings.Contains(tr.run.StatusMessage, "interrupted") || tr.run.Attrs["error.type"] != "interrupted" {
		t.Errorf("run span: status %v %q", tr.run.Status, tr.run.StatusMessage)
	}
	if len(tr.calls) < 5 {
		t.Errorf("%d call spans, want at least the 5 answered", len(tr.calls))
	}
}

// TestTraceReplayAndSweep: calls served from a recording are marked
// replay, and the runs of a sweep are children of one sweep span.
func TestTraceReplayAndSweep(t *testing.T) {
	recv := otlptest.NewHTTP(t)
	srv := llmtest.New(t, e2eAnswers(0))
	env := otelEnv(srv, recv, "http/protobuf")
	spec := e2eSpec(t, simpleSource, "")
	runs := t.TempDir()
	code, _, stderr := invoke(t, env, "run", spec, "-i", "question=q", "--runs-dir", runs, "--no-cache", "-q")
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	recorded := runDirFrom(t, stderr)
	code, _, stderr = invoke(t, env, "run", spec, "--replay", recorded, "--runs-dir", runs, "-q")
	if code != exitcode.OK {
		t.Fatalf("replay: exit %d\n%s", code, stderr)
	}
	replayed := traceOf(t, recv, runIDOf(runDirFrom(t, stderr)))
	if got := bySource(replayed.calls); got["replay"] != 2 || len(replayed.calls) != 2 {
		t.Errorf("replayed run: call spans by source %v, want 2 from the recording", got)
	}

	code, _, stderr = invoke(t, env, "run", spec, "-i", "question=q", "--repeat", "2", "--runs-dir", runs, "--no-cache", "-q")
	if code != exitcode.OK {
		t.Fatalf("sweep: exit %d\n%s", code, stderr)
	}
	var sweep otlptest.Span
	for _, s := range recv.Spans() {
		if strings.HasPrefix(s.Name, "sweep ") {
			sweep = s
		}
	}
	if sweep.ID == "" || sweep.Parent != "" {
		t.Fatalf("no root sweep span:\n%s", otlptest.Tree(recv.Spans()))
	}
	children := 0
	for _, s := range recv.Spans() {
		if s.Parent == sweep.ID {
			children++
			if !strings.HasPrefix(s.Name, "run ") || s.Attrs["runner.sweep.id"] == nil {
				t.Errorf("sweep child %s: %v", s.Name, s.Attrs)
			}
		}
	}
	if children != 2 {
		t.Errorf("the sweep span has %d runs below it, want 2:\n%s", children, otlptest.Tree(recv.Spans()))
	}
}
