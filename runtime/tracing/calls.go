package tracing

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/spec"
)

// Calls is the call stage that gives each model call a span: it goes first
// in a run's chain, so calls answered from the journal (a resume), a
// recording (--replay) or the cache get a span too, marked with where the
// reply came from. Retries and waits for the endpoint's limits are events
// of the span. redact removes the run's secrets from what the span records
// (error texts, and messages when their content is recorded).
func Calls(next calls.Stage, redact func(string) string) calls.Stage {
	return calls.StageFunc(func(ctx context.Context, c *calls.Call) (kit.Reply, calls.Source, error) {
		t := from(ctx)
		if t == nil {
			return next.Complete(ctx, c)
		}
		return t.call(ctx, c, next, redact)
	})
}

// Attribute names of the GenAI semantic conventions (gen_ai.*), and of
// runner's own (runner.*).
const (
	attrOperation     = "gen_ai.operation.name"
	attrProvider      = "gen_ai.provider.name"
	attrSystem        = "gen_ai.system" // the older name of the provider, which many backends still read
	attrRequestModel  = "gen_ai.request.model"
	attrResponseModel = "gen_ai.response.model"
	attrInputTokens   = "gen_ai.usage.input_tokens"
	attrOutputTokens  = "gen_ai.usage.output_tokens"
	attrFinish        = "gen_ai.response.finish_reasons"
	attrAgent         = "gen_ai.agent.name"
	attrInput         = "gen_ai.input.messages"
	attrOutput        = "gen_ai.output.messages"
	attrSource        = "runner.call.source"
)

func (t *Tracer) call(ctx context.Context, c *calls.Call, next calls.Stage, redact func(string) string) (kit.Reply, calls.Source, error) {
	model := c.Request.Model
	if model == "" && c.Model != nil {
		model = c.Model.Model
	}
	attrs := make([]attribute.KeyValue, 0, 24)
	attrs = append(attrs,
		attribute.String(attrOperation, "chat"),
		attribute.String(attrRequestModel, model),
		attribute.String("runner.call.key", c.Key),
		attribute.String("runner.node.id", c.Node),
	)
	if c.Agent != "" {
		attrs = append(attrs, attribute.String(attrAgent, c.Agent))
	}
	if c.Model != nil {
		attrs = append(attrs, attribute.String("runner.model", c.Model.Name))
		if ep := c.Model.Endpoint; ep != nil {
			provider := providerName(ep, c.BaseURL)
			attrs = append(attrs, attribute.String("runner.endpoint", ep.Name),
				attribute.String(attrProvider, provider), attribute.String(attrSystem, provider))
		}
	}
	attrs = append(attrs, serverAttrs(c.BaseURL)...)
	attrs = append(attrs, requestAttrs(&c.Request)...)
	if t.content {
		attrs = append(attrs, attribute.String(attrInput, inputMessages(c.Kit.Messages, redact)))
	}
	ctx, span := t.tracer.Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	defer span.End()
	s := &Span{span: span, redact: redact}

	onRetry := c.OnRetry
	c.OnRetry = func(a llm.Attempt) {
		ev := []attribute.KeyValue{
			attribute.Int("runner.retry.attempt", a.N),
			attribute.Float64("runner.retry.wait_s", a.Wait.Seconds()),
		}
		if a.Status != 0 {
			ev = append(ev, attribute.Int("http.response.status_code", a.Status))
		}
		if a.Err != nil {
			ev = append(ev, attribute.String("exception.message", s.clean(firstLine(a.Err.Error()))))
		}
		span.AddEvent("retry", trace.WithAttributes(ev...))
		if onRetry != nil {
			onRetry(a)
		}
	}
	ctx = llm.WithWaits(ctx, func(limit string, d time.Duration) {
		span.AddEvent("wait", trace.WithAttributes(attribute.String("runner.wait.limit", limit), attribute.Float64("runner.wait.s", d.Seconds())))
	})

	rep, source, err := next.Complete(ctx, c)
	if err != nil {
		var le *llm.Error
		if errors.As(err, &le) && le.Status != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", le.Status))
		}
		s.End(err)
		return rep, source, err
	}
	src := string(source)
	if source == calls.Network {
		src = "network"
	}
	out := []attribute.KeyValue{
		attribute.String(attrSource, src),
		attribute.Int(attrInputTokens, rep.PromptTokens),
		attribute.Int(attrOutputTokens, rep.CompletionTokens),
	}
	if rep.Model != "" {
		out = append(out, attribute.String(attrResponseModel, rep.Model))
	}
	if rep.FinishReason != "" {
		out = append(out, attribute.StringSlice(attrFinish, []string{rep.FinishReason}))
	}
	if rep.Attempts > 1 {
		out = append(out, attribute.Int("runner.call.attempts", rep.Attempts))
	}
	if rep.UsageEstimated {
		out = append(out, attribute.Bool("runner.usage.estimated", true))
	}
	if t.content {
		out = append(out, attribute.String(attrOutput, outputMessages(rep, redact)))
	}
	span.SetAttributes(out...)
	return rep, source, nil
}

// requestAttrs are the parameters the call asks the model for.
func requestAttrs(req *llm.Request) []attribute.KeyValue {
	var out []attribute.KeyValue
	if req.Temperature != nil {
		out = append(out, attribute.Float64("gen_ai.request.temperature", *req.Temperature))
	}
	if req.TopP != nil {
		out = append(out, attribute.Float64("gen_ai.request.top_p", *req.TopP))
	}
	if req.Seed != nil {
		out = append(out, attribute.Int("gen_ai.request.seed", *req.Seed))
	}
	if req.MaxTokens > 0 {
		out = append(out, attribute.Int("gen_ai.request.max_tokens", req.MaxTokens))
	}
	if req.JSON != nil {
		out = append(out, attribute.String("gen_ai.output.type", "json"))
	} else {
		out = append(out, attribute.String("gen_ai.output.type", "text"))
	}
	return out
}

// serverAttrs name the host and port a call goes to; never the URL's path,
// query or user, which can hold a key.
func serverAttrs(base string) []attribute.KeyValue {
	if base == "" {
		return nil
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	n, _ := strconv.Atoi(port)
	return []attribute.KeyValue{attribute.String("server.address", u.Hostname()), attribute.Int("server.port", n)}
}

// providers are the GenAI conventions' names of providers by the host of
// their API.
var providers = []struct{ suffix, name string }{
	{"api.openai.com", "openai"},
	{".openai.azure.com", "azure.ai.openai"},
	{".services.ai.azure.com", "azure.ai.inference"},
	{"api.groq.com", "groq"},
	{"api.deepseek.com", "deepseek"},
	{"api.mistral.ai", "mistral_ai"},
	{"api.x.ai", "x_ai"},
	{"api.perplexity.ai", "perplexity"},
	{"generativelanguage.googleapis.com", "gcp.gemini"},
	{"api.anthropic.com", "anthropic"},
	{"api.cohere.ai", "cohere"},
	{"api.cohere.com", "cohere"},
}

// providerName is the gen_ai.provider.name of an endpoint: a known
// provider by its host, and otherwise its provider kind's name for it
// ("openai" for a kind that gives none).
func providerName(ep *spec.EndpointPlan, base string) string {
	if u, err := url.Parse(base); err == nil {
		host := strings.ToLower(u.Hostname())
		for _, p := range providers {
			if host == strings.TrimPrefix(p.suffix, ".") || strings.HasSuffix(host, p.suffix) {
				return p.name
			}
		}
		if ip := net.ParseIP(host); ip == nil && strings.HasSuffix(host, "openrouter.ai") {
			return "openrouter"
		}
	}
	if ep.Provider != nil {
		if name := ep.Provider.Doc().GenAIName; name != "" {
			return name
		}
	}
	return "openai"
}

// part and message are the shapes of gen_ai.input.messages and
// gen_ai.output.messages.
type part struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

type message struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

func inputMessages(ms []kit.ChatMessage, redact func(string) string) string {
	r := cleaner(redact)
	out := make([]message, 0, len(ms))
	for _, m := range ms {
		msg := message{Role: m.Role}
		if m.Content != "" {
			typ := "text"
			if m.Role == "tool" {
				typ = "tool_call_response"
			}
			msg.Parts = append(msg.Parts, part{Type: typ, Content: r(m.Content), ID: m.ToolCallID})
		}
		for _, tc := range m.ToolCalls {
			msg.Parts = append(msg.Parts, part{Type: "tool_call", ID: tc.ID, Name: tc.Name, Arguments: r(tc.Arguments)})
		}
		out = append(out, msg)
	}
	return encode(out)
}

func outputMessages(rep kit.Reply, redact func(string) string) string {
	r := cleaner(redact)
	msg := message{Role: "assistant", FinishReason: rep.FinishReason, Parts: []part{}}
	if rep.Content != "" {
		msg.Parts = append(msg.Parts, part{Type: "text", Content: r(rep.Content)})
	}
	for _, tc := range rep.ToolCalls {
		msg.Parts = append(msg.Parts, part{Type: "tool_call", ID: tc.ID, Name: tc.Name, Arguments: r(tc.Arguments)})
	}
	return encode([]message{msg})
}

// cleaner removes secrets from a text with redact, if any. Texts are
// redacted before they are encoded, as JSON could escape a secret's
// characters and hide it from the redactor.
func cleaner(redact func(string) string) func(string) string {
	if redact == nil {
		return func(s string) string { return s }
	}
	return redact
}

func encode(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

// errorType is the error.type of a failed span: the HTTP status of an
// endpoint failure, or the kind of failure.
func errorType(err error) string {
	var le *llm.Error
	var missing *calls.MissingError
	switch {
	case errors.As(err, &le) && le.Status != 0:
		return strconv.Itoa(le.Status)
	case errors.As(err, &le):
		return "endpoint"
	case errors.Is(err, context.Canceled):
		// Interrupted, or stopped because another call of its node failed.
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &missing):
		return "replay_missing"
	case errors.Is(err, kit.ErrWaiting):
		return "waiting"
	}
	return "_OTHER"
}
