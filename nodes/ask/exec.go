package ask

import (
	"context"
	"fmt"
	"strconv"
	"strings"

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
	target  *spec.Message
	carried *spec.Message
	// sample is the call's sample number (1-based).
	sample int
}

// Execute implements kit.Executor: it plans one task per agent (or per agent
// and target), runs the calls concurrently, and records the replies in
// declaration order so results do not depend on timing.
func (Kind) Execute(ctx context.Context, h kit.Host, node *spec.NodePlan) (spec.NodeResult, error) {
	cfg, ok := node.Config.(*Config)
	if !ok {
		return spec.NodeResult{}, fmt.Errorf("node %q: not an ask node", node.ID)
	}
	scope := h.Scope()
	all := h.Messages()
	samples, err := sampleCount(h, node, cfg)
	if err != nil {
		return spec.NodeResult{}, err
	}
	tasks := make([]task, 0, len(node.Agents)*samples)
	for _, a := range node.Agents {
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
	replies := make([]spec.Message, len(tasks))
	var asks []int // the tasks that call a model
	for i, t := range tasks {
		if t.carried != nil {
			m := *t.carried
			replies[i] = spec.Message{
				From: t.agent.ID, Record: cfg.Record, Content: m.Content, Output: m.Output,
				Fields: m.Fields, Carried: true,
			}
			continue
		}
		asks = append(asks, i)
	}
	if cfg.Sequential {
		return sequential(ctx, h, node, cfg, tasks, replies, calls)
	}
	err = h.Parallel(ctx, len(asks), func(ctx context.Context, j int) error {
		i := asks[j]
		t := tasks[i]
		reserveStack()
		h.Progress(kit.ProgressEvent{Node: node.ID, Agent: t.agent.ID, Started: true, Expected: calls})
		msg, err := ask(ctx, h, node, cfg, t)
		h.Progress(kit.ProgressEvent{Node: node.ID, Agent: t.agent.ID, Finished: true, Expected: calls})
		if err != nil {
			return err
		}
		replies[i] = msg
		return nil
	})
	if err != nil {
		return spec.NodeResult{}, err
	}
	return result(h.Record(replies...), calls), nil
}

// result is a node's result from the messages it recorded.
func result(recorded []spec.Message, calls int) spec.NodeResult {
	res := spec.NodeResult{Outputs: map[string]any{}, Messages: recorded, Calls: calls}
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
func sequential(ctx context.Context, h kit.Host, node *spec.NodePlan, cfg *Config, tasks []task, replies []spec.Message, calls int) (spec.NodeResult, error) {
	var recorded []spec.Message
	for i, t := range tasks {
		msg := replies[i]
		if t.carried == nil {
			h.Progress(kit.ProgressEvent{Node: node.ID, Agent: t.agent.ID, Started: true, Expected: calls})
			var err error
			msg, err = ask(ctx, h, node, cfg, t)
			h.Progress(kit.ProgressEvent{Node: node.ID, Agent: t.agent.ID, Finished: true, Expected: calls})
			if err != nil {
				return spec.NodeResult{}, err
			}
		}
		recorded = append(recorded, h.Record(msg)...)
	}
	return result(recorded, calls), nil
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
func LatestFrom(all []spec.Message, record, agent, goal string) (spec.Message, bool) {
	for i := len(all) - 1; i >= 0; i-- {
		m := all[i]
		if m.Record == record && m.From == agent && m.Goal == goal {
			return m, true
		}
	}
	return spec.Message{}, false
}

// targets lists the latest message of the record per author, in the node's
// agent order, filtered by whose messages the node answers.
func targets(node *spec.NodePlan, each *Each, all []spec.Message, self, goal string) []spec.Message {
	var out []spec.Message
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
func ask(ctx context.Context, h kit.Host, node *spec.NodePlan, cfg *Config, t task) (spec.Message, error) {
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
			return spec.Message{}, err
		}
	}
	if cfg.Record != "" {
		// An agent always sees its own messages, so its history has them;
		// searching it spares copying every message of the run per call.
		if own, ok := LatestFrom(data.History, cfg.Record, t.agent.ID, h.Scope().Goal.ID); ok {
			data.Own = own
		}
	}
	system, err := kit.SystemPrompt(h, cfg.System, t.agent, data)
	if err != nil {
		return spec.Message{}, err
	}
	if cfg.Summarize {
		// A summary is asked as the agent, with its system prompt; the
		// prompt is rendered again should it show the summary.
		if data.Summary = h.Summary(ctx, t.agent, system); data.Summary != "" {
			if system, err = kit.SystemPrompt(h, cfg.System, t.agent, data); err != nil {
				return spec.Message{}, err
			}
		}
	}
	user, err := h.Render(cfg.Template, data)
	if err != nil {
		return spec.Message{}, err
	}
	model := cfg.Model
	if model == nil {
		model = t.agent.Model
	}
	req, err := chat.Build(h, cfg.Chat, t.agent, &data.PromptBase, data, system, user)
	if err != nil {
		return spec.Message{}, fmt.Errorf("node %q, agent %q: %w", node.ID, t.agent.ID, err)
	}
	call := kit.Call{
		Key: key, Node: node.ID, Agent: t.agent, Model: model,
		Messages: req.Messages, Target: to,
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
			return spec.Message{}, fmt.Errorf("node %q, agent %q: %w", node.ID, t.agent.ID, err)
		}
		call.ToolRounds = cfg.MaxToolCalls
	}
	env := tools.Env{Visible: data.History, Dir: h.ContextDir(), Snapshot: tools.SnapshotOf(h), MCP: tools.MCPOf(h)}
	parser := parse.Spec{Format: string(cfg.Output.Format), Schema: cfg.Output.Schema, Patterns: cfg.Output.Patterns, Fields: cfg.Output.Fields}
	request := call.Messages
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			call.Key = fmt.Sprintf("%s#repair%d", key, attempt)
		}
		reply, msgs, err := tools.Complete(ctx, h, call, env, cfg.MaxToolCalls)
		if err != nil {
			return spec.Message{}, err
		}
		call.Messages = msgs
		out, perr := parser.Parse(reply.Content)
		perr = parse.Truncated(reply.FinishReason, perr)
		if perr == nil {
			value := mapChoice(out.Value, choiceMap)
			msg := spec.Message{From: t.agent.ID, To: to, Record: cfg.Record, Content: reply.Content, Output: value, Fields: out.Fields, ChoiceMap: choiceMap}
			var ev any = outputEvent{Output: value}
			if s, ok := value.(string); ok && s == strings.TrimSpace(reply.Content) {
				// A text output is the reply itself, already journaled
				// with the response; repeating it would double the journal.
				ev = replyOutputEvent{OutputIsReply: true}
			}
			_ = h.Event(event.Output, call.Key, ev)
			req.Done(reply.Content)
			return msg, nil
		}
		if attempt >= cfg.Output.Repair {
			if hasFallback(cfg.Output.Fallback) {
				fb := fallbackOutput(cfg.Output.Fallback, reply.Content)
				_ = h.Event(event.Fallback, call.Key, map[string]any{"error": perr.Error(), "output": fb})
				h.Warn("node %q, agent %q: reply still invalid after %d repairs (%v); using the fallback output", node.ID, t.agent.ID, attempt, perr)
				req.Done(reply.Content)
				return spec.Message{From: t.agent.ID, To: to, Record: cfg.Record, Content: reply.Content, Output: fb, ChoiceMap: choiceMap}, nil
			}
			return spec.Message{}, fmt.Errorf("node %q, agent %q: reply is not valid %s after %d repair(s): %w", node.ID, t.agent.ID, cfg.Output.Format, attempt, perr)
		}
		_ = h.Event(event.Repair, call.Key, map[string]any{"error": perr.Error(), "attempt": attempt + 1, "mode": repairMode(cfg.Output.Resend)})
		if cfg.Output.Resend {
			// The identical request again, as the original systems retry:
			// a new call key makes it a new sample.
			call.Messages = request
			continue
		}
		call.Messages = append(call.Messages,
			kit.ChatMessage{Role: "assistant", Content: reply.Content},
			kit.ChatMessage{Role: "user", Content: parse.RepairPrompt(string(cfg.Output.Format), perr)},
		)
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
