package converse

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/nodes/chat"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/nodes/tools"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
	"gopkg.in/yaml.v3"
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
	switch raw.Summarize.Kind {
	case yaml.ScalarNode:
		var on bool
		if err := raw.Summarize.Decode(&on); err == nil {
			cfg.Summarize = on
		}
	case yaml.MappingNode:
		var sum syntax.Summarize
		if err := raw.Summarize.Decode(&sum); err == nil {
			cfg.Thread = c.ThreadSummaries(&sum)
			cfg.Summarize = false
		}
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

// threadSummary is a speaker's latest summary of the conversation.
type threadSummary struct {
	text string
	// cut is how many of the transcript's messages it covers.
	cut int
	// threadLen is how long the speaker's chat thread was when it was
	// made: requests leave those turns out.
	threadLen int
}

// condense applies the conversation's own summaries (summarize: as a
// mapping) to a turn's prompt data: when the speaker's messages of the
// conversation since its latest summary pass the threshold, a new summary
// takes in that one and all of them but the last keep (as many of those
// as fit under the threshold); then the data's history and inbox lose the
// messages the summary covers (and the conversation's earlier summary
// records), and .Summary is the summary. It returns the system prompt,
// rendered again when the summary changed the data, and how many of the
// speaker's thread messages requests leave out.
func (s *state) condense(ctx context.Context, agent *spec.AgentPlan, data *PromptData, system string) (string, int, error) {
	sp := s.cfg.Thread
	if sp == nil {
		return system, 0, nil
	}
	if s.sums == nil {
		s.sums = map[string]*threadSummary{}
	}
	sum := s.sums[agent.ID]
	if sum == nil {
		sum = &threadSummary{}
		s.sums[agent.ID] = sum
	}
	at := make(map[string]int, len(s.transcript))
	for i, m := range s.transcript {
		at[m.ID] = i
	}
	var recent []value.Message
	for _, m := range data.History {
		if i, ok := at[m.ID]; ok && i >= sum.cut {
			recent = append(recent, *m)
		}
	}
	if s.h.SummaryDue(sp, s.h.SummarySize(sp, agent, recent)) {
		keep := min(sp.Keep, len(recent))
		for keep > 0 && s.h.SummaryDue(sp, s.h.SummarySize(sp, agent, recent[len(recent)-keep:])) {
			keep--
		}
		covered := recent[:len(recent)-keep]
		if len(covered) > 0 {
			text := s.h.Condense(ctx, kit.Condense{Plan: sp, Agent: agent, System: system, Previous: sum.text, Messages: covered,
				Key: fmt.Sprintf("summary/%s/t%d", agent.ID, s.turn+1), Turn: s.turn})
			if err := ctx.Err(); err != nil {
				return system, 0, err
			}
			if text != "" {
				sum.text, sum.cut = text, at[covered[len(covered)-1].ID]+1
				if s.cfg.Chat != nil && s.cfg.Chat.Thread != "" {
					sum.threadLen = len(s.h.Thread(s.cfg.Chat.Thread, agent.ID).Turns())
				}
			}
		}
	}
	if sum.text == "" {
		return system, 0, nil
	}
	gone := func(m *value.Message) bool {
		if i, ok := at[m.ID]; ok {
			return i < sum.cut
		}
		return m.Record == "summary" && m.Node == s.node.ID && m.From == agent.ID
	}
	data.History = slices.DeleteFunc(slices.Clone(data.History), gone)
	data.Inbox = slices.DeleteFunc(slices.Clone(data.Inbox), gone)
	data.Summary = sum.text
	system, err := kit.SystemPrompt(s.h, s.cfg.System, agent, data)
	return system, sum.threadLen, err
}

// complete makes a turn's call: its messages laid out as the node's chat
// keys say, with the tools the speaker may use. The request's thread turn
// is added once the turn is accepted (see chat.Request.Done).
func (s *state) complete(ctx context.Context, agent *spec.AgentPlan, data *PromptData, call kit.Call, system, user string, skip int) (kit.Reply, *chat.Request, error) {
	req, err := chat.BuildSkipping(s.h, s.cfg.Chat, agent, &data.PromptBase, data, system, user, skip)
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
