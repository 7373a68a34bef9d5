package runtime

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/debate-runner/runner/runtime/launch"

	"github.com/debate-runner/runner/runtime/tracing"
)

// BenchmarkTracingOverhead measures what tracing adds to a run: the fan-out
// debate (160 calls, an instant in-process endpoint, journal without fsync,
// so the engine's own work is all there is to slow down) run untraced,
// traced, and traced with message content, alternating within each
// iteration. Traced runs export over OTLP/HTTP to a collector in the same
// process that discards what it gets, and each traced run's spans are
// flushed before its clock stops, so export, encoding and the collector's
// reading count against tracing. Reported: wall and CPU time of traced runs
// as ratios to the untraced runs of the same iterations, the CPU time
// tracing adds per call, and bytes exported per call. The endpoint answers
// at once, so the ratios are the worst case: against a real model's seconds
// per call, the added time per call is what matters.
func BenchmarkTracingOverhead(b *testing.B) {
	var received atomic.Int64
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		received.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	provider := func(content string) *tracing.Provider {
		env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL, tracing.ContentVariable: content}
		p := tracing.Setup(tracing.Config{Getenv: func(k string) string { return env[k] }, Warn: func(msg string) { b.Error(msg) }})
		if p == nil {
			b.Fatal("tracing is off")
		}
		return p
	}
	traced, withContent := provider("false"), provider("true")
	defer traced.Shutdown(context.Background())
	defer withContent.Shutdown(context.Background())

	plan := loadPlan(b, writeSpec(b, b.TempDir(), fanoutSpec))
	const calls = 160
	content := strings.Repeat("A reply of a few hundred bytes, as models give. ", 8)
	opts := Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=Is P equal to NP?"}}},
		Settings: Settings{RunsDir: b.TempDir(), Getenv: envFor("http://127.0.0.1:1/v1")},
		Seams:    Seams{HTTPClient: &http.Client{Transport: newInstantTransport(content)}},
	}
	type cost struct{ wall, cpu time.Duration }
	var off, on, onContent cost
	var bytesOn, bytesContent int64
	run := func(p *tracing.Provider, c *cost) int64 {
		before := received.Load()
		u0, s0 := cpuTime()
		start := time.Now()
		r := startNoSync(b, plan, opts)
		res, err := r.Execute(tracing.With(context.Background(), p.Tracer()))
		if err != nil {
			b.Fatal(err)
		}
		if res.Usage.Total.Calls != calls {
			b.Fatalf("%d calls, want %d", res.Usage.Total.Calls, calls)
		}
		if err := p.Flush(context.Background()); err != nil {
			b.Fatal(err)
		}
		c.wall += time.Since(start)
		u1, s1 := cpuTime()
		c.cpu += (u1 - u0) + (s1 - s0)
		return received.Load() - before
	}
	runs := 0
	for b.Loop() {
		run(nil, &off)
		bytesOn += run(traced, &on)
		bytesContent += run(withContent, &onContent)
		runs++
	}
	b.ReportMetric(float64(on.wall)/float64(off.wall), "traced/untraced-wall")
	b.ReportMetric(float64(onContent.wall)/float64(off.wall), "content/untraced-wall")
	if off.cpu > 0 {
		b.ReportMetric(float64(on.cpu)/float64(off.cpu), "traced/untraced-cpu")
		b.ReportMetric(float64(onContent.cpu)/float64(off.cpu), "content/untraced-cpu")
	}
	n := float64(runs * calls)
	b.ReportMetric(float64(off.wall.Nanoseconds())/n, "untraced-ns/call")
	// What tracing adds to each call in absolute terms, to hold against a
	// real model call's latency (hundreds of milliseconds and up).
	b.ReportMetric(float64((on.cpu-off.cpu).Nanoseconds())/n, "traced-added-cpu-ns/call")
	b.ReportMetric(float64((onContent.cpu-off.cpu).Nanoseconds())/n, "content-added-cpu-ns/call")
	b.ReportMetric(float64(bytesOn)/n, "otlp-B/call")
	b.ReportMetric(float64(bytesContent)/n, "content-otlp-B/call")
}
