// This file builds the path a model call takes (the chain of calls.Stage)
// and the request sent to the endpoint.

package runtime

import (
	"context"
	"fmt"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/runtime/tracing"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/value"
)

// durableWhileSent sends a call while the replies it may have been made
// from become durable, and hands its reply on only once they are (see
// syncedEvents): the fsync no longer holds up every wave of calls, and no
// reply is journaled before those it may have been made from are durable.
func (r *Run) durableWhileSent(next calls.Stage) calls.Stage {
	return calls.StageFunc(func(ctx context.Context, c *calls.Call) (kit.Reply, calls.Source, error) {
		synced := make(chan error, 1)
		go func() { synced <- r.durableForCall() }()
		rep, src, err := next.Complete(ctx, c)
		if serr := <-synced; serr != nil {
			return kit.Reply{}, calls.Network, serr
		}
		return rep, src, err
	})
}

// buildChain composes the run's call stages: replies recorded in its own
// journal (a resume) when the request is unchanged, then a recording
// (--replay; a call it lacks fails unless calls may go live), then the
// request's journal event, the response cache with identical calls in
// flight shared, the budget, and the network.
func (r *Run) buildChain() calls.Stage {
	var live calls.Stage = calls.Send(func(endpoint string) calls.Client {
		if c := r.conn.Clients[endpoint]; c != nil {
			return c
		}
		return nil
	}, r.conn.Pool.Counter())
	// The budget meets only calls that go to an endpoint: replies from the
	// journal, a recording or the cache cost nothing more.
	live = calls.Limited(r.budget, live)
	if r.opts.Cache != nil {
		live = calls.Cached(redactingCache{Cache: r.opts.Cache, red: r.red, writes: r.conn.Pool.Writes(), run: &r.cacheWrites}, r.conn.Pool.Flights(), live)
	}
	if r.opts.Remote != nil {
		live = r.opts.Remote // made elsewhere, with the cache there
	}
	live = calls.Before(r.journalRequest, r.durableWhileSent(r.seats(live)))
	chain := live
	if r.opts.Replay != nil {
		var next calls.Stage
		if r.opts.ReplayMissingLive {
			next = live
		}
		chain = r.replayDrift(calls.Recorded(r.opts.Replay, calls.FromReplay, next))
	}
	// Tracing goes first, so calls answered from the journal get a span too.
	chain = r.leftOut(chain)
	return tracing.Calls(r.journalDrift(calls.RecordedIf(r.recorded, calls.FromJournal, r.sameRequest, chain)), func(s string) string { return r.red.Redact(s) })
}

// newRequest is the request for a call: the model's parameters (less those
// it omits), what the call asks for, and the endpoint's and model's
// pass-through fields.
func newRequest(model *spec.ModelPlan, c *kit.Call) llm.Request {
	req := llm.Request{
		Model: model.Model, Deployment: model.Deployment, MaxTokens: model.MaxTokens, TokenField: model.TokenField(),
		ReasoningEffort: model.ReasoningEffort, Stream: model.Stream, CacheBreakpoints: model.CacheBreakpoints, Continued: c.Continued,
		Messages: make([]llm.Message, 0, len(c.Messages)),
	}
	if model.Endpoint != nil {
		req.NoStreamUsage = model.Endpoint.NoStreamUsage
	}
	if len(model.Omit) == 0 {
		req.Temperature, req.TopP, req.Seed = model.Temperature, model.TopP, model.Seed
	} else {
		if !model.Omits("temperature") {
			req.Temperature = model.Temperature
		}
		if !model.Omits("top_p") {
			req.TopP = model.TopP
		}
		if !model.Omits("seed") {
			req.Seed = model.Seed
		}
		if model.Omits("max_tokens") {
			req.MaxTokens = 0
		}
	}
	if c.JSONMode {
		req.JSON = &llm.JSONReply{Schema: c.JSONSchema, Name: c.SchemaName, Mode: llm.JSONMode(model.JSONModeFor())}
	}
	if extra := model.RequestExtra(); len(extra) > 0 {
		req.Extra = make([]llm.Field, len(extra))
		for i, f := range extra {
			req.Extra[i] = llm.Field{Name: f.Name, Value: f.Value}
		}
	}
	return req
}

// limitNote names a model's token limit for a truncation warning.
func limitNote(m *spec.ModelPlan) string {
	if m.MaxTokens > 0 {
		return fmt.Sprintf(", max_tokens %d of model %q", m.MaxTokens, m.Name)
	}
	return ", the server's own limit"
}

// splitCacheBreaks takes the {{cacheBreak}} marks out of a call's messages,
// noting where each message's stable start ends (kit.ChatMessage.CacheSplit),
// so that the journal, digests, caches and every count see the text as sent
// without breakpoints. The caller's slice is left as it was.
func splitCacheBreaks(msgs []kit.ChatMessage) []kit.ChatMessage {
	var out []kit.ChatMessage
	for i, m := range msgs {
		text, at := value.SplitCacheBreak(m.Content)
		if at < 0 {
			continue
		}
		if out == nil {
			out = append([]kit.ChatMessage(nil), msgs...)
		}
		out[i].Content, out[i].CacheSplit = text, at
	}
	if out == nil {
		return msgs
	}
	return out
}
