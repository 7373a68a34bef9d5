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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/journal"
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

	// replies are the texts of this node's replies by call key, for a
	// rejection to quote the reply it rejects.
	repliesMu sync.Mutex
	replies   map[string]string
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
		h.noteReply(key, rep.Content)
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
			h.noteReply(key, rep.Content)
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
	req := llm.Request{
		Model: model.Model, Temperature: model.Temperature, TopP: model.TopP, MaxTokens: model.MaxTokens, Seed: model.Seed, Stream: model.Stream, JSONMode: c.JSONMode,
		Messages: make([]llm.Message, 0, len(c.Messages)),
	}
	promptChars := 0
	for _, m := range c.Messages {
		req.Messages = append(req.Messages, llm.Message{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID, ToolCalls: toLLMCalls(m.ToolCalls)})
		promptChars += len(m.Content)
	}
	for _, t := range c.Tools {
		req.Tools = append(req.Tools, llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	reqEvent := requestEvent{
		Node: h.node.ID, Agent: who, Target: c.Target, Model: model.Model, ModelName: model.Name,
		Endpoint: model.Endpoint.Name, Params: newCallParams(model, c.JSONMode), PromptDigest: promptDigest(c.Messages),
		PromptChars: promptChars, Messages: h.messagesForJournal(c.Messages),
	}
	if len(c.Tools) > 0 {
		reqEvent.Tools = make([]string, len(c.Tools))
		for i, t := range c.Tools {
			reqEvent.Tools[i] = t.Name
		}
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
	h.noteReply(key, rep.Content)
	return rep, nil
}

func toLLMCalls(calls []kit.ToolCall) []llm.ToolCall {
	var out []llm.ToolCall
	for _, c := range calls {
		out = append(out, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	return out
}

// requestEvent is the payload of a model_request event. Its fields are in
// the order of their JSON names, which is how the journal wrote these events
// when they were maps; a struct spares a map and its sorting per call.
type requestEvent struct {
	Agent        string           `json:"agent"`
	Endpoint     string           `json:"endpoint"`
	Messages     []journalMessage `json:"messages"`
	Model        string           `json:"model"`
	ModelName    string           `json:"model_name"`
	Node         string           `json:"node"`
	Params       callParams       `json:"params"`
	PromptChars  int              `json:"prompt_chars"`
	PromptDigest string           `json:"prompt_digest"`
	Target       string           `json:"target"`
	Tools        []string         `json:"tools,omitempty"`
}

// callParams are the sampling parameters a call was made with; unset ones
// are left out. Fields are in JSON name order, as for requestEvent.
type callParams struct {
	JSONMode    bool     `json:"json_mode,omitempty"`
	MaxTokens   *int     `json:"max_tokens,omitempty"`
	Seed        *int     `json:"seed,omitempty"`
	Stream      bool     `json:"stream,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
}

func newCallParams(m *spec.ModelPlan, jsonMode bool) callParams {
	p := callParams{Temperature: m.Temperature, TopP: m.TopP, Seed: m.Seed, Stream: m.Stream, JSONMode: jsonMode}
	if m.MaxTokens > 0 {
		p.MaxTokens = &m.MaxTokens
	}
	return p
}

// hashBufs are scratch buffers for hashing strings: sha256 takes bytes, and
// converting a prompt or a reply to bytes would copy it to the heap on every
// call.
var hashBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxHashBuf bounds the scratch buffer kept for reuse, so one huge prompt
// does not pin its size for the rest of the process.
const maxHashBuf = 1 << 20

// sumStrings returns the SHA-256 of the concatenation of parts.
func sumStrings(parts ...string) [sha256.Size]byte {
	bp := hashBufs.Get().(*[]byte)
	b := (*bp)[:0]
	for _, p := range parts {
		b = append(b, p...)
	}
	sum := sha256.Sum256(b)
	if cap(b) <= maxHashBuf {
		*bp = b
		hashBufs.Put(bp)
	}
	return sum
}

// promptDigest identifies a prompt: the SHA-256 of each message's role and
// content, each followed by a NUL byte.
func promptDigest(ms []kit.ChatMessage) string {
	bp := hashBufs.Get().(*[]byte)
	b := (*bp)[:0]
	for _, m := range ms {
		b = append(b, m.Role...)
		b = append(b, 0)
		b = append(b, m.Content...)
		b = append(b, 0)
	}
	sum := sha256.Sum256(b)
	if cap(b) <= maxHashBuf {
		*bp = b
		hashBufs.Put(bp)
	}
	return hex.EncodeToString(sum[:])
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
		sum := sumStrings(m.Content)
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
	sum := sumStrings(s)
	r.mu.Lock()
	r.seenText[sum] = true
	r.mu.Unlock()
}

func (h *host) Render(name string, data *spec.PromptData) (string, error) {
	// Size the output like the template's previous one: prompts grow and
	// shrink slowly, and growing a builder from empty copies a prompt about
	// twice over.
	hint := h.run.renderHint(name)
	var b strings.Builder
	if n := hint.Load(); n > 0 {
		b.Grow(int(n + n/8))
	}
	if err := h.run.Plan.Templates.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("node %q: rendering template %s: %w", h.node.ID, name, err)
	}
	hint.Store(int64(b.Len()))
	return b.String(), nil
}

// renderHint returns the size of the last rendering of a template.
func (r *Run) renderHint(name string) *atomic.Int64 {
	if v, ok := r.renderSizes.Load(name); ok {
		return v.(*atomic.Int64)
	}
	v, _ := r.renderSizes.LoadOrStore(name, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// Prompt returns the data an agent's prompts see. The maps and slices in it
// may be shared with the run and with other prompts: callers may set its
// fields but must not change what those hold.
func (h *host) Prompt(node *spec.NodePlan, agent *spec.AgentPlan) *spec.PromptData {
	r := h.run
	r.mu.Lock()
	defer r.mu.Unlock()
	// Results, messages and agent views are shared rather than copied (see
	// setResult and messagesSoFar), so that a call's cost does not grow
	// with the length of the debate.
	data := &spec.PromptData{
		Agent: agent.View(), Round: h.scope.Round, Loop: h.scope.Loop, Item: h.scope.Item, Goal: h.scope.Goal,
		Inputs: r.inputs, Vars: r.vars, Nodes: r.results,
		Agents: r.agentViews(node), AllAgents: r.agentViews(nil),
	}
	if r.restricted == 0 {
		// No message is private or whispered: the agent sees them all.
		data.History = r.messagesSoFar()
	} else {
		data.History = make([]spec.Message, 0, len(r.messages))
		for i := range r.messages {
			if Visible(r.messages[i], agent.ID) {
				data.History = append(data.History, r.messages[i])
			}
		}
	}
	for i := range data.History {
		if m := &data.History[i]; m.To == agent.ID && m.Round == h.scope.Round && m.Goal == h.scope.Goal.ID {
			data.Inbox = append(data.Inbox, *m)
		}
	}
	return data
}

// messagesSoFar returns the messages recorded so far without copying them:
// the slice is capped at its length, so appending to it copies, and the run
// never changes a recorded message. It is never nil. Call with r.mu held.
func (r *Run) messagesSoFar() []spec.Message {
	n := len(r.messages)
	if n == 0 {
		return []spec.Message{}
	}
	return r.messages[:n:n]
}

// agentViews returns the views of a node's agents, or of every agent of the
// spec for a nil node. They are made once per list (the plan does not change
// during a run) and shared by every prompt; nil for no agents. Call with r.mu
// held.
func (r *Run) agentViews(node *spec.NodePlan) []spec.AgentView {
	if v, ok := r.views[node]; ok {
		return v
	}
	agents := r.Plan.Agents
	if node != nil {
		agents = node.Agents
	}
	var v []spec.AgentView
	if len(agents) > 0 {
		v = make([]spec.AgentView, len(agents))
		for i, a := range agents {
			v[i] = a.View()
		}
	}
	if r.views == nil {
		r.views = map[*spec.NodePlan][]spec.AgentView{}
	}
	r.views[node] = v
	return v
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

// Messages returns the run's messages so far. The slice is shared with the
// run (see Run.messagesSoFar): callers read it and must not change it.
func (h *host) Messages() []spec.Message {
	h.run.mu.Lock()
	defer h.run.mu.Unlock()
	return h.run.messagesSoFar()
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
	// The messages are journaled together, in one write: a node records
	// all of its replies at once.
	entries := make([]journal.Entry, 0, len(msgs))
	for _, m := range msgs {
		sum := sumStrings(m.Content)
		r.mu.Lock()
		m.ID = "m" + strconv.Itoa(len(r.messages)+1)
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
		if m.Private || m.Whisper {
			r.restricted++
		}
		seen := r.seenText[sum]
		r.seenText[sum] = true
		r.mu.Unlock()
		ev := messageEvent{Message: m}
		if seen && m.Content != "" {
			ev.Content, ev.Output = "", nil
			ev.ContentDigest = hex.EncodeToString(sum[:8])
		}
		entries = append(entries, journal.Entry{Type: "message", Key: m.ID, Data: ev})
		out = append(out, m)
	}
	switch len(entries) {
	case 0:
	case 1:
		_ = r.event(entries[0].Type, entries[0].Key, entries[0].Data)
	default:
		_ = r.events(entries)
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
	if typ == "rejected" {
		h.noteRejection(key, data)
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
		told := ev // only a notice that is sent needs its own copy on the heap
		h.run.opts.Observer(Notice{Progress: &told, Scope: h.scope.Key})
	}
}
