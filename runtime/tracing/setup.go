package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// DefaultTimeout bounds each export when OTEL_EXPORTER_OTLP_TIMEOUT does
// not: shorter than the specification's 10 s, because a command waits for
// the last export before it exits.
const DefaultTimeout = 5 * time.Second

// ContentVariable is the standard opt-in for recording message content on
// GenAI spans.
const ContentVariable = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// Config is what Setup reads.
type Config struct {
	// Getenv reads environment variables.
	Getenv func(string) string
	// Version is runner's version, for service.version.
	Version string
	// Warn is told, once, when spans cannot be sent, and of settings that
	// turn tracing off, one message at a time, from any goroutine.
	Warn func(msg string)
}

// Provider sends the spans of a process's runs to the exporter the
// environment configures.
type Provider struct {
	tp       *sdktrace.TracerProvider
	tracer   *Tracer
	timeout  time.Duration
	exporter *guarded
}

// Setup reads the standard OTEL_* variables and returns a Provider, or nil
// when they configure no exporter: tracing is on when
// OTEL_TRACES_EXPORTER is otlp, or when it is unset and
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set;
// OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn it off. An
// exporter runner cannot make is warned about and tracing stays off: a
// run is never stopped for its traces.
func Setup(cfg Config) *Provider {
	get := cfg.Getenv
	warn := func(string) {}
	if cfg.Warn != nil {
		// Export failures are told from the exporter's goroutine: one
		// warning at a time.
		var mu sync.Mutex
		warn = func(msg string) {
			mu.Lock()
			defer mu.Unlock()
			cfg.Warn(msg)
		}
	}
	if strings.EqualFold(strings.TrimSpace(get("OTEL_SDK_DISABLED")), "true") {
		return nil
	}
	signal := func(name string) string {
		if v := strings.TrimSpace(get("OTEL_EXPORTER_OTLP_TRACES_" + name)); v != "" {
			return v
		}
		return strings.TrimSpace(get("OTEL_EXPORTER_OTLP_" + name))
	}
	switch exp := strings.ToLower(strings.TrimSpace(get("OTEL_TRACES_EXPORTER"))); exp {
	case "none":
		return nil
	case "":
		if signal("ENDPOINT") == "" {
			return nil
		}
	case "otlp":
	default:
		warn(fmt.Sprintf("OTEL_TRACES_EXPORTER=%s is not an exporter runner has (it has otlp and none); no traces are sent", exp))
		return nil
	}
	timeout := DefaultTimeout
	if v := signal("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			warn(fmt.Sprintf("OTEL_EXPORTER_OTLP_TIMEOUT=%s is not a number of milliseconds; using %s", v, DefaultTimeout))
		} else {
			timeout = time.Duration(ms) * time.Millisecond
		}
	}
	headers, err := parseList(signal("HEADERS"))
	if err != nil {
		warn(fmt.Sprintf("OTEL_EXPORTER_OTLP_HEADERS: %v; no traces are sent", err))
		return nil
	}
	protocol := signal("PROTOCOL")
	if protocol == "" {
		protocol = "http/protobuf"
	}
	endpoint := signal("ENDPOINT")
	specific := strings.TrimSpace(get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) != ""
	gzip := strings.EqualFold(signal("COMPRESSION"), "gzip")
	insecure := strings.EqualFold(signal("INSECURE"), "true")

	var exp sdktrace.SpanExporter
	ctx := context.Background()
	switch protocol {
	case "http/protobuf":
		// Export errors are retried by our own bound, not the exporter's
		// minute of backoff: a command must not wait a minute to exit.
		opts := []otlptracehttp.Option{otlptracehttp.WithTimeout(timeout), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false})}
		if len(headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(headers))
		}
		if gzip {
			opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
		}
		if endpoint != "" {
			u, err := url.Parse(endpoint)
			if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
				warn(fmt.Sprintf("OTEL_EXPORTER_OTLP_ENDPOINT %q is not an http(s) URL; no traces are sent", redactURL(endpoint)))
				return nil
			}
			if !specific {
				// The signal-wide endpoint is a base: traces go under it.
				u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
			}
			opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	case "grpc":
		opts := []otlptracegrpc.Option{otlptracegrpc.WithTimeout(timeout), otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false})}
		if len(headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(headers))
		}
		if gzip {
			opts = append(opts, otlptracegrpc.WithCompressor("gzip"))
		}
		if endpoint != "" {
			if strings.Contains(endpoint, "://") {
				opts = append(opts, otlptracegrpc.WithEndpointURL(endpoint))
			} else {
				opts = append(opts, otlptracegrpc.WithEndpoint(endpoint))
				if insecure {
					opts = append(opts, otlptracegrpc.WithInsecure())
				}
			}
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	default:
		warn(fmt.Sprintf("OTEL_EXPORTER_OTLP_PROTOCOL=%s is not supported (runner sends http/protobuf or grpc); no traces are sent", protocol))
		return nil
	}
	if err != nil {
		warn(fmt.Sprintf("OpenTelemetry exporter: %v; no traces are sent", err))
		return nil
	}
	where := redactURL(endpoint)
	if where == "" {
		where = "the default OTLP endpoint (" + protocol + ")"
	}
	g := &guarded{next: exp, where: where, warn: warn}
	res, rerr := resourceOf(get, cfg.Version)
	if rerr != nil {
		warn(fmt.Sprintf("OTEL_RESOURCE_ATTRIBUTES: %v; they are left out", rerr))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(g, sdktrace.WithExportTimeout(timeout)),
		sdktrace.WithResource(res),
	)
	content := strings.EqualFold(strings.TrimSpace(get(ContentVariable)), "true")
	return &Provider{tp: tp, tracer: NewTracer(tp, cfg.Version, content), timeout: timeout, exporter: g}
}

// Tracer returns the tracer of the provider's spans (nil for nil).
func (p *Provider) Tracer() *Tracer {
	if p == nil {
		return nil
	}
	return p.tracer
}

// Flush sends the spans ended so far (benchmarks and tests).
func (p *Provider) Flush(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.tp.ForceFlush(ctx)
}

// Shutdown sends the spans not yet sent and stops the exporter. It waits
// at most the export timeout (less when the collector already failed),
// whatever ctx allows: a run that ends, fails or is interrupted flushes its
// spans, but never hangs on an unreachable collector.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	wait := p.timeout
	if p.exporter.failed.Load() {
		wait = min(wait, time.Second)
	}
	// The context of an interrupted run is done already; the flush gets a
	// context of its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
	defer cancel()
	return p.tp.Shutdown(ctx)
}

// guarded is an exporter that warns once when spans cannot be sent, and
// hides the failures from the SDK, whose error handler would print each.
type guarded struct {
	next   sdktrace.SpanExporter
	where  string
	warn   func(string)
	once   sync.Once
	failed atomic.Bool
}

func (g *guarded) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := g.next.ExportSpans(ctx, spans)
	if err == nil {
		g.failed.Store(false)
		return nil
	}
	g.failed.Store(true)
	g.once.Do(func() {
		g.warn(fmt.Sprintf("traces could not be sent to %s: %v (the run goes on; later failures are not reported)", g.where, firstLine(err.Error())))
	})
	return nil
}

func (g *guarded) Shutdown(ctx context.Context) error {
	err := g.next.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// resourceOf describes the process: service.name from OTEL_SERVICE_NAME
// (default runner), service.version, and OTEL_RESOURCE_ATTRIBUTES.
func resourceOf(get func(string) string, version string) (*resource.Resource, error) {
	var attrs []attribute.KeyValue
	list, err := parseList(get("OTEL_RESOURCE_ATTRIBUTES"))
	name := "runner"
	for k, v := range list {
		if k == "service.name" {
			name = v
			continue
		}
		attrs = append(attrs, attribute.String(k, v))
	}
	if v := strings.TrimSpace(get("OTEL_SERVICE_NAME")); v != "" {
		name = v
	}
	attrs = append(attrs, attribute.String("service.name", name))
	if version != "" {
		attrs = append(attrs, attribute.String("service.version", version))
	}
	return resource.NewSchemaless(attrs...), err
}

// parseList parses the key=value,key=value lists of OTEL_*_HEADERS and
// OTEL_RESOURCE_ATTRIBUTES, values percent-encoded.
func parseList(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, item := range strings.Split(s, ",") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			// The item is not echoed: a header value can be a key.
			return out, fmt.Errorf("an item is not key=value")
		}
		val, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return out, fmt.Errorf("the value of %s is not percent-encoded correctly", k)
		}
		out[k] = val
	}
	return out, nil
}

// redactURL is a collector URL fit for a message: no user or query.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(an invalid URL)"
	}
	u.User = nil
	u.RawQuery = ""
	return u.String()
}
