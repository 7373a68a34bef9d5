// Package calls is the path a model call takes from a node to a reply: a
// chain of small stages, each of which answers the call itself or hands it
// on to the next. A run builds the chain it needs — replies recorded in its
// own journal (resume), a recording (--replay), the request's journal event,
// the response cache with identical calls in flight shared, the network; a
// dry run ends the chain in placeholders instead — and each stage is tested
// alone.
package calls

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/spec"
)

// Call is a model call on its way to a reply.
type Call struct {
	// Key is the call's identity within the run (NODE/SCOPE/AGENT...): the
	// same key always means the same call, which is how recorded replies
	// are found.
	Key string
	// Node and Agent say whose call it is ("" for no agent).
	Node, Agent string
	// Round and Goal are where in the flow the call is made: the innermost
	// loop's counter (0 outside loops) and the goal's id ("" outside goals).
	Round int
	Goal  string
	// Model is the model configuration the call uses.
	Model *spec.ModelPlan
	// BaseURL is where the model's endpoint is reached in this run.
	BaseURL string
	// Request is what is sent to the endpoint.
	Request llm.Request
	// Kit is the call as the node made it: messages, tools, reply hints.
	Kit kit.Call
	// Sample distinguishes the cache entries of repeated samples of the
	// same call (see CacheKey).
	Sample string
	// Resample is the call's resample number: 0 for its first sample, n
	// after `runner resume --resample` asked it afresh n times. A resample
	// is a new draw however the request reads (see CacheKey).
	Resample int
	// Scope, when set, keeps the call's cache entry to callers of the same
	// scope (a sweep with --own-samples): its key, at any temperature,
	// differs from that of the same request asked elsewhere (see CacheKey).
	Scope string
	// OnRetry is told of each failed attempt that will be retried.
	OnRetry func(llm.Attempt)
	// OnNote is told what the client changed in the request because the
	// endpoint refused it (nil: nobody is told).
	OnNote func(note string)
}

// Source says where a reply came from.
type Source string

// Sources of replies. Network is a reply this call received from the
// endpoint itself.
const (
	Network     Source = ""
	FromCache   Source = "cache"
	Shared      Source = "shared"
	FromReplay  Source = "replay"
	FromJournal Source = "journal"
	Placeholder Source = "placeholder"
	// Human is the message of a person playing the call's agent (a seat).
	Human Source = "human"
)

// Stage answers a call or hands it on.
type Stage interface {
	Complete(ctx context.Context, c *Call) (kit.Reply, Source, error)
}

// StageFunc is a function that is a Stage.
type StageFunc func(ctx context.Context, c *Call) (kit.Reply, Source, error)

// Complete implements Stage.
func (f StageFunc) Complete(ctx context.Context, c *Call) (kit.Reply, Source, error) {
	return f(ctx, c)
}

// MissingError is a call that a recording being replayed does not have.
type MissingError struct{ Key string }

func (e *MissingError) Error() string {
	return fmt.Sprintf("the recording has no response for call %s (the spec, inputs or vars differ from the recorded run; use --replay-missing live to call the model for such calls)", e.Key)
}

// Recorded answers calls from recorded replies by key, as source; a call
// without one goes on to next, or fails with a *MissingError when next is
// nil. Recorded replies are marked Replayed.
func Recorded(replies map[string]kit.Reply, source Source, next Stage) Stage {
	return StageFunc(func(ctx context.Context, c *Call) (kit.Reply, Source, error) {
		if rep, ok := replies[c.Key]; ok {
			rep.Replayed = true
			return rep, source, nil
		}
		if next == nil {
			return kit.Reply{}, source, &MissingError{Key: c.Key}
		}
		return next.Complete(ctx, c)
	})
}

// RecordedIf is Recorded for replies that answer a call only when keep
// says so (its request is the one the reply was recorded for); other calls
// go on to next.
func RecordedIf(replies map[string]kit.Reply, source Source, keep func(c *Call) bool, next Stage) Stage {
	return StageFunc(func(ctx context.Context, c *Call) (kit.Reply, Source, error) {
		if rep, ok := replies[c.Key]; ok && keep(c) {
			rep.Replayed = true
			return rep, source, nil
		}
		return next.Complete(ctx, c)
	})
}

// Before calls fn with the call before handing it on; an error from fn
// stops the call. The run journals a call's request here, once it is known
// that no recorded reply answers it.
func Before(fn func(c *Call) error, next Stage) Stage {
	return StageFunc(func(ctx context.Context, c *Call) (kit.Reply, Source, error) {
		if err := fn(c); err != nil {
			return kit.Reply{}, Network, err
		}
		return next.Complete(ctx, c)
	})
}

// EndpointError is a model call that failed after its retries.
type EndpointError struct {
	Key string
	Err error
}

func (e *EndpointError) Error() string { return fmt.Sprintf("model call %s failed: %v", e.Key, e.Err) }
func (e *EndpointError) Unwrap() error { return e.Err }
func (e *EndpointError) ExitCode() int { return exitcode.Endpoint }

// Is makes an EndpointError a kit.ErrCallFailed, which nodes that can go
// on without a call look for.
func (e *EndpointError) Is(target error) bool { return target == kit.ErrCallFailed }

// Client sends chat completions to one endpoint (an *llm.Client).
type Client interface {
	Complete(ctx context.Context, req llm.Request, onRetry func(llm.Attempt)) (llm.Response, error)
}

// Send is the last stage of a live chain: it sends the call to the client
// of its model's endpoint, counting what it sends in sent (nil: uncounted).
// An endpoint failure after retries is an *EndpointError naming the call.
func Send(client func(endpoint string) Client, sent *atomic.Int64) Stage {
	return StageFunc(func(ctx context.Context, c *Call) (kit.Reply, Source, error) {
		cl := client(c.Model.Endpoint.Name)
		if cl == nil {
			return kit.Reply{}, Network, fmt.Errorf("model call %s: endpoint %q is not connected", c.Key, c.Model.Endpoint.Name)
		}
		if sent != nil {
			sent.Add(1)
		}
		start := time.Now()
		resp, err := cl.Complete(ctx, c.Request, c.OnRetry)
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, context.Canceled) {
				return kit.Reply{}, Network, ctx.Err()
			}
			var le *llm.Error
			if errors.As(err, &le) {
				return kit.Reply{}, Network, &EndpointError{Key: c.Key, Err: err}
			}
			return kit.Reply{}, Network, fmt.Errorf("model call %s: %w", c.Key, err)
		}
		if c.OnNote != nil {
			for _, note := range resp.Adapted {
				c.OnNote(note)
			}
		}
		rep := kit.Reply{
			Content: resp.Content, FinishReason: resp.FinishReason, Model: resp.Model,
			PromptTokens: resp.PromptTokens, CompletionTokens: resp.CompletionTokens, CachedTokens: resp.CachedTokens, CacheWriteTokens: resp.CacheWriteTokens, UsageEstimated: resp.UsageEstimated,
			UsageError: resp.UsageError, UsageRaw: resp.UsageRaw,
			LatencyMS: resp.Latency.Milliseconds(), Attempts: resp.Attempts, Batch: resp.Batch, BatchShared: resp.BatchShared,
		}
		if rep.LatencyMS == 0 {
			rep.LatencyMS = time.Since(start).Milliseconds()
		}
		rep.ToolCalls = append(rep.ToolCalls, resp.ToolCalls...)
		if rep.BatchShared {
			// Another run's identical request was the one in the batch.
			return rep, Shared, nil
		}
		return rep, Network, nil
	})
}

type keyCtx struct{}

type callCtx struct{}

// WithKey returns a context that carries a call's key to what serves it:
// the HTTP transport of a request, a tracer.
func WithKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyCtx{}, key)
}

// WithCall returns a context that carries the call itself (and so its key)
// to what serves it: a scripted transport answers by its node, agent and
// prompt. What is served must not change the call.
func WithCall(ctx context.Context, c *Call) context.Context {
	return context.WithValue(ctx, callCtx{}, c)
}

// CallFrom returns the call a context carries, or nil.
func CallFrom(ctx context.Context) *Call {
	c, _ := ctx.Value(callCtx{}).(*Call)
	return c
}

// KeyFrom returns the call key a context carries, or "".
func KeyFrom(ctx context.Context) string {
	if k, ok := ctx.Value(keyCtx{}).(string); ok {
		return k
	}
	if c := CallFrom(ctx); c != nil {
		return c.Key
	}
	return ""
}
