package ask

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/chat"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/nodes/parse"
	"github.com/debate-runner/runner/nodes/tools"
	"github.com/debate-runner/runner/spec"
	"github.com/expr-lang/expr/vm"
)

// task is one reply the node needs: a call, or a carried-over message.
type task struct {
	agent   *spec.AgentPlan
	target  *value.Message
	carried *value.Message
	// sample is the call's sample number (1-based).
	sample int
}

// Execute implements kit.Def: it plans one task per agent (or per agent
// and target), runs the calls concurrently, and records the replies in
// declaration order so results do not depend on timing.
func (Kind) Execute(ctx context.Context, h kit.Host, node *spec.NodePlan, cfg *Config) (value.NodeResult, error) {
	scope := h.Scope()
	all := h.Messages()
	samples, err := sampleCount(h, node, cfg)
	if err != nil {
		return value.NodeResult{}, err
	}
	tasks := make([]task, 0, len(node.Agents)*samples)
	for _, a := range node.Agents {
		if cfg.Skip != nil {
			prev, skip, err := skipped(h, node, cfg, all, a, scope.Goal.ID)
			if err != nil {
				return value.NodeResult{}, err
			}
			if skip {
				tasks = append(tasks, task{agent: a, carried: &prev, sample: 1})
				continue
			}
		}
		if cfg.CarryOver != "" && scope.Round > 1 {
			if prev, ok := LatestFrom(all, cfg.CarryOver, a.ID, scope.Goal.ID); ok {
				tasks = append(tasks, task{agent: a, carried: &prev, sample: 1})
				continue
			}
			h.Warn("node %q: agent %q has no %q message to carry over in round %d; asking the model", node.ID, a.ID, cfg.CarryOver, scope.Round)
		}
		for k := 1; k <= samples; k++ {
			if cfg.Each == nil {
				tasks = append(tasks, task{agent: a, sample: k})
				continue
			}
			for _, t := range targets(node, cfg.Each, all, a.ID, scope.Goal.ID) {
				t := t
				tasks = append(tasks, task{agent: a, target: &t, sample: k})
			}
		}
	}
	calls := 0
	for _, t := range tasks {
		if t.carried == nil {
			calls++
		}
	}
	replies := make([]value.Message, len(tasks))
	var asks []int // the tasks that call a model
	for i, t := range tasks {
		if t.carried != nil {
			m := *t.carried
			replies[i] = value.Message{
				From: t.agent.ID, Record: cfg.Record, Content: m.Content, Output: m.Output,
				Fields: m.Fields, Carried: true,
			}
			continue
		}
		asks = append(asks, i)
	}
	// lapses[i] is set when task i's call failed or its reply stayed
	// unusable and the node may go on without it (min_answers).
	lapses := make([]*lapse, len(tasks))
	if cfg.Sequential {
		return sequential(ctx, h, node, cfg, tasks, replies, lapses, calls)
	}
	err = h.Parallel(ctx, len(asks), func(ctx context.Context, j int) error {
		i := asks[j]
		t := tasks[i]
		reserveStack()
		h.Progress(kit.ProgressEvent{Node: node.ID, Agent: t.agent.ID, Started: true, Expected: calls})
		msg, err := ask(ctx, h, node, cfg, t)
		h.Progress(kit.ProgressEvent{Node: node.ID, Agent: t.agent.ID, Finished: true, Expected: calls})
		if err != nil {
			return tolerate(cfg, lapses, i, err)
		}
		replies[i] = msg
		return nil
	})
	if err != nil {
		return value.NodeResult{}, err
	}
	absent, err := settle(h, node, cfg, tasks, lapses)
	if err != nil {
		return value.NodeResult{}, err
	}
	kept := replies[:0:0]
	for i, m := range replies {
		if lapses[i] == nil {
			kept = append(kept, m)
		}
	}
	res := result(h.Record(kept...), calls)
	res.Absent = absent
	return res, nil
}

// skipped evaluates the node's when for an agent that has a message of the
// node's record in the goal: false drops the agent out of this execution,
// and it keeps that latest message. An agent with none is always asked.
func skipped(h kit.Host, node *spec.NodePlan, cfg *Config, all []value.Message, a *spec.AgentPlan, goal string) (value.Message, bool, error) {
	var own []value.Message
	for _, m := range all {
		if m.Record == cfg.Record && m.From == a.ID && m.Goal == goal {
			own = append(own, m)
		}
	}
	if len(own) == 0 {
		return value.Message{}, false, nil
	}
	env := h.Env().Map()
	env["agent"], env["own"] = a.View(), own
	skip, err := h.Holds(cfg.Skip, env)
	if err != nil {
		return value.Message{}, false, fmt.Errorf("node %q: when, for agent %q: %w", node.ID, a.ID, err)
	}
	return own[len(own)-1], skip, nil
}

// result is a node's result from the messages it recorded.
func result(recorded []value.Message, calls int) value.NodeResult {
	res := value.NodeResult{Outputs: map[string]any{}, Messages: recorded, Calls: calls}
	for _, m := range recorded {
		res.Outputs[m.From] = m.Output
		res.Output = m.Output
		res.Text = m.Content
	}
	return res
}

// sequential makes the node's calls one after another, in agent order,
// recording each reply before the next call so that it is in the next
// agent's history (a round-robin turn within one node).
func sequential(ctx context.Context, h kit.Host, node *spec.NodePlan, cfg *Config, tasks []task, replies []value.Message, lapses []*lapse, calls int) (value.NodeResult, error) {
	var recorded []value.Message
	for i, t := range tasks {
		msg := replies[i]
		if t.carried == nil {
			h.Progress(kit.ProgressEvent{Node: node.ID, Agent: t.agent.ID, Started: true, Expected: calls})
			var err error
			msg, err = ask(ctx, h, node, cfg, t)
			h.Progress(kit.ProgressEvent{Node: node.ID, Agent: t.agent.ID, Finished: true, Expected: calls})
			if err != nil {
				if err := tolerate(cfg, lapses, i, err); err != nil {
					return value.NodeResult{}, err
				}
				continue
			}
		}
		recorded = append(recorded, h.Record(msg)...)
	}
	absent, err := settle(h, node, cfg, tasks, lapses)
	if err != nil {
		return value.NodeResult{}, err
	}
	res := result(recorded, calls)
	res.Absent = absent
	return res, nil
}

// lapse is a call a node may go on without: it failed after its retries
// (an endpoint error), or its reply was still unusable after its repairs
// and the node has no fallback. key is the call key of the failed call or
// of the last unusable reply.
type lapse struct {
	key    string
	reason string
	err    error
}

func (e *lapse) Error() string { return e.err.Error() }
func (e *lapse) Unwrap() error { return e.err }

// tolerate keeps task i's error as a lapse when the node has min_answers
// and the error is one it may go on without; any other error is returned,
// failing the node (and cancelling its other calls) as before.
func tolerate(cfg *Config, lapses []*lapse, i int, err error) error {
	var l *lapse
	if cfg.MinAnswers == 0 || !errors.As(err, &l) {
		return err
	}
	lapses[i] = l
	return nil
}

// settle decides a node with lapses: with at least min_answers replies it
// completes without the lapsed agents, each named in a warning and an
// "absent" event (which a resume and a replay read back: see
// Config.MinAnswers); with fewer it fails with every lapse's error, so an
// endpoint failure still exits as one.
func settle(h kit.Host, node *spec.NodePlan, cfg *Config, tasks []task, lapses []*lapse) ([]value.Absence, error) {
	var errs []error
	for _, l := range lapses {
		if l != nil {
			errs = append(errs, l)
		}
	}
	if len(errs) == 0 {
		return nil, nil
	}
	answered := len(tasks) - len(errs)
	if answered < cfg.MinAnswers {
		return nil, fmt.Errorf("node %q: %d of %d calls answered, fewer than its min_answers (%d): %w", node.ID, answered, len(tasks), cfg.MinAnswers, joined(errs))
	}
	var absent []value.Absence
	for i, l := range lapses {
		if l == nil {
			continue
		}
		agent := tasks[i].agent.ID
		h.Warn("node %q: agent %q is left out (%s); the node goes on with %d of %d answers (min_answers %d)", node.ID, agent, l.reason, answered, len(tasks), cfg.MinAnswers)
		_ = h.Event(event.Absent, l.key, absentEvent{Agent: agent, Reason: l.reason})
		absent = append(absent, value.Absence{Agent: agent, Key: l.key, Reason: l.reason})
	}
	return absent, nil
}

// joined is several errors on one line, each still found by errors.Is
// and errors.As.
type joined []error

func (j joined) Error() string {
	parts := make([]string, len(j))
	for i, err := range j {
		parts[i] = err.Error()
	}
	return strings.Join(parts, "; ")
}

func (j joined) Unwrap() []error { return j }

// absentEvent is the payload of an "absent" event.
type absentEvent struct {
	Agent  string `json:"agent"`
	Reason string `json:"reason"`
}

// sampleCount is how many calls each agent gets.
func sampleCount(h kit.Host, node *spec.NodePlan, cfg *Config) (int, error) {
	if cfg.SamplesExpr == nil {
		return max(cfg.Samples, 1), nil
	}
	v, err := vm.Run(cfg.SamplesExpr.Program, h.Env().Map())
	if err != nil {
		return 0, fmt.Errorf("node %q: samples (%s): %s", node.ID, cfg.SamplesExpr.Source, strings.SplitN(err.Error(), "\n", 2)[0])
	}
	n, ok := v.(int)
	if !ok || n < 1 || n > maxSamples {
		return 0, fmt.Errorf("node %q: samples (%s) is %v; it must be a whole number from 1 to %d", node.ID, cfg.SamplesExpr.Source, v, maxSamples)
	}
	return n, nil
}

// callStack is about the stack a call needs: rendering, the journal, and
// the client's JSON encoding and decoding go deep.
const callStack = 16 << 10

// reserveStack grows a new goroutine's stack to what a call needs while the
// stack is still shallow. Left to grow on demand, the small initial stack is
// outgrown several times deep in template execution and JSON decoding, each
// time copying and adjusting every frame on it: about a tenth of the
// runtime's CPU per call in BenchmarkOrchestrationPerCall.
//
//go:noinline
func reserveStack() {
	var frame [callStack]byte
	touch(frame[:])
}

// touch keeps reserveStack's frame from being optimised away.
//
//go:noinline
func touch(b []byte) { b[len(b)-1] = 0 }

// LatestFrom finds the agent's latest message of a record in the goal. A
// dry run plans carry-over and each: with it, as the executor runs them.
func LatestFrom(all []value.Message, record, agent, goal string) (value.Message, bool) {
	for i := len(all) - 1; i >= 0; i-- {
		m := all[i]
		if m.Record == record && m.From == agent && m.Goal == goal {
			return m, true
		}
	}
	return value.Message{}, false
}

// latestShared is LatestFrom over a prompt's history: nil if none.
func latestShared(history []*value.Message, record, agent, goal string) *value.Message {
	for i := len(history) - 1; i >= 0; i-- {
		if m := history[i]; m.Record == record && m.From == agent && m.Goal == goal {
			return m
		}
	}
	return nil
}

// targets lists the latest message of the record per author, in the node's
// agent order, filtered by whose messages the node answers.
func targets(node *spec.NodePlan, each *Each, all []value.Message, self, goal string) []value.Message {
	var out []value.Message
	for _, a := range node.Agents {
		switch each.From {
		case FromOthers:
			if a.ID == self {
				continue
			}
		case FromSelf:
			if a.ID != self {
				continue
			}
		}
		if m, ok := LatestFrom(all, each.Record, a.ID, goal); ok {
			out = append(out, m)
		}
	}
	return out
}

// ask makes one call (plus repairs) and returns the message to record.
func ask(ctx context.Context, h kit.Host, node *spec.NodePlan, cfg *Config, t task) (value.Message, error) {
	data := &PromptData{PromptBase: h.Base(node, t.agent), Sample: max(t.sample, 1)}
	key := t.agent.ID
	to := ""
	if t.target != nil {
		data.Target = *t.target
		key += ">" + t.target.From
		to = t.target.From
	}
	if t.sample > 1 {
		key += "~" + strconv.Itoa(t.sample)
	}
	var choiceMap map[string]string
	if cfg.Choices != nil {
		var err error
		if data.Choices, choiceMap, err = choices(h, node, cfg.Choices, key); err != nil {
			return value.Message{}, err
		}
	}
	if cfg.Record != "" {
		// An agent always sees its own messages, so its history has them;
		// searching it spares copying every message of the run per call.
		if own := latestShared(data.History, cfg.Record, t.agent.ID, h.Scope().Goal.ID); own != nil {
			data.Own = *own
		}
	}
	system, err := kit.SystemPrompt(h, cfg.System, t.agent, data)
	if err != nil {
		return value.Message{}, err
	}
	if cfg.Summarize {
		// A summary is asked as the agent, with its system prompt; the
		// prompt is rendered again should it show the summary.
		if data.Summary = h.Summary(ctx, t.agent, system); data.Summary != "" {
			if system, err = kit.SystemPrompt(h, cfg.System, t.agent, data); err != nil {
				return value.Message{}, err
			}
		}
	}
	user, err := h.Render(cfg.Template, data)
	if err != nil {
		return value.Message{}, err
	}
	model := cfg.Model
	if model == nil {
		model = t.agent.Model
	}
	req, err := chat.Build(h, cfg.Chat, t.agent, &data.PromptBase, data, system, user)
	if err != nil {
		return value.Message{}, fmt.Errorf("node %q, agent %q: %w", node.ID, t.agent.ID, err)
	}
	call := kit.Call{
		Key: key, Node: node.ID, Agent: t.agent, Model: model,
		Messages: req.Messages, Target: to, Continued: req.Continued(),
		JSONMode: cfg.Output.Format == FormatJSON,
	}
	if call.JSONMode {
		call.JSONSchema, call.SchemaName = cfg.Output.SchemaJSON, node.ID
	}
	call.Shape = kit.Shape{Format: string(cfg.Output.Format), Schema: cfg.Output.SchemaJSON}
	if len(cfg.Output.Patterns) > 0 {
		call.Shape.Pattern = cfg.Output.Patterns[0].String()
	}
	for _, f := range cfg.Output.Fields {
		call.Shape.Tags = append(call.Shape.Tags, kit.Tag{Name: f})
	}
	if cfg.Output.Format != FormatText && cfg.Output.Format != "" {
		call.Repairs = cfg.Output.Repair
	}
	toolNames := tools.Merge(t.agent.Tools, cfg.Tools)
	if len(toolNames) > 0 {
		if call.Tools, err = tools.DefinitionsFor(ctx, h, toolNames); err != nil {
			return value.Message{}, fmt.Errorf("node %q, agent %q: %w", node.ID, t.agent.ID, err)
		}
		call.ToolRounds = cfg.MaxToolCalls
	}
	env := tools.Env{Visible: data.History, Dir: h.ContextDir(), Snapshot: tools.SnapshotOf(h), MCP: tools.MCPOf(h)}
	parser := parse.Spec{Format: string(cfg.Output.Format), Schema: cfg.Output.Schema, Patterns: cfg.Output.Patterns, Fields: cfg.Output.Fields}
	var out parse.Output
	repairs := kit.Repairs{
		Max: cfg.Output.Repair,
		Complete: func(ctx context.Context, c kit.Call) (kit.Reply, []kit.ChatMessage, error) {
			return tools.Complete(ctx, h, c, env, cfg.MaxToolCalls)
		},
		Accept: func(reply kit.Reply) error {
			var perr error
			out, perr = parser.Parse(reply.Content)
			return parse.Truncated(reply.FinishReason, perr)
		},
		Event: func(attempt int, perr error) any {
			return map[string]any{"error": perr.Error(), "attempt": attempt, "mode": repairMode(cfg.Output.Resend)}
		},
	}
	// Resend asks the identical request again, as the original systems
	// retry: a new call key makes it a new sample; else the model is told
	// what was wrong with its reply.
	if !cfg.Output.Resend {
		repairs.Feedback = func(perr error) string { return parse.RepairPrompt(string(cfg.Output.Format), perr) }
	}
	at, err := repairs.Call(ctx, h, call)
	if err != nil {
		if errors.Is(err, kit.ErrCallFailed) {
			return value.Message{}, &lapse{key: at.Key, reason: err.Error(), err: err}
		}
		return value.Message{}, err
	}
	reply, perr := at.Reply, at.Invalid
	if perr == nil {
		parsed := mapChoice(out.Value, choiceMap)
		msg := value.Message{From: t.agent.ID, To: to, Record: cfg.Record, Content: reply.Content, Output: parsed, Fields: out.Fields, ChoiceMap: choiceMap}
		var ev any = outputEvent{Output: parsed}
		if s, ok := parsed.(string); ok && s == strings.TrimSpace(reply.Content) {
			// A text output is the reply itself, already journaled
			// with the response; repeating it would double the journal.
			ev = replyOutputEvent{OutputIsReply: true}
		}
		_ = h.Event(event.Output, at.Key, ev)
		req.Done(reply.Content)
		return msg, nil
	}
	if hasFallback(cfg.Output.Fallback) {
		fb := fallbackOutput(cfg.Output.Fallback, reply.Content)
		_ = h.Event(event.Fallback, at.Key, map[string]any{"error": perr.Error(), "output": fb})
		h.Warn("node %q, agent %q: reply still invalid after %d repairs (%v); using the fallback output", node.ID, t.agent.ID, at.N, perr)
		req.Done(reply.Content)
		return value.Message{From: t.agent.ID, To: to, Record: cfg.Record, Content: reply.Content, Output: fb, Fallback: true, ChoiceMap: choiceMap}, nil
	}
	return value.Message{}, &lapse{
		key:    at.Key,
		reason: fmt.Sprintf("reply still not valid %s after %d repair(s): %v", cfg.Output.Format, at.N, perr),
		err:    fmt.Errorf("node %q, agent %q: reply is not valid %s after %d repair(s): %w", node.ID, t.agent.ID, cfg.Output.Format, at.N, perr),
	}
}

func repairMode(resend bool) string {
	if resend {
		return RepairResend
	}
	return RepairFeedback
}

// hasFallback reports whether a node has a fallback output.
func hasFallback(fb any) bool {
	if m, ok := fb.(map[string]any); ok {
		return m != nil
	}
	return fb != nil
}

// fallbackOutput is a node's fallback output for a reply: a mapping gets
// the reply as "text"; a single value is the output as it is.
func fallbackOutput(fallback any, reply string) any {
	m, ok := fallback.(map[string]any)
	if !ok {
		return fallback
	}
	fb := make(map[string]any, len(m)+1)
	for k, v := range m {
		fb[k] = v
	}
	fb["text"] = reply
	return fb
}

// outputEvent and replyOutputEvent are the payloads of an output event:
// structs rather than one-key maps, which the journal would encode by
// reflection over a map on every call, to the same JSON.
type outputEvent struct {
	Output any `json:"output"`
}

type replyOutputEvent struct {
	OutputIsReply bool `json:"output_is_reply"`
}
