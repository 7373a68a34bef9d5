package tracing

import (
	"context"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/otlptest"
	"github.com/debate-runner/runner/providers/azure"
	"github.com/debate-runner/runner/spec"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestSetupOff: no exporter is configured unless an OTLP endpoint or
// exporter is named; none and OTEL_SDK_DISABLED win; what runner cannot
// send is warned about and leaves tracing off.
func TestSetupOff(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		warn string
	}{
		{env: nil},
		{env: map[string]string{"OTEL_SERVICE_NAME": "x", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318", "OTEL_TRACES_EXPORTER": "none"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318", "OTEL_SDK_DISABLED": "TRUE"}},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}, warn: "OTEL_TRACES_EXPORTER=console"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, warn: "http/json"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "h:4318"}, warn: "not an http(s) URL"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318", "OTEL_EXPORTER_OTLP_HEADERS": "secret-token-without-name"}, warn: "not key=value"},
	} {
		var warned []string
		p := Setup(Config{Getenv: envOf(tc.env), Warn: func(m string) { warned = append(warned, m) }})
		if p != nil {
			_ = p.Shutdown(context.Background())
			t.Errorf("%v: tracing is on", tc.env)
		}
		got := strings.Join(warned, "\n")
		if tc.warn == "" && got != "" || !strings.Contains(got, tc.warn) {
			t.Errorf("%v: warned %q, want %q", tc.env, got, tc.warn)
		}
		if strings.Contains(got, "secret-token") {
			t.Errorf("a warning shows a header: %s", got)
		}
	}
}

// TestSignalEndpoint: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as it is
// (the base endpoint gets /v1/traces appended), its headers win over the
// signal-wide ones, and gzip compression is honoured.
func TestSignalEndpoint(t *testing.T) {
	recv := otlptest.NewHTTP(t)
	p := Setup(Config{Getenv: envOf(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://127.0.0.1:1",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": recv.Endpoint + "/v1/traces",
		"OTEL_EXPORTER_OTLP_HEADERS":         "a=1,b=2",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS":  "b=3",
		"OTEL_EXPORTER_OTLP_COMPRESSION":     "gzip",
		"OTEL_TRACES_EXPORTER":               "otlp",
	}), Warn: func(m string) { t.Error(m) }})
	if p == nil {
		t.Fatal("tracing is off")
	}
	ctx := With(context.Background(), p.Tracer())
	ctx, run := StartRun(ctx, RunInfo{ID: "r1", Spec: "s"})
	_, node := StartNode(ctx, "n", "ask", "-")
	node.End(nil)
	run.End(nil)
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := recv.Spans()
	if len(spans) != 2 || spans[0].Parent != spans[1].ID {
		t.Fatalf("spans:\n%s", otlptest.Tree(spans))
	}
	h := recv.Headers()[0]
	if h["b"] != "3" || h["a"] != "" || h["content-encoding"] != "gzip" {
		t.Errorf("headers %v: want b=3 from the traces headers alone, gzip", h)
	}
	if spans[0].Resource["service.name"] != "runner" {
		t.Errorf("default service.name: %v", spans[0].Resource)
	}
}

// TestOff: without a tracer in the context nothing is started and the
// spans' methods are safe on nil.
func TestOff(t *testing.T) {
	ctx := context.Background()
	ctx2, run := StartRun(ctx, RunInfo{ID: "r"})
	ctx3, node := StartNode(ctx2, "n", "ask", "-")
	if run != nil || node != nil || ctx3 != ctx || Enabled(ctx) {
		t.Fatal("spans started without a tracer")
	}
	node.SetAttributes()
	node.End(context.Canceled)
	run.End(nil)
}

func TestProviderName(t *testing.T) {
	for base, want := range map[string]string{
		"https://api.openai.com/v1":                  "openai",
		"https://myres.openai.azure.com/openai":      "azure.ai.openai",
		"https://api.groq.com/openai/v1":             "groq",
		"https://openrouter.ai/api/v1":               "openrouter",
		"http://localhost:11434/v1":                  "openai",
		"https://api.deepseek.com":                   "deepseek",
		"https://generativelanguage.googleapis.com/": "gcp.gemini",
	} {
		if got := providerName(&spec.EndpointPlan{}, base); got != want {
			t.Errorf("%s: %s, want %s", base, got, want)
		}
	}
	if got := providerName(&spec.EndpointPlan{Kind: "azure", Provider: azure.Kind{}}, "https://gateway.example.com"); got != "azure.ai.openai" {
		t.Errorf("azure kind: %s", got)
	}
}
