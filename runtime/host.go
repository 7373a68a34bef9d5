// This file is the host a node kind runs through (kit.Host): one node
// execution's view of the run, and the model call it makes.

package runtime

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/nodes/tools"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/digest"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/runtime/llm/tokens"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"
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
	call.BaseURL = r.conn.Bases[model.Endpoint.Name]
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
	if err := r.observer().call(); err != nil {
		return kit.Reply{}, err
	}
	rep, source, err := r.chain.Complete(calls.WithCall(ctx, call), call)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return kit.Reply{}, ctx.Err()
		}
		if errors.Is(err, kit.ErrWaiting) {
			return kit.Reply{}, err // a person's turn, not given yet
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
	if source == calls.Shared && rep.Batch != "" {
		// An identical call of another run was the one in the batch, and
		// is billed for it.
		rep.BatchShared = true
	}
	r.noteText(rep.Content) // messages that repeat it refer to it
	if source != calls.FromJournal {
		if source == calls.Network {
			r.warnAboutReply(call, rep)
		}
		var ev any = rep
		if source != calls.Network {
			ev = replayedReply{Reply: rep, Source: string(source), Human: c.Seat()}
		}
		if err := r.event(event.ModelResponse, call.Key, ev); err != nil {
			return kit.Reply{}, err
		}
	}
	if c.Seat() {
		// A person's message: no model was asked, nothing is spent, and
		// one served from the journal or a recording is no model call.
		if source == calls.Human {
			r.countCall(string(source))
		}
		h.noteReply(call.Key, rep.Content)
		return rep, nil
	}
	r.countCall(string(source))
	if call.Resample > 0 {
		r.noteResample(call, source)
	}
	r.usage.add(usageKey{node: h.node.ID, agent: call.Agent, round: h.scope.Round, goal: h.scope.Goal.ID, call: call.Key}, model, rep, c.Messages, llm.BreakpointOffsets(&call.Request))
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
	if rep.UsageError != "" {
		r.warn("model call %s: endpoint %q sent usage that was not counted (%s); the reply is kept and its tokens are counted with the tokenizer, marked as estimated", c.Key, model.Endpoint.Name, rep.UsageError)
	}
	if rep.UsageEstimated && rep.UsageError == "" {
		r.warnOnce("usage:"+model.Endpoint.Name, "endpoint %q sent no token usage; tokens and cost of its calls are counted with the %s tokenizer and marked as estimated",
			model.Endpoint.Name, tokens.EncodingFor(model.Model))
	}
	if rep.FinishReason == "length" {
		r.warn("model call %s: the reply was cut off at the token limit (finish_reason length%s)", c.Key, limitNote(model))
	}
}

func (h *host) Env() *spec.Env {
	if it := h.iteration(); it != nil {
		return it.env(h.scope)
	}
	return h.run.env(h.scope)
}

// Holds evaluates a condition that ends something. In a dry run it never
// holds: the worst case goes on to the bound. A path check (pathWalk)
// fails where the condition cannot be evaluated, as the run would: the
// node's condition (an ask's per-agent when, a conversation's until) is
// evaluated on the path's values where and when the run evaluates it.
func (h *host) Holds(p *spec.Program, env map[string]any) (bool, error) {
	v, err := vm.Run(p.Program, env)
	if d := h.run.dry; d != nil {
		if w, ok := h.run.walk.(*pathWalk); ok && err != nil {
			src, pos := shownCondition(p)
			// (expr's own "(line:col)" counts in the compiled source,
			// which may be the negation: the diagnostic's place is the
			// condition's)
			msg := spec.ConditionError(errors.New(exprPlace.ReplaceAllString(firstLineOf(err), ""))).Error()
			w.fail("", pos, fmt.Sprintf("node %q: %s: %s", h.node.ID, src, msg), h.scope.Key)
			return false, fmt.Errorf("%s: %s", src, msg)
		}
		if err != nil {
			d.note("node %q: %s cannot be evaluated on stand-in replies (%v); it is taken as false", h.node.ID, p.Source, firstLineOf(err))
		} else {
			d.note("node %q runs to its bound: %s may end it earlier", h.node.ID, p.Source)
		}
		return false, nil
	}
	if err != nil {
		return false, spec.ConditionError(errors.New(strings.SplitN(err.Error(), "\n", 2)[0]))
	}
	b, _ := v.(bool)
	return b, nil
}

// Continues evaluates a condition that keeps something going (a
// conversation's while). In a dry run it always holds: the worst case goes
// on to the bound. A path check fails where it cannot be evaluated, as
// Holds does: the run would fail there.
func (h *host) Continues(p *spec.Program, env map[string]any) (bool, error) {
	v, err := vm.Run(p.Program, env)
	if d := h.run.dry; d != nil {
		if w, ok := h.run.walk.(*pathWalk); ok && err != nil {
			msg := spec.ConditionError(errors.New(exprPlace.ReplaceAllString(firstLineOf(err), ""))).Error()
			w.fail("", p.Pos, fmt.Sprintf("node %q: %s: %s", h.node.ID, p.Source, msg), h.scope.Key)
			return false, fmt.Errorf("%s: %s", p.Source, msg)
		}
		if err != nil {
			d.note("node %q: %s cannot be evaluated on stand-in replies (%v); it is taken as true", h.node.ID, p.Source, firstLineOf(err))
		} else {
			d.note("node %q runs to its bound: %s may end it earlier", h.node.ID, p.Source)
		}
		return true, nil
	}
	if err != nil {
		return false, spec.ConditionError(errors.New(strings.SplitN(err.Error(), "\n", 2)[0]))
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

// noteText remembers that a text is already in the journal, so a message
// with the same content refers to it instead of repeating it.
func (r *Run) noteText(s string) {
	sum := digest.Strings(s)
	r.mu.Lock()
	r.seenText[sum] = true
	r.mu.Unlock()
}

// exprPlace is the "(line:col)" expr ends its run-time errors with.
var exprPlace = regexp.MustCompile(` \(\d+:\d+\)$`)

// shownCondition is the source and position of a condition as written: a
// program compiled from syntax.Expr.Negated (an ask's when, checked as the
// skip it decides) is shown as the expression it negates, at its place.
func shownCondition(p *spec.Program) (string, syntax.Pos) {
	if inner, ok := strings.CutPrefix(p.Source, "!("); ok && strings.HasSuffix(inner, ")") {
		return strings.TrimSuffix(inner, ")"), syntax.Pos{Line: p.Pos.Line, Col: p.Pos.Col + 2}
	}
	return p.Source, p.Pos
}
