package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/spec"
)

// host is what one node execution sees of the run (kit.Host).
type host struct {
	run    *Run
	node   *spec.NodePlan
	scope  kit.Scope
	prefix string // node/scope, the first part of every call key
	frame  *frame
	ctx    context.Context

	randOnce sync.Once
	rng      *rand.Rand
}

func (h *host) Scope() kit.Scope { return h.scope }

// EndpointError is a model call that failed after its retries; the CLI
// exits 3.
type EndpointError struct {
	Key string
	Err error
}

func (e *EndpointError) Error() string { return fmt.Sprintf("model call %s failed: %v", e.Key, e.Err) }
func (e *EndpointError) Unwrap() error { return e.Err }

// Complete makes a model call, or serves it from the journal of an earlier
// attempt at this run.
func (h *host) Complete(ctx context.Context, c kit.Call) (kit.Reply, error) {
	r := h.run
	key := h.prefix + "/" + c.Key
	model := c.Model
	if model == nil {
		model = c.Agent.Model
	}
	who := ""
	if c.Agent != nil {
		who = c.Agent.ID
	}
	if rep, ok := r.recorded[key]; ok {
		rep.Replayed = true
		r.noteText(rep.Content) // already in the journal: messages refer to it
		r.countCall("journal")
		r.usage.add(h.node.ID, who, model, rep)
		return rep, nil
	}
	if r.opts.Replay != nil {
		rep, ok := r.opts.Replay[key]
		if ok {
			rep.Replayed = true
			r.noteText(rep.Content)
			if err := r.event("model_response", key, replayedReply{Reply: rep, Source: "replay"}); err != nil {
				return kit.Reply{}, err
			}
			r.countCall("replay")
			r.usage.add(h.node.ID, who, model, rep)
			return rep, nil
		}
		if !r.opts.ReplayMissingLive {
			return kit.Reply{}, &MissingReplayError{Key: key}
		}
	}
	client := r.clients[model.Endpoint.Name]
	if client == nil {
		return kit.Reply{}, fmt.Errorf("model call %s: endpoint %q is not connected", key, model.Endpoint.Name)
	}
	req := llm.Request{Model: model.Model, Temperature: model.Temperature, TopP: model.TopP, MaxTokens: model.MaxTokens, Seed: model.Seed, Stream: model.Stream, JSONMode: c.JSONMode}
	digest := sha256.New()
	promptChars := 0
	for _, m := range c.Messages {
		req.Messages = append(req.Messages, llm.Message{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID, ToolCalls: toLLMCalls(m.ToolCalls)})
		digest.Write([]byte(m.Role + "\x00" + m.Content + "\x00"))
		promptChars += len(m.Content)
	}
	for _, t := range c.Tools {
		req.Tools = append(req.Tools, llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	reqEvent := map[string]any{
		"node": h.node.ID, "agent": who, "target": c.Target, "model": model.Model, "model_name": model.Name,
		"endpoint": model.Endpoint.Name, "params": params(model, c.JSONMode), "prompt_digest": hex.EncodeToString(digest.Sum(nil)),
		"prompt_chars": promptChars, "messages": h.messagesForJournal(c.Messages),
	}
	if len(c.Tools) > 0 {
		names := make([]string, len(c.Tools))
		for i, t := range c.Tools {
			names[i] = t.Name
		}
		reqEvent["tools"] = names
	}
	if err := r.event("model_request", key, reqEvent); err != nil {
		return kit.Reply{}, err
	}
	start := time.Now()
	send := func() (kit.Reply, error) {
		r.pool.sent.Add(1)
		resp, err := client.Complete(ctx, req, func(a llm.Attempt) {
			_ = r.event("retry", key, map[string]any{"attempt": a.N, "status": a.Status, "error": a.Err.Error(), "wait_ms": a.Wait.Milliseconds()})
		})
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, context.Canceled) {
				return kit.Reply{}, ctx.Err()
			}
			_ = r.event("model_error", key, map[string]any{"error": err.Error()})
			var le *llm.Error
			if errors.As(err, &le) {
				return kit.Reply{}, &EndpointError{Key: key, Err: err}
			}
			return kit.Reply{}, fmt.Errorf("model call %s: %w", key, err)
		}
		rep := kit.Reply{
			Content: resp.Content, FinishReason: resp.FinishReason, Model: resp.Model,
			PromptTokens: resp.PromptTokens, CompletionTokens: resp.CompletionTokens,
			LatencyMS: resp.Latency.Milliseconds(), Attempts: resp.Attempts,
		}
		if rep.LatencyMS == 0 {
			rep.LatencyMS = time.Since(start).Milliseconds()
		}
		for _, tc := range resp.ToolCalls {
			rep.ToolCalls = append(rep.ToolCalls, kit.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
		}
		return rep, nil
	}
	var (
		rep    kit.Reply
		source string // "" for a reply this call received from the endpoint
		err    error
	)
	if r.opts.Cache != nil {
		rep, source, err = r.cached(ctx, CacheKey(model, r.bases[model.Endpoint.Name], req, r.sampleKey(key)), send)
		if err != nil && source == "shared" {
			// Another run's identical call failed; report it under this key.
			_ = r.event("model_error", key, map[string]any{"error": err.Error(), "source": source})
		}
	} else {
		rep, err = send()
	}
	if err != nil {
		return kit.Reply{}, err
	}
	r.noteText(rep.Content)
	var ev any = rep
	if source != "" {
		ev = replayedReply{Reply: rep, Source: source}
	}
	if err := r.event("model_response", key, ev); err != nil {
		return kit.Reply{}, err
	}
	r.countCall(source)
	r.usage.add(h.node.ID, who, model, rep)
	return rep, nil
}

func toLLMCalls(calls []kit.ToolCall) []llm.ToolCall {
	var out []llm.ToolCall
	for _, c := range calls {
		out = append(out, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	return out
}

func params(m *spec.ModelPlan, jsonMode bool) map[string]any {
	p := map[string]any{}
	if m.Temperature != nil {
		p["temperature"] = *m.Temperature
	}
	if m.TopP != nil {
		p["top_p"] = *m.TopP
	}
	if m.MaxTokens > 0 {
		p["max_tokens"] = m.MaxTokens
	}
	if m.Seed != nil {
		p["seed"] = *m.Seed
	}
	if m.Stream {
		p["stream"] = true
	}
	if jsonMode {
		p["json_mode"] = true
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
}

func (h *host) messagesForJournal(ms []kit.ChatMessage) []journalMessage {
	out := make([]journalMessage, len(ms))
	for i, m := range ms {
		sum := sha256.Sum256([]byte(m.Content))
		out[i] = journalMessage{Role: m.Role, Chars: len(m.Content), Digest: hex.EncodeToString(sum[:8])}
		if h.run.opts.LogPrompts {
			out[i].Content = m.Content
		}
	}
	return out
}

// noteText remembers that a text is already in the journal, so a message
// with the same content refers to it instead of repeating it.
func (r *Run) noteText(s string) {
	sum := sha256.Sum256([]byte(s))
	r.mu.Lock()
	r.seenText[hex.EncodeToString(sum[:])] = true
	r.mu.Unlock()
}

func (h *host) Render(name string, data *spec.PromptData) (string, error) {
	var b strings.Builder
	if err := h.run.Plan.Templates.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("node %q: rendering template %s: %w", h.node.ID, name, err)
	}
	return b.String(), nil
}

func (h *host) Prompt(node *spec.NodePlan, agent *spec.AgentPlan) *spec.PromptData {
	r := h.run
	r.mu.Lock()
	defer r.mu.Unlock()
	data := &spec.PromptData{
		Agent: agent.View(), Round: h.scope.Round, Loop: h.scope.Loop, Item: h.scope.Item, Goal: h.scope.Goal,
		Inputs: r.inputs, Vars: r.vars, Nodes: map[string]spec.NodeResult{},
	}
	for _, a := range node.Agents {
		data.Agents = append(data.Agents, a.View())
	}
	for _, a := range r.Plan.Agents {
		data.AllAgents = append(data.AllAgents, a.View())
	}
	for k, v := range r.results {
		data.Nodes[k] = v
	}
	// Usually every message is visible: size the history once rather than
	// growing it message by message on every call.
	data.History = make([]spec.Message, 0, len(r.messages))
	for _, m := range r.messages {
		if !Visible(m, agent.ID) {
			continue
		}
		data.History = append(data.History, m)
		if m.To == agent.ID && m.Round == h.scope.Round && m.Goal == h.scope.Goal.ID {
			data.Inbox = append(data.Inbox, m)
		}
	}
	return data
}

// Visible reports whether agent may see message m: private messages only by
// their author, whispers by their author and addressee.
func Visible(m spec.Message, agent string) bool {
	if m.Private {
		return strings.EqualFold(m.From, agent)
	}
	if m.Whisper {
		return strings.EqualFold(m.From, agent) || strings.EqualFold(m.To, agent)
	}
	return true
}

func (h *host) Messages() []spec.Message {
	h.run.mu.Lock()
	defer h.run.mu.Unlock()
	out := make([]spec.Message, len(h.run.messages))
	copy(out, h.run.messages)
	return out
}

// messageEvent is a recorded message as journaled: content and output are
// left out when an identical text is already in the journal (a model
// response, or an earlier message), keeping the journal about as large as the
// debate itself. The output is then the one parsed from that text, journaled
// with the call that produced it (its "output" event).
type messageEvent struct {
	spec.Message
	ContentDigest string `json:"content_digest,omitempty"`
}

func (h *host) Record(msgs ...spec.Message) []spec.Message {
	r := h.run
	// Summaries made for this node's prompts go first, in agent order, so
	// the record does not depend on which call finished first.
	r.mu.Lock()
	pending := r.pendingSummaries
	r.pendingSummaries = nil
	r.mu.Unlock()
	if len(pending) > 0 {
		order := map[string]int{}
		for i, a := range r.Plan.Agents {
			order[a.ID] = i
		}
		sort.SliceStable(pending, func(i, j int) bool { return order[pending[i].From] < order[pending[j].From] })
		h.record(pending)
	}
	return h.record(msgs)
}

func (h *host) record(msgs []spec.Message) []spec.Message {
	r := h.run
	out := make([]spec.Message, 0, len(msgs))
	for _, m := range msgs {
		r.mu.Lock()
		m.ID = fmt.Sprintf("m%d", len(r.messages)+1)
		if m.Node == "" {
			m.Node = h.node.ID
		}
		if m.Round == 0 {
			m.Round = h.scope.Round
		}
		if m.Goal == "" {
			m.Goal = h.scope.Goal.ID
		}
		r.messages = append(r.messages, m)
		sum := sha256.Sum256([]byte(m.Content))
		d := hex.EncodeToString(sum[:])
		seen := r.seenText[d]
		r.seenText[d] = true
		r.mu.Unlock()
		ev := messageEvent{Message: m}
		if seen && m.Content != "" {
			ev.Content, ev.Output = "", nil
			ev.ContentDigest = d[:16]
		}
		_ = r.event("message", m.ID, ev)
		out = append(out, m)
	}
	return out
}

func (h *host) Env() *spec.Env { return h.run.env(h.scope) }

func (h *host) Event(typ, key string, data any) error {
	if typ == "tool_call" {
		// key is already a full call key; keep tool calls for the result.
		if m, ok := data.(map[string]any); ok {
			h.run.noteToolCall(ToolCallInfo{Key: h.prefix + "/" + key, Agent: fmt.Sprint(m["agent"]), Tool: fmt.Sprint(m["tool"]), Arguments: fmt.Sprint(m["arguments"]), Result: fmt.Sprint(m["result"])})
		}
	}
	if key != "" {
		key = h.prefix + "/" + key
	} else {
		key = h.prefix
	}
	return h.run.event(typ, key, data)
}

func (h *host) Warn(format string, args ...any) { h.run.warn(format, args...) }

func (h *host) Rand() *rand.Rand {
	h.randOnce.Do(func() {
		f := fnv.New64a()
		f.Write([]byte(h.prefix))
		h.rng = rand.New(rand.NewPCG(uint64(h.run.seed), f.Sum64()))
	})
	return h.rng
}

func (h *host) Result(node string) (spec.NodeResult, bool) {
	h.run.mu.Lock()
	defer h.run.mu.Unlock()
	res, ok := h.run.results[node]
	return res, ok
}

func (h *host) RunNode(ctx context.Context, id string) (spec.NodeResult, error) {
	n, ok := h.run.Plan.Nodes[id]
	if !ok {
		return spec.NodeResult{}, fmt.Errorf("unknown node %q", id)
	}
	return h.run.runNode(ctx, n, h.frame)
}

func (h *host) Answers() kit.Answerer { return answerer{h.run} }

func (h *host) Progress(ev kit.ProgressEvent) {
	if h.run.opts.Observer != nil {
		h.run.opts.Observer(Notice{Progress: &ev, Scope: h.scope.Key})
	}
}
