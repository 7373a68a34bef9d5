package ask

import (
	"context"
	"fmt"
	"strings"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/nodes/parse"
	"github.com/debate-runner/runner/nodes/tools"
	"github.com/debate-runner/runner/spec"
)

// task is one reply the node needs: a call, or a carried-over message.
type task struct {
	agent   *spec.AgentPlan
	target  *spec.Message
	carried *spec.Message
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
	tasks := make([]task, 0, len(node.Agents))
	for _, a := range node.Agents {
		if cfg.CarryOver != "" && scope.Round > 1 {
			if prev, ok := LatestFrom(all, cfg.CarryOver, a.ID, scope.Goal.ID); ok {
				tasks = append(tasks, task{agent: a, carried: &prev})
				continue
			}
			h.Warn("node %q: agent %q has no %q message to carry over in round %d; asking the model", node.ID, a.ID, cfg.CarryOver, scope.Round)
		}
		if cfg.Each == nil {
			tasks = append(tasks, task{agent: a})
			continue
		}
		for _, t := range targets(node, cfg.Each, all, a.ID, scope.Goal.ID) {
			t := t
			tasks = append(tasks, task{agent: a, target: &t})
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
	err := h.Parallel(ctx, len(asks), func(ctx context.Context, j int) error {
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
	recorded := h.Record(replies...)
	res := spec.NodeResult{Outputs: map[string]any{}, Messages: recorded, Calls: calls}
	for _, m := range recorded {
		res.Outputs[m.From] = m.Output
		res.Output = m.Output
		res.Text = m.Content
	}
	return res, nil
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
	data := &PromptData{PromptBase: h.Base(node, t.agent)}
	key := t.agent.ID
	to := ""
	if t.target != nil {
		data.Target = *t.target
		key += ">" + t.target.From
		to = t.target.From
	}
	if cfg.Record != "" {
		// An agent always sees its own messages, so its history has them;
		// searching it spares copying every message of the run per call.
		if own, ok := LatestFrom(data.History, cfg.Record, t.agent.ID, h.Scope().Goal.ID); ok {
			data.Own = own
		}
	}
	if cfg.Summarize {
		data.Summary = h.Summary(ctx, t.agent)
	}
	system, err := kit.SystemPrompt(h, cfg.System, t.agent, data)
	if err != nil {
		return spec.Message{}, err
	}
	user, err := h.Render(cfg.Template, data)
	if err != nil {
		return spec.Message{}, err
	}
	model := cfg.Model
	if model == nil {
		model = t.agent.Model
	}
	call := kit.Call{
		Key: key, Node: node.ID, Agent: t.agent, Model: model,
		Messages: kit.Messages(system, user), Target: to,
		JSONMode: cfg.Output.Format == FormatJSON,
	}
	if call.JSONMode {
		call.JSONSchema, call.SchemaName = cfg.Output.SchemaJSON, node.ID
	}
	call.Shape = kit.Shape{Format: string(cfg.Output.Format), Schema: cfg.Output.SchemaJSON}
	if cfg.Output.Pattern != nil {
		call.Shape.Pattern = cfg.Output.Pattern.String()
	}
	for _, f := range cfg.Output.Fields {
		call.Shape.Tags = append(call.Shape.Tags, kit.Tag{Name: f})
	}
	if cfg.Output.Format != FormatText && cfg.Output.Format != "" {
		call.Repairs = cfg.Output.Repair
	}
	toolNames := mergeTools(t.agent.Tools, cfg.Tools)
	if len(toolNames) > 0 {
		call.Tools = tools.Definitions(toolNames)
		call.ToolRounds = cfg.MaxToolCalls
	}
	env := tools.Env{Visible: data.History, Dir: h.ContextDir(), Snapshot: tools.SnapshotOf(h)}
	parser := parse.Spec{Format: string(cfg.Output.Format), Schema: cfg.Output.Schema, Pattern: cfg.Output.Pattern, Fields: cfg.Output.Fields}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			call.Key = fmt.Sprintf("%s#repair%d", key, attempt)
		}
		reply, msgs, err := completeWithTools(ctx, h, call, env, cfg.MaxToolCalls)
		if err != nil {
			return spec.Message{}, err
		}
		call.Messages = msgs
		out, perr := parser.Parse(reply.Content)
		perr = parse.Truncated(reply.FinishReason, perr)
		if perr == nil {
			msg := spec.Message{From: t.agent.ID, To: to, Record: cfg.Record, Content: reply.Content, Output: out.Value, Fields: out.Fields}
			var ev any = outputEvent{Output: out.Value}
			if s, ok := out.Value.(string); ok && s == strings.TrimSpace(reply.Content) {
				// A text output is the reply itself, already journaled
				// with the response; repeating it would double the journal.
				ev = replyOutputEvent{OutputIsReply: true}
			}
			_ = h.Event("output", call.Key, ev)
			return msg, nil
		}
		if attempt >= cfg.Output.Repair {
			if cfg.Output.Fallback != nil {
				fb := map[string]any{}
				for k, v := range cfg.Output.Fallback {
					fb[k] = v
				}
				fb["text"] = reply.Content
				_ = h.Event("fallback", call.Key, map[string]any{"error": perr.Error(), "output": fb})
				h.Warn("node %q, agent %q: reply still invalid after %d repairs (%v); using the fallback output", node.ID, t.agent.ID, attempt, perr)
				return spec.Message{From: t.agent.ID, To: to, Record: cfg.Record, Content: reply.Content, Output: fb}, nil
			}
			return spec.Message{}, fmt.Errorf("node %q, agent %q: reply is not valid %s after %d repair(s): %w", node.ID, t.agent.ID, cfg.Output.Format, attempt, perr)
		}
		_ = h.Event("repair", call.Key, map[string]any{"error": perr.Error(), "attempt": attempt + 1})
		call.Messages = append(call.Messages,
			kit.ChatMessage{Role: "assistant", Content: reply.Content},
			kit.ChatMessage{Role: "user", Content: parse.RepairPrompt(string(cfg.Output.Format), perr)},
		)
	}
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

func mergeTools(a, b []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range append(append([]string(nil), a...), b...) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// completeWithTools makes a call and, while the model asks for tools, runs
// them and calls again, up to limit tool calls; then it asks for an answer
// without tools. It returns the final reply and the conversation so far.
func completeWithTools(ctx context.Context, h kit.Host, call kit.Call, env tools.Env, limit int) (kit.Reply, []kit.ChatMessage, error) {
	base := call.Key
	msgs := append([]kit.ChatMessage(nil), call.Messages...)
	used := 0
	for round := 0; ; round++ {
		c := call
		c.Messages = msgs
		if round > 0 {
			c.Key = fmt.Sprintf("%s/tool%d", base, round)
		}
		if used >= limit {
			c.Tools = nil
		}
		reply, err := h.Complete(ctx, c)
		if err != nil {
			return reply, msgs, err
		}
		if len(reply.ToolCalls) == 0 || len(c.Tools) == 0 {
			return reply, msgs, nil
		}
		msgs = append(msgs, kit.ChatMessage{Role: "assistant", Content: reply.Content, ToolCalls: reply.ToolCalls})
		for _, tc := range reply.ToolCalls {
			used++
			over := used > limit
			result := h.RunTool(ctx, c.Key, call.Agent.ID, tc, func(ctx context.Context) kit.ToolResult {
				if over {
					return kit.ToolResult{Text: fmt.Sprintf("error: the limit of %d tool calls for this reply is reached; answer now", limit)}
				}
				return tools.Run(ctx, env, tc.Name, tc.Arguments)
			})
			msgs = append(msgs, kit.ChatMessage{Role: "tool", ToolCallID: tc.ID, Name: tc.Name, Content: result})
		}
	}
}
