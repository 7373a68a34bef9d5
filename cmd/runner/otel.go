package main

import (
	"context"

	"github.com/debate-runner/runner/runtime/tracing"
)

// startTracing sends OpenTelemetry traces of the command's runs when the
// OTEL_* environment variables configure an exporter (see package
// tracing); the function it returns sends what is left and must run
// before the command exits, however its run ended.
func (e *env) startTracing() func() {
	p := tracing.Setup(tracing.Config{Getenv: e.getenv, Version: Version(), Warn: e.teller().Warn})
	e.tracer = p.Tracer()
	return func() {
		_ = p.Shutdown(context.Background())
		e.tracer = nil
	}
}

// traced returns ctx carrying the command's tracer, if it traces.
func (e *env) traced(ctx context.Context) context.Context {
	return tracing.With(ctx, e.tracer)
}
