package converse

import (
	"context"
	"math"
	"slices"
	"strings"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/nodes/chat"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/nodes/tools"
	"github.com/debate-runner/runner/spec"
)

// compileExtras compiles what a conversation shares with ask nodes: chat
// turns, tools and history summaries.
func compileExtras(c *spec.NodeContext, raw *rawConfig, cfg *Config) {
	// What a conversation records, so that other nodes' keys (history
	// records, each, carry_over) may name it.
	for _, r := range []string{"message", "private", "interjection", "watch"} {
		c.DeclareRecord(r)
	}
	cfg.Chat = chat.Compile(c, &raw.Raw)
	cfg.Tools = raw.Tools
	cfg.MaxToolCalls = c.Count(raw.MaxToolCalls, "max_tool_calls", 0, math.MaxInt32, 4)
	cfg.Summarize = true
	if raw.Summarize != nil {
		cfg.Summarize = *raw.Summarize
	}
	if cfg.Summarize {
		c.UseSummaries()
	}
}

// summarize gives a turn's prompt data the speaker's history summary (when
// the spec asks for summaries), asked with its system prompt; it returns
// the system prompt, rendered again if the summary changed the data.
func (s *state) summarize(ctx context.Context, agent *spec.AgentPlan, data *PromptData, system string) (string, error) {
	if !s.cfg.Summarize {
		return system, nil
	}
	if data.Summary = s.h.Summary(ctx, agent, system); data.Summary == "" {
		return system, nil
	}
	return kit.SystemPrompt(s.h, s.cfg.System, agent, data)
}

// complete makes a turn's call: its messages laid out as the node's chat
// keys say, with the tools the speaker may use. The request's thread turn
// is added once the turn is accepted (see chat.Request.Done).
func (s *state) complete(ctx context.Context, agent *spec.AgentPlan, data *PromptData, call kit.Call, system, user string) (kit.Reply, *chat.Request, error) {
	req, err := chat.Build(s.h, s.cfg.Chat, agent, &data.PromptBase, data, system, user)
	if err != nil {
		return kit.Reply{}, nil, err
	}
	call.Messages, call.Continued = req.Messages, req.Continued()
	names := tools.Merge(agent.Tools, s.cfg.Tools)
	if len(names) == 0 {
		rep, err := s.h.Complete(ctx, call)
		return rep, req, err
	}
	if call.Tools, err = tools.DefinitionsFor(ctx, s.h, names); err != nil {
		return kit.Reply{}, nil, err
	}
	call.ToolRounds = s.cfg.MaxToolCalls
	rep, _, err := tools.Complete(ctx, s.h, call, tools.Env{Visible: data.History, Dir: s.h.ContextDir(), MCP: tools.MCPOf(s.h)}, s.cfg.MaxToolCalls)
	return rep, req, err
}

// interjectAtStart posts the rules marked at_start before the first turn
// (turn 0), the last of them when several apply, as after a turn.
func (s *state) interjectAtStart(ctx context.Context) (int, error) {
	return s.interjectWhere(ctx, func(r Interject) bool { return r.AtStart })
}

// watchDue reports whether watcher i runs now: every N turns, or once N
// messages were posted since it last ran.
func (s *state) watchDue(i int) bool {
	w := s.cfg.Watch[i]
	if w.EveryMessages > 0 {
		return len(s.transcript)-s.watched[i] >= w.EveryMessages
	}
	return s.turn%w.Every == 0
}

// reasons are the reasonings a watcher's agents gave with its decision, in
// agent order, read from its result (a conversation's verdicts).
func reasons(res value.NodeResult, decision string) []string {
	out, _ := res.Output.(map[string]any)
	list, _ := out["verdicts"].([]any)
	var rs []string
	for _, v := range list {
		m, _ := v.(map[string]any)
		if m == nil || m["verdict"] != decision {
			continue
		}
		if r, _ := m["reasoning"].(string); strings.TrimSpace(r) != "" {
			rs = append(rs, strings.TrimSpace(r))
		}
	}
	return rs
}

// silent reports whether a watcher's decision posts nothing.
func (w Watch) silent(decision string) bool { return slices.Contains(w.Silent, decision) }
