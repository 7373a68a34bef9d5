package runtime

import (
	"context"
	"errors"

	"github.com/debate-runner/runner/spec/value"

	"go.opentelemetry.io/otel/attribute"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/tracing"
	"github.com/debate-runner/runner/spec"
)

// The run's OpenTelemetry spans (see package tracing): they are made when
// the context given to Execute carries a tracer, and cost a context lookup
// otherwise.

// traceRun starts the run's span; the context it returns is the parent of
// the spans of the run's nodes and calls.
func (r *Run) traceRun(ctx context.Context) (context.Context, *tracing.Span) {
	if !tracing.Enabled(ctx) {
		return ctx, nil
	}
	redact := journal.NewRedactor(r.secrets...).Redact
	ctx, span := tracing.StartRun(ctx, tracing.RunInfo{
		ID: r.ID, Spec: r.Plan.Name, SpecPath: r.Plan.Path, Recorded: len(r.recorded), Sweep: r.opts.Sweep, Redact: redact,
	})
	return tracing.WithRedactor(ctx, redact), span
}

// endRunSpan records how the run ended and where its calls were answered
// from.
func (r *Run) endRunSpan(span *tracing.Span, res *result.Result, err error) {
	if span == nil {
		return
	}
	cc := r.CallCounts()
	span.SetAttributes(
		attribute.Int("runner.calls.network", cc.Network), attribute.Int("runner.calls.cache", cc.Cache),
		attribute.Int("runner.calls.shared", cc.Shared), attribute.Int("runner.calls.replay", cc.Replay),
		attribute.Int("runner.calls.journal", cc.Journal),
	)
	if res != nil {
		span.SetAttributes(attribute.String("runner.status", res.Status),
			attribute.Int("gen_ai.usage.input_tokens", res.Usage.Total.PromptTokens),
			attribute.Int("gen_ai.usage.output_tokens", res.Usage.Total.CompletionTokens))
	}
	switch {
	case errors.Is(err, kit.ErrWaiting):
		// Waiting for answers is no failure of the run.
		span.End(nil)
	case errors.Is(err, ErrInterrupted):
		span.EndAs(err, "interrupted")
	default:
		span.End(err)
	}
}

// runNode executes a node inside its span.
func (r *Run) runNode(ctx context.Context, node *spec.NodePlan, f *frame) (value.NodeResult, error) {
	if node.CountError != "" {
		return value.NodeResult{}, errors.New(node.CountError)
	}
	ctx, span := tracing.StartNode(ctx, node.ID, string(node.Kind), f.scope.Key)
	res, err := r.execNode(ctx, node, f)
	if errors.Is(err, kit.ErrWaiting) {
		// Waiting for answers is no failure of the node.
		span.SetAttributes(attribute.Bool("runner.waiting", true))
		span.End(nil)
	} else {
		span.End(err)
	}
	return res, err
}
