package main

import (
	"context"
	"sync"

	"github.com/debate-runner/runner/runtime/tracing"
)

// startTracing sends OpenTelemetry traces of the command's runs when the
// OTEL_* environment variables configure an exporter (see package
// tracing); the function it returns sends what is left and must run
// before the command exits, however its run ended.
func (e *env) startTracing() func() {
	var mu sync.Mutex
	p := tracing.Setup(tracing.Config{
		Getenv:  e.getenv,
		Version: Version(),
		Warn: func(msg string) {
			// Export failures are told from the exporter's goroutine.
			mu.Lock()
			defer mu.Unlock()
			e.say("warning", map[string]string{"message": msg}, "runner: warning: "+msg)
		},
	})
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
