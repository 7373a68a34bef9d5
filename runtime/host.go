package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/nodes/tools"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/history"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/runtime/llm/tokens"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/tmplguard"
	"github.com/debate-runner/runner/runtime/tracing"
	"github.com/debate-runner/runner/spec"
	"github.com/expr-lang/expr/vm"
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
	// failed are the request digests of this node's calls that failed
	// after their retries, by call key (see noteFailure).
	failed map[string]string

	// turns follows a dry run through a node that takes turns (see
	// kit.TurnBounded), to extrapolate the turns a spent call budget cut.
	turns *dryTurns
}

func (h *host) Scope() kit.Scope { return h.scope }

// Complete makes a model call through the run's chain of call stages:
// its own journal (resume), a recording (--replay), the request's journal
// event, the response cache, the network (or, for a dry run, stand-ins).
// It journals what came back and counts usage.
func (h *host) Complete(ctx context.Context, c kit.Call) (kit.Reply, error) {
	r := h.run
	if it := h.iteration(); it != nil {
		if err := it.stopped(); err != nil {
			return kit.Reply{}, err
		}
	}
	model := c.Model
	if model == nil {
		model = c.Agent.Model
	}
	c.Messages = splitCacheBreaks(c.Messages)
	call := &calls.Call{Key: h.prefix + "/" + c.Key, Node: h.node.ID, Model: model, Kit: c, Round: h.scope.Round, Goal: h.scope.Goal.ID}
	if c.Agent != nil {
		call.Agent = c.Agent.ID
	}
	call.BaseURL = r.bases[model.Endpoint.Name]
	call.Sample = r.sampleKey(call.Key)
	call.Resample = r.fresh[call.Key]
	call.Scope = r.opts.CacheScope
	call.Request = newRequest(model, &c)
	for _, m := range c.Messages {
		call.Request.Messages = append(call.Request.Messages, llm.Message{Role: m.Role, Content: m.Content, Name: m.Name, ToolCallID: m.ToolCallID, ToolCalls: append([]kit.ToolCall(nil), m.ToolCalls...), CacheSplit: m.CacheSplit})
	}
	for _, t := range c.Tools {
		call.Request.Tools = append(call.Request.Tools, llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	call.OnRetry = func(a llm.Attempt) {
		_ = r.event(event.Retry, call.Key, map[string]any{"attempt": a.N, "status": a.Status, "error": a.Err.Error(), "wait_ms": a.Wait.Milliseconds()})
	}
	call.OnNote = func(note string) { r.warn("%s", note) }
	if r.dry != nil {
		if r.dry.spent() {
			return kit.Reply{}, errBudget
		}
		r.dry.calls.Add(1)
	}
	rep, source, err := r.chain.Complete(calls.WithCall(ctx, call), call)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return kit.Reply{}, ctx.Err()
		}
		var missing *calls.MissingError
		if !errors.As(err, &missing) {
			ev := map[string]any{"error": err.Error()}
			if source == calls.Shared {
				// Another run's identical call failed; report it under this key.
				ev["source"] = string(source)
			}
			_ = r.event(event.ModelError, call.Key, ev)
		}
		if errors.Is(err, kit.ErrCallFailed) {
			h.noteFailure(call)
		}
		return kit.Reply{}, err
	}
	r.noteText(rep.Content) // messages that repeat it refer to it
	if source != calls.FromJournal {
		if source == calls.Network {
			r.warnAboutReply(call, rep)
		}
		var ev any = rep
		if source != calls.Network {
			ev = replayedReply{Reply: rep, Source: string(source)}
		}
		if err := r.event(event.ModelResponse, call.Key, ev); err != nil {
			return kit.Reply{}, err
		}
	}
	r.countCall(string(source))
	if call.Resample > 0 {
		r.noteResample(call, source)
	}
	r.usage.add(usageKey{node: h.node.ID, agent: call.Agent, round: h.scope.Round, goal: h.scope.Goal.ID, call: call.Key}, model, rep, c.Messages)
	h.noteReply(call.Key, rep.Content)
	return rep, nil
}

// noteResample counts a call asked afresh with resume --resample, and marks
// its reply in the run's warnings (so in result.json and the report), on
// this attempt and on every later one that serves it from the journal.
func (r *Run) noteResample(c *calls.Call, source calls.Source) {
	if source != calls.FromJournal {
		r.mu.Lock()
		r.callCounts.Resampled++
		r.mu.Unlock()
	}
	r.warnOnce("resample:"+c.Key, "model call %s: its reply is resample %d (runner resume --resample), asked afresh after the journaled one failed the run", c.Key, c.Resample)
}

// warnAboutReply warns about what a reply from an endpoint says of the call:
// usage the server did not report, a reply cut off at the token limit.
func (r *Run) warnAboutReply(c *calls.Call, rep kit.Reply) {
	model := c.Model
	if rep.UsageEstimated {
		r.warnOnce("usage:"+model.Endpoint.Name, "endpoint %q sent no token usage; tokens and cost of its calls are counted with the %s tokenizer and marked as estimated",
			model.Endpoint.Name, tokens.EncodingFor(model.Model))
	}
	if rep.FinishReason == "length" {
		r.warn("model call %s: the reply was cut off at the token limit (finish_reason length%s)", c.Key, limitNote(model))
	}
}

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
		Endpoint: model.Endpoint.Name, Params: newCallParams(&c.Request), PromptDigest: promptDigest(c.Kit.Messages),
		PromptChars: promptChars, Messages: r.messagesForJournal(c.Kit.Messages), RequestDigest: requestDigest(c),
		Resample: c.Resample,
	}
	if len(c.Kit.Tools) > 0 {
		ev.Tools = make([]string, len(c.Kit.Tools))
		for i, t := range c.Kit.Tools {
			ev.Tools[i] = t.Name
		}
	}
	return r.event(event.ModelRequest, c.Key, ev)
}

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
		if c := r.clients[endpoint]; c != nil {
			return c
		}
		return nil
	}, &r.pool.sent)
	// The budget meets only calls that go to an endpoint: replies from the
	// journal, a recording or the cache cost nothing more.
	live = calls.Limited(r.budget, live)
	if r.opts.Cache != nil {
		live = calls.Cached(redactingCache{Cache: r.opts.Cache, red: r.red, writes: &r.pool.cacheWrites, run: &r.cacheWrites}, &r.pool.flights, live)
	}
	if r.opts.Remote != nil {
		live = r.opts.Remote // made elsewhere, with the cache there
	}
	live = calls.Before(r.journalRequest, r.durableWhileSent(live))
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
	// RequestDigest identifies the whole request (see requestDigest).
	RequestDigest string `json:"request_digest,omitempty"`
	// Resample is the call's resample number (resume --resample), 0 for
	// its first sample.
	Resample int      `json:"resample,omitempty"`
	Target   string   `json:"target"`
	Tools    []string `json:"tools,omitempty"`
}

// requestDigest identifies what a call asks of its model: the request's
// content address (calls.RequestKey) with the endpoint's URL as the spec
// writes it, so that the digest does not change when the run resumes
// against another address of the same endpoint.
//
// A call of a cache scope has the scope in its digest, so that a compare
// of two sweeps does not take requests only one of them could be served
// for shared ones.
func requestDigest(c *calls.Call) string {
	return calls.ScopedKey(calls.RequestKey(c.Model, "", c.Request, c.Sample), c.Scope)
}

// requestRecord is what the journal says of a call's request.
type requestRecord struct {
	Digest string `json:"request_digest"`
	Prompt string `json:"prompt_digest"`
	// Messages say which message of a changed prompt differs first.
	Messages []launch.RecordedMessage `json:"messages"`
}

// sameRequest reports whether a call asks what the journaled call of its
// key asked, so that the journaled reply answers it. A call whose request
// changed (a resume with a fixed spec) is made again, with a warning that
// says why. Journals without request digests are trusted by key.
func (r *Run) sameRequest(c *calls.Call) bool {
	rec, ok := r.requests[c.Key]
	if !ok || rec.Digest == "" || rec.Digest == requestDigest(c) {
		return true
	}
	why := "its parameters, reply format or tools changed"
	if rec.Prompt != promptDigest(c.Kit.Messages) {
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

// extraObject writes pass-through fields as one JSON object, in order; nil
// for none.

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
		sum := sumStrings(m.Content)
		out[i] = journalMessage{Role: m.Role, Chars: len(m.Content), Digest: hex.EncodeToString(sum[:8]), Name: m.Name, ToolCallID: m.ToolCallID, ToolCalls: m.ToolCalls}
		if r.opts.LogPrompts {
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

func (h *host) Render(name string, data any) (string, error) {
	if d := h.run.dry; d != nil {
		return h.renderDry(d, name, data)
	}
	// Size the output like the template's previous one: prompts grow and
	// shrink slowly, and growing a builder from empty copies a prompt about
	// twice over.
	hint := h.run.renderHint(name)
	var b strings.Builder
	if n := hint.Load(); n > 0 {
		b.Grow(int(n + n/8))
	}
	if err := h.run.templates.ExecuteTemplate(&b, name, data); err != nil {
		return "", h.renderError(name, err)
	}
	hint.Store(int64(b.Len()))
	return value.SealCacheBreaks(b.String()), nil
}

// renderError says which node's template failed. A value the guard found
// missing, or a printf that does not fit, is named as the guard names it,
// without text/template's wrapping around the guard's own function.
func (h *host) renderError(name string, err error) error {
	var missing *tmplguard.MissingError
	var format *tmplguard.FormatError
	switch {
	case errors.As(err, &missing):
		err = missing
	case errors.As(err, &format):
		err = format
	}
	return fmt.Errorf("node %q: rendering template %s: %w", h.node.ID, name, err)
}

// renderHint returns the size of the last rendering of a template.
func (r *Run) renderHint(name string) *atomic.Int64 {
	if v, ok := r.renderSizes.Load(name); ok {
		return v.(*atomic.Int64)
	}
	v, _ := r.renderSizes.LoadOrStore(name, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// Base returns what every prompt of an agent sees. The maps and slices in
// it may be shared with the run and with other prompts: callers may set its
// fields but must not change what those hold.
func (h *host) Base(node *spec.NodePlan, agent *spec.AgentPlan) value.PromptBase {
	r := h.run
	r.mu.Lock()
	defer r.mu.Unlock()
	// Results, messages and agent views are shared rather than copied (see
	// setResult and history.Store.Seen), so that a call's cost does not grow
	// with the length of the debate.
	data := value.PromptBase{
		Agent: agent.View(), Round: h.scope.Round, Loop: h.scope.Loop, Item: h.scope.Item, Goal: h.scope.Goal,
		Inputs: r.inputs, Vars: r.vars, Nodes: r.results,
		Agents: r.agentViews(node), AllAgents: r.agentViews(nil),
	}
	if it := h.iteration(); it != nil {
		data.Nodes = it.nodes()
		data.History, data.Inbox = it.seen(agent.ID, h.scope.Round, h.scope.Goal.ID)
		return data
	}
	data.History, data.Inbox = r.hist.Seen(agent.ID, h.scope.Round, h.scope.Goal.ID)
	return data
}

// messagesSoFar returns the messages recorded so far without copying them:
// the slice is capped at its length, so appending to it copies, and the run
// never changes a recorded message. It is never nil. Call with r.mu held.
func (r *Run) messagesSoFar() []value.Message {
	n := len(r.messages)
	if n == 0 {
		return []value.Message{}
	}
	return r.messages[:n:n]
}

// agentViews returns the views of a node's agents, or of every agent of the
// spec for a nil node. They are made once per list (the plan does not change
// during a run) and shared by every prompt; nil for no agents. Call with r.mu
// held.
func (r *Run) agentViews(node *spec.NodePlan) []value.AgentView {
	if v, ok := r.views[node]; ok {
		return v
	}
	agents := r.Plan.Agents
	if node != nil {
		agents = node.Agents
	}
	var v []value.AgentView
	if len(agents) > 0 {
		v = make([]value.AgentView, len(agents))
		for i, a := range agents {
			v[i] = a.View()
		}
	}
	if r.views == nil {
		r.views = map[*spec.NodePlan][]value.AgentView{}
	}
	r.views[node] = v
	return v
}

// Visible reports whether agent may see message m: private messages only by
// their author, whispers by their author and addressee.
func Visible(m value.Message, agent string) bool { return history.Visible(&m, agent) }

// Messages returns the run's messages so far. The slice is shared with the
// run (see Run.messagesSoFar): callers read it and must not change it.
func (h *host) Messages() []value.Message {
	if it := h.iteration(); it != nil {
		return it.messages()
	}
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
	value.Message
	ContentDigest string `json:"content_digest,omitempty"`
}

func (h *host) Record(msgs ...value.Message) []value.Message {
	r := h.run
	// Summaries made for this node's prompts go first, in agent order, so
	// the record does not depend on which call finished first.
	r.mu.Lock()
	pending := r.pendingSummaries
	r.pendingSummaries = nil
	r.mu.Unlock()
	if it := h.iteration(); it != nil {
		it.mu.Lock()
		pending = it.pending
		it.pending = nil
		it.mu.Unlock()
	}
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

func (h *host) record(msgs []value.Message) []value.Message {
	msgs = append([]value.Message(nil), msgs...)
	for i := range msgs {
		m := &msgs[i]
		// A cache split marks a prompt; a recorded text (an interjection
		// rendered from a template) keeps none.
		m.Content, _ = value.SplitCacheBreak(m.Content)
		if m.Node == "" {
			m.Node = h.node.ID
		}
		if m.Round == 0 {
			m.Round = h.scope.Round
		}
		if m.Goal == "" {
			m.Goal = h.scope.Goal.ID
		}
	}
	if it := h.iteration(); it != nil {
		out := it.hold(msgs)
		if h.turns != nil {
			for _, m := range out {
				h.turns.recorded(m.Turn, h.run.dry.worst())
			}
		}
		return out
	}
	return h.run.appendMessages(msgs, h.turns)
}

// appendMessages records messages in the run: each gets its id, joins the
// history and is journaled.
func (r *Run) appendMessages(msgs []value.Message, turns *dryTurns) []value.Message {
	out := make([]value.Message, 0, len(msgs))
	// The messages are journaled together, in one write: a node records
	// all of its replies at once.
	entries := make([]journal.Entry, 0, len(msgs))
	for _, m := range msgs {
		sum := sumStrings(m.Content)
		r.mu.Lock()
		m.ID = "m" + strconv.Itoa(len(r.messages)+1)
		r.hist.Append(m)
		if turns != nil {
			turns.recorded(m.Turn, r.dry.worst())
		}
		r.contentBytes.Add(int64(len(m.Content)))
		r.messages = r.hist.All()
		seen := r.seenText[sum]
		r.seenText[sum] = true
		r.mu.Unlock()
		ev := messageEvent{Message: m}
		if seen && m.Content != "" {
			ev.Content, ev.Output = "", nil
			ev.ContentDigest = hex.EncodeToString(sum[:8])
		}
		entries = append(entries, journal.Entry{Type: event.Message, Key: m.ID, Data: ev})
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

func (h *host) Env() *spec.Env {
	if it := h.iteration(); it != nil {
		return it.env(h.scope)
	}
	return h.run.env(h.scope)
}

// Holds evaluates a condition that ends something. In a dry run it never
// holds: the worst case goes on to the bound.
func (h *host) Holds(p *spec.Program, env map[string]any) (bool, error) {
	v, err := vm.Run(p.Program, env)
	if d := h.run.dry; d != nil {
		if err != nil {
			d.note("node %q: %s cannot be evaluated on stand-in replies (%v); it is taken as false", h.node.ID, p.Source, firstLineOf(err))
		} else {
			d.note("node %q runs to its bound: %s may end it earlier", h.node.ID, p.Source)
		}
		return false, nil
	}
	if err != nil {
		return false, errors.New(strings.SplitN(err.Error(), "\n", 2)[0])
	}
	b, _ := v.(bool)
	return b, nil
}

func (h *host) Event(typ event.Type, key string, data any) error {
	if typ == event.ToolCall {
		// key is already a full call key; keep tool calls for the result.
		if m, ok := data.(map[string]any); ok {
			h.run.noteToolCall(result.ToolCallInfo{Key: h.prefix + "/" + key, Agent: fmt.Sprint(m["agent"]), Tool: fmt.Sprint(m["tool"]), Arguments: fmt.Sprint(m["arguments"]), Result: fmt.Sprint(m["result"])})
		}
	}
	if key != "" {
		key = h.prefix + "/" + key
	} else {
		key = h.prefix
	}
	switch typ {
	case event.Rejected:
		h.noteRejection(key, data)
	case event.Absent:
		data = h.noteAbsence(key, data)
	}
	return h.run.event(typ, key, data)
}

func (h *host) Warn(format string, args ...any) { h.run.warn(format, args...) }

func (h *host) RandFor(key string) *rand.Rand {
	f := fnv.New64a()
	f.Write([]byte(h.prefix + "/" + key))
	return rand.New(rand.NewPCG(uint64(h.run.seed), f.Sum64()))
}

func (h *host) Rand() *rand.Rand {
	h.randOnce.Do(func() {
		f := fnv.New64a()
		f.Write([]byte(h.prefix))
		h.rng = rand.New(rand.NewPCG(uint64(h.run.seed), f.Sum64()))
	})
	return h.rng
}

func (h *host) Result(node string) (value.NodeResult, bool) {
	if it := h.iteration(); it != nil {
		res, ok := it.nodes()[node]
		return res, ok
	}
	h.run.mu.Lock()
	defer h.run.mu.Unlock()
	res, ok := h.run.results[node]
	return res, ok
}

func (h *host) RunNode(ctx context.Context, id string) (value.NodeResult, error) {
	n, ok := h.run.Plan.Nodes[id]
	if !ok {
		return value.NodeResult{}, fmt.Errorf("unknown node %q", id)
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

// renderDry renders a prompt of a dry run: in full while the render budget
// lasts, then as an estimate of its size, so that a dry run of a very long
// conversation stays linear in its calls.
func (h *host) renderDry(d *dryState, name string, data any) (string, error) {
	agent, seen := "", 0
	if b := value.BaseOf(data); b != nil {
		agent, seen = b.Agent.ID, len(b.History)
	}
	if d.rendered.Load() > d.RenderBudget {
		d.note("prompts past %d MiB of rendering are estimated from the last ones rendered in full", d.RenderBudget>>20)
		return d.estimate(name, agent, seen, h.run.avgMessageSize()), nil
	}
	var b strings.Builder
	if err := h.run.templates.ExecuteTemplate(&b, name, data); err != nil {
		return "", h.renderError(name, err)
	}
	d.renderedPrompt(name, agent, b.Len(), seen)
	return value.SealCacheBreaks(b.String()), nil
}

func firstLineOf(err error) string { return strings.SplitN(err.Error(), "\n", 2)[0] }

// avgMessageSize is the average size of a recorded message as prompts show
// it: its content and some framing (author, record).
func (r *Run) avgMessageSize() int {
	n := int64(r.hist.Len())
	if n == 0 {
		return 0
	}
	return int(r.contentBytes.Load()/n) + 40
}

// Parallel implements kit.Host with goroutines.
func (h *host) Parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	if e := h.run.emb; e != nil && e.Parallel != nil {
		return e.Parallel(ctx, n, f)
	}
	return kit.Parallel(ctx, n, f)
}

// ContextSnapshot implements tools.SnapshotHost: the snapshot of the
// context directory the run reads, if it was given one.
func (h *host) ContextSnapshot() *tools.Snapshot { return h.run.opts.ContextSnapshot }

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
