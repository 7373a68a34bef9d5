// Package tracing sends OpenTelemetry traces of runs: a span for the run,
// one for each node it executes and one for each model call, the calls
// described with the GenAI semantic conventions. It is off unless the
// standard OTEL_* environment variables configure an exporter (see Setup);
// when off, every function here costs one context lookup.
//
// The tracer travels in the context (With): the run span takes it from the
// context Execute is given, and node and call spans nest under the span in
// their context, so one run, a resumed run and the runs of a sweep all trace
// the same way without a setting in the engine's options.
package tracing

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of runner's spans.
const ScopeName = "github.com/debate-runner/runner"

// Tracer starts runner's spans.
type Tracer struct {
	tracer trace.Tracer
	// content records prompts and replies on call spans (an explicit
	// opt-in: they may hold what users would not send to a collector).
	content bool
}

// NewTracer returns a Tracer of tp; content says whether call spans carry
// the messages sent and received.
func NewTracer(tp trace.TracerProvider, version string, content bool) *Tracer {
	return &Tracer{tracer: tp.Tracer(ScopeName, trace.WithInstrumentationVersion(version)), content: content}
}

type tracerKey struct{}

// With returns a context whose runs are traced by t (nil: not traced).
func With(ctx context.Context, t *Tracer) context.Context {
	if t == nil {
		return ctx
	}
	return context.WithValue(ctx, tracerKey{}, t)
}

func from(ctx context.Context) *Tracer {
	t, _ := ctx.Value(tracerKey{}).(*Tracer)
	return t
}

// Enabled says whether ctx carries a tracer.
func Enabled(ctx context.Context) bool { return from(ctx) != nil }

// Span is a span of runner's, or nil when tracing is off; its methods do
// nothing on nil.
type Span struct {
	span   trace.Span
	redact func(string) string
}

// SetAttributes adds attributes to the span.
func (s *Span) SetAttributes(kv ...attribute.KeyValue) {
	if s != nil {
		s.span.SetAttributes(kv...)
	}
}

// End ends the span; a non-nil err marks it failed with err's first line
// (redacted, as everything the span records).
func (s *Span) End(err error) {
	if err != nil {
		s.EndAs(err, errorType(err))
	} else {
		s.EndAs(nil, "")
	}
}

// EndAs is End with the error.type of a failure the caller knows better
// than this package (an interrupted run).
func (s *Span) EndAs(err error, errType string) {
	if s == nil {
		return
	}
	if err != nil {
		msg := s.clean(firstLine(err.Error()))
		s.span.SetStatus(codes.Error, msg)
		s.span.SetAttributes(attribute.String("error.type", errType))
	}
	s.span.End()
}

func (s *Span) clean(text string) string {
	if s.redact != nil {
		return s.redact(text)
	}
	return text
}

// RunInfo describes a run for its span.
type RunInfo struct {
	ID, Spec, SpecPath string
	// Recorded is the number of replies already in the journal (a resume).
	Recorded int
	// Sweep is the id of the sweep the run belongs to.
	Sweep string
	// Redact removes the run's secrets from what its spans record.
	Redact func(string) string
}

// StartRun starts the span of a run, the root of its trace unless ctx
// holds a span already (a sweep's).
func StartRun(ctx context.Context, info RunInfo) (context.Context, *Span) {
	t := from(ctx)
	if t == nil {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{
		attribute.String("runner.run.id", info.ID),
		attribute.String("runner.spec", info.Spec),
		attribute.Bool("runner.run.resumed", info.Recorded > 0),
		attribute.Int("runner.run.recorded_calls", info.Recorded),
	}
	if info.SpecPath != "" {
		attrs = append(attrs, attribute.String("runner.spec.path", info.SpecPath))
	}
	if info.Sweep != "" {
		attrs = append(attrs, attribute.String("runner.sweep.id", info.Sweep))
	}
	ctx, span := t.tracer.Start(ctx, "run "+info.Spec, trace.WithAttributes(attrs...))
	return ctx, &Span{span: span, redact: info.Redact}
}

// StartNode starts the span of one execution of a node in a scope (the
// loop iterations and items it runs in, "-" for none).
func StartNode(ctx context.Context, id, kind, scope string) (context.Context, *Span) {
	t := from(ctx)
	if t == nil {
		return ctx, nil
	}
	ctx, span := t.tracer.Start(ctx, "node "+id, trace.WithAttributes(
		attribute.String("runner.node.id", id),
		attribute.String("runner.node.kind", kind),
		attribute.String("runner.scope", scope),
	))
	return ctx, &Span{span: span, redact: redactorOf(ctx)}
}

// StartSweep starts the span of a sweep, the parent of its runs' spans.
func StartSweep(ctx context.Context, spec string) (context.Context, *Span) {
	t := from(ctx)
	if t == nil {
		return ctx, nil
	}
	ctx, span := t.tracer.Start(ctx, "sweep "+spec, trace.WithAttributes(
		attribute.String("runner.spec", spec)))
	return ctx, &Span{span: span}
}

type redactKey struct{}

// WithRedactor returns a context whose spans remove secrets with redact.
// The run sets it, so node spans below it use the run's secrets.
func WithRedactor(ctx context.Context, redact func(string) string) context.Context {
	if redact == nil || from(ctx) == nil {
		return ctx
	}
	return context.WithValue(ctx, redactKey{}, redact)
}

func redactorOf(ctx context.Context) func(string) string {
	r, _ := ctx.Value(redactKey{}).(func(string) string)
	return r
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
