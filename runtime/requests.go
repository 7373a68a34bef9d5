// This file journals a call's request (the model_request event) and
// tells a resume whether a journaled reply still answers it.

package runtime

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/digest"
	"github.com/debate-runner/runner/runtime/drift"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/llm"
)

// journalRequest journals a call's request once no recorded reply answers
// it: model, parameters, prompt sizes and digests (and texts with
// --log-prompts).
func (r *Run) journalRequest(c *calls.Call) error {
	promptChars := 0
	for _, m := range c.Kit.Messages {
		promptChars += len(m.Content)
	}
	model := c.Model
	ev := requestEvent{
		Node: c.Node, Agent: c.Agent, Target: c.Kit.Target, Model: model.Model, ModelName: model.Name,
		Endpoint: model.Endpoint.Name, Params: newCallParams(&c.Request), PromptDigest: digest.Prompt(c.Kit.Messages),
		PromptChars: promptChars, Messages: r.messagesForJournal(c.Kit.Messages), RequestDigest: drift.RequestDigest(c),
		Resample: c.Resample, Human: c.Kit.Seat(),
	}
	if len(c.Kit.Tools) > 0 {
		ev.Tools = make([]string, len(c.Kit.Tools))
		for i, t := range c.Kit.Tools {
			ev.Tools[i] = t.Name
		}
	}
	return r.event(event.ModelRequest, c.Key, ev)
}

// requestEvent is the payload of a model_request event. Its fields are in
// the order of their JSON names, which is how the journal wrote these events
// when they were maps; a struct spares a map and its sorting per call.
type requestEvent struct {
	Agent    string `json:"agent"`
	Endpoint string `json:"endpoint"`
	// Human marks the turn of a person at a seat: asked of the person,
	// not sent.
	Human        bool             `json:"human,omitempty"`
	Messages     []journalMessage `json:"messages"`
	Model        string           `json:"model"`
	ModelName    string           `json:"model_name"`
	Node         string           `json:"node"`
	Params       callParams       `json:"params"`
	PromptChars  int              `json:"prompt_chars"`
	PromptDigest string           `json:"prompt_digest"`
	// RequestDigest identifies the whole request (see drift.RequestDigest).
	RequestDigest string `json:"request_digest,omitempty"`
	// Resample is the call's resample number (resume --resample), 0 for
	// its first sample.
	Resample int      `json:"resample,omitempty"`
	Target   string   `json:"target"`
	Tools    []string `json:"tools,omitempty"`
}

// sameRequest reports whether a call asks what the journaled call of its
// key asked, so that the journaled reply answers it. A call whose request
// changed (a resume with a fixed spec) is made again, with a warning that
// says why. Journals without request digests are trusted by key.
func (r *Run) sameRequest(c *calls.Call) bool {
	rec, ok := r.requests[c.Key]
	if !ok || rec.Digest == "" || rec.Digest == drift.RequestDigest(c) {
		return true
	}
	why := "its parameters, reply format or tools changed"
	if rec.Prompt != digest.Prompt(c.Kit.Messages) {
		why = "its prompt changed (" + strings.TrimPrefix(firstMessageDrift(c.Kit.Messages, rec.Messages), "its prompt differs from the recorded one ") + ")"
	}
	r.warn("model call %s is made again: %s since its reply was journaled", c.Key, why)
	return false
}

// callParams are the parameters a call was made with; unset ones are left
// out. Fields are in JSON name order, as for requestEvent.
type callParams struct {
	Deployment      string          `json:"deployment,omitempty"`
	Extra           json.RawMessage `json:"extra,omitempty"`
	JSONMode        bool            `json:"json_mode,omitempty"`
	JSONSchema      bool            `json:"json_schema,omitempty"`
	MaxTokens       *int            `json:"max_tokens,omitempty"`
	ReasoningEffort string          `json:"reasoning_effort,omitempty"`
	Seed            *int            `json:"seed,omitempty"`
	Stream          bool            `json:"stream,omitempty"`
	Temperature     *float64        `json:"temperature,omitempty"`
	TopP            *float64        `json:"top_p,omitempty"`
}

// newCallParams describes what req asks of the model.
func newCallParams(req *llm.Request) callParams {
	p := callParams{
		Temperature: req.Temperature, TopP: req.TopP, Seed: req.Seed, Stream: req.Stream,
		JSONMode: req.JSON != nil, JSONSchema: req.JSON != nil && len(req.JSON.Schema) > 0,
		Deployment: req.Deployment, ReasoningEffort: req.ReasoningEffort, Extra: calls.ExtraObject(req.Extra),
	}
	if req.MaxTokens > 0 {
		n := req.MaxTokens
		p.MaxTokens = &n
	}
	return p
}

// journalMessage is a prompt message as the journal stores it: role, size
// and digest, plus the text when prompts are logged.
type journalMessage struct {
	Role    string `json:"role"`
	Chars   int    `json:"chars"`
	Digest  string `json:"digest"`
	Content string `json:"content,omitempty"`
	// Name, ToolCallID and ToolCalls are journaled whatever --log-prompts
	// says: they are short, and a call's page shows who spoke and which
	// tools were asked for and answered.
	Name       string         `json:"name,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	ToolCalls  []kit.ToolCall `json:"tool_calls,omitempty"`
}

func (r *Run) messagesForJournal(ms []kit.ChatMessage) []journalMessage {
	out := make([]journalMessage, len(ms))
	for i, m := range ms {
		sum := digest.Strings(m.Content)
		out[i] = journalMessage{Role: m.Role, Chars: len(m.Content), Digest: hex.EncodeToString(sum[:8]), Name: m.Name, ToolCallID: m.ToolCallID, ToolCalls: m.ToolCalls}
		if r.opts.LogPrompts {
			out[i].Content = m.Content
		}
	}
	return out
}

// noteDrift records a call served despite a changed request: a warning
// naming it, and the call among the run's changed prompts.
func (r *Run) noteDrift(key, source, what string) {
	r.mu.Lock()
	r.drifted = append(r.drifted, key)
	r.mu.Unlock()
	r.warn("model call %s is served from the %s although %s", key, source, what)
}

// replayDrift checks the calls a replay serves against the recording's
// requests, before next (the replay stage) serves them.
func (r *Run) replayDrift(next calls.Stage) calls.Stage {
	return calls.StageFunc(func(ctx context.Context, c *calls.Call) (kit.Reply, calls.Source, error) {
		if _, served := r.opts.Replay[c.Key]; served {
			rec, ok := r.opts.ReplayRequests[c.Key]
			if !ok || rec.Digest == "" {
				// A recording of a runner from before request digests (or
				// of a call it did not journal): nothing to compare with.
				what := "the recording does not say what its request was (a runner from before request digests), so whether its prompt changed cannot be told"
				if r.opts.Strict {
					return kit.Reply{}, calls.FromReplay, &drift.Error{Key: c.Key, What: what}
				}
				r.warnOnce("replay-unverified", "model call %s and others like it are served from the recording unchecked: %s", c.Key, what)
			}
			if ok {
				if what := drift.Of(c, rec); what != "" {
					if r.opts.Strict {
						return kit.Reply{}, calls.FromReplay, &drift.Error{Key: c.Key, What: what}
					}
					r.noteDrift(c.Key, "recording", what)
				}
			}
		}
		return next.Complete(ctx, c)
	})
}

// journalDrift fails a resume under --strict at a call whose journaled
// request differs (without it, such a call is made again with a warning:
// see sameRequest).
func (r *Run) journalDrift(next calls.Stage) calls.Stage {
	if !r.opts.Strict {
		return next
	}
	return calls.StageFunc(func(ctx context.Context, c *calls.Call) (kit.Reply, calls.Source, error) {
		if _, ok := r.recorded[c.Key]; ok {
			if rec, ok := r.requests[c.Key]; ok {
				if what := drift.Of(c, launch.RecordedRequest{Digest: rec.Digest, Prompt: rec.Prompt, Messages: rec.Messages}); what != "" {
					return kit.Reply{}, calls.FromJournal, &drift.Error{Key: c.Key, What: what}
				}
			}
		}
		return next.Complete(ctx, c)
	})
}

// DriftError is a call whose request differs from the recorded one, under
// --strict (see drift.Error).
type DriftError = drift.Error

func firstMessageDrift(now []kit.ChatMessage, was []launch.RecordedMessage) string {
	return drift.FirstMessage(now, was)
}
