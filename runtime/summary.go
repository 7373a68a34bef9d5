package runtime

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/llm/tokens"
	"github.com/debate-runner/runner/spec"
	"github.com/expr-lang/expr/vm"
)

// summaryEntry caches one agent's summary for one scope, so every node of a
// round (every later turn of a conversation) uses the same summary and only
// one call is made for it.
type summaryEntry struct {
	done chan struct{}
	text string
}

// perspective is the part of the debate an agent's summary covers: the
// contributions it wrote or that were addressed to it. Inside a loop only
// earlier rounds count: the current round is still being written and the
// prompts show it in full, so a summary stands in for what came before
// (the first round has nothing to summarise). Clarifications (prompts show
// them on their own) and messages of no record (a node's rating, such as a
// judge's confidence, not a contribution to the debate) are left out. An
// agent with no contributions at all (a judge) gets the latest round's
// messages, the current one included: what it is about to judge.
//
// With records (history.summarize.records) the measure is the original
// tool's: the agent's own messages of those records to everyone (its
// proposals and refinements, not the critiques it wrote or received), and
// for an agent with none, the latest round's messages of those records.
func perspective(msgs []value.Message, agent string, round int, records []string) []value.Message {
	if len(records) > 0 {
		return recordsPerspective(msgs, agent, round, records)
	}
	var own []value.Message
	for _, m := range msgs {
		if m.Private || m.Record == "" || m.Record == "summary" || m.Record == "clarification" {
			continue
		}
		if m.From == agent || m.To == agent {
			own = append(own, m)
		}
	}
	if len(own) > 0 {
		var out []value.Message
		for _, m := range own {
			if round == 0 || m.Round < round {
				out = append(out, m)
			}
		}
		return out
	}
	last := 0
	for _, m := range msgs {
		if m.Round > last && !m.Private {
			last = m.Round
		}
	}
	var out []value.Message
	for _, m := range msgs {
		if m.Round == last && !m.Private && m.Record != "summary" && m.Record != "clarification" {
			out = append(out, m)
		}
	}
	return out
}

func recordsPerspective(msgs []value.Message, agent string, round int, records []string) []value.Message {
	counts := func(m *value.Message) bool {
		return !m.Private && m.To == "" && slices.Contains(records, m.Record)
	}
	var own []value.Message
	for i := range msgs {
		if m := &msgs[i]; counts(m) && m.From == agent && (round == 0 || m.Round < round) {
			own = append(own, *m)
		}
	}
	if len(own) > 0 {
		return own
	}
	for i := range msgs {
		if m := &msgs[i]; m.From == agent && counts(m) {
			return nil // it has contributions, none of them earlier
		}
	}
	last := 0
	for i := range msgs {
		if m := &msgs[i]; counts(m) && m.Round > last {
			last = m.Round
		}
	}
	var out []value.Message
	for i := range msgs {
		if m := &msgs[i]; counts(m) && m.Round == last {
			out = append(out, *m)
		}
	}
	return out
}

func formatMessages(ms []value.Message) string {
	var b strings.Builder
	for _, m := range ms {
		head := m.From
		if m.To != "" {
			head += " to " + m.To
		}
		if m.Record != "" {
			head += ", " + m.Record
		}
		if m.Round > 0 {
			head += fmt.Sprintf(", round %d", m.Round)
		}
		fmt.Fprintf(&b, "[%s]\n%s\n\n", head, strings.TrimSpace(m.Content))
	}
	return strings.TrimSpace(b.String())
}

func (h *host) ContextDir() string { return h.run.opts.ContextDir }

func (h *host) Summary(ctx context.Context, agent *spec.AgentPlan, system string) string {
	r := h.run
	sp := r.Plan.Summarize
	if sp == nil {
		return ""
	}
	if !h.summaryWhen(sp, "history.summarize.when") {
		return ""
	}
	key := agent.ID + "/" + h.scope.Key
	r.mu.Lock()
	if r.summaries == nil {
		r.summaries = map[string]*summaryEntry{}
	}
	if e, ok := r.summaries[key]; ok {
		r.mu.Unlock()
		if r.await(ctx, e.done) != nil {
			return ""
		}
		return e.text
	}
	e := &summaryEntry{done: make(chan struct{})}
	r.summaries[key] = e
	msgs := r.messagesSoFar()
	r.mu.Unlock()
	defer close(e.done)

	covered := perspective(msgs, agent.ID, h.scope.Round, sp.Records)
	text := formatMessages(covered)
	size := historySize(covered, text, sp.Measure, r.dry)
	if sp.Measure == spec.MeasureTokens {
		size = h.tokensOf(sp, agent, text)
	}
	if !h.SummaryDue(sp, size) {
		// Not long enough yet: measured again at the agent's next call of
		// this scope (a conversation's next turn), rather than remembered.
		r.mu.Lock()
		delete(r.summaries, key)
		r.mu.Unlock()
		return ""
	}
	data := &value.SummaryData{
		PromptBase: h.Base(h.node, agent), Text: text, MaxChars: sp.MaxChars, Chars: len(text),
		Extra: map[string]any{"max_chars": sp.MaxChars, "chars": len(text)},
	}
	prompt, err := h.Render(sp.Template, data)
	if err != nil {
		h.Warn("summary of %s's history failed (%v); using the full history", agent.ID, err)
		return ""
	}
	model := sp.Model
	if model == nil {
		model = agent.Model
	}
	// The summary is the agent's own work: it is asked as the agent, with
	// the agent's system prompt.
	rep, err := h.Complete(ctx, kit.Call{Key: "summary/" + agent.ID, Node: h.node.ID, Agent: agent, Model: model, Messages: kit.Messages(system, prompt), Aside: true})
	if err != nil || strings.TrimSpace(rep.Content) == "" {
		if ctx.Err() == nil {
			h.Warn("summary of %s's history failed (%v); using the full history", agent.ID, err)
		}
		return ""
	}
	// A summary longer than asked for is cut to its length, as the
	// original tool cut it: prompts budget for max_chars.
	e.text = cutToChars(strings.TrimSpace(rep.Content), sp.MaxChars)
	_ = h.Event(event.Summary, "summary/"+agent.ID, map[string]any{"agent": agent.ID, "before_chars": len(text), "after_chars": len(e.text), "max_chars": sp.MaxChars})
	sum := value.Message{From: agent.ID, Private: true, Record: "summary", Content: e.text, Node: h.node.ID, Round: h.scope.Round, Goal: h.scope.Goal.ID}
	if it := h.iteration(); it != nil {
		it.mu.Lock()
		it.pending = append(it.pending, sum)
		it.mu.Unlock()
		return e.text
	}
	r.mu.Lock()
	r.pendingSummaries = append(r.pendingSummaries, sum)
	r.mu.Unlock()
	return e.text
}

// summaryWhen reports whether a summary plan's when holds (true without
// one); what names it in the warning an error gives.
func (h *host) summaryWhen(sp *spec.SummarizePlan, what string) bool {
	if sp.When == nil {
		return true
	}
	// Evaluated directly (not with Holds): a switch such as
	// vars.summaries has its value in a dry run too.
	v, err := vm.Run(sp.When.Program, h.Env().Map())
	if err != nil {
		h.Warn("%s (%s): %s; using the full history", what, sp.When.Source, firstLineOf(err))
		return false
	}
	b, _ := v.(bool)
	return b
}

// SummarySize implements kit.Prompter.
func (h *host) SummarySize(sp *spec.SummarizePlan, agent *spec.AgentPlan, msgs []value.Message) int {
	text := formatMessages(msgs)
	if sp.Measure == spec.MeasureTokens {
		return h.tokensOf(sp, agent, text)
	}
	return historySize(msgs, text, sp.Measure, h.run.dry)
}

// SummaryDue implements kit.Prompter.
func (h *host) SummaryDue(sp *spec.SummarizePlan, size int) bool {
	if sp.Measure == spec.MeasureTokens {
		return size > sp.OverTokens
	}
	return summaryDue(size, sp)
}

// tokensOf counts text's tokens with the summary model's tokenizer (the
// agent's model's when the plan names none); in a dry run, scaled by how
// much longer the replies its stand-ins stand for are.
func (h *host) tokensOf(sp *spec.SummarizePlan, agent *spec.AgentPlan, text string) int {
	model := sp.Model
	if model == nil {
		model = agent.Model
	}
	name := ""
	if model != nil {
		name = model.Model
	}
	n := tokens.Count(name, text)
	if d := h.run.dry; d != nil && d.Size != nil && len(text) > 0 {
		n = int(int64(n) * int64(d.size(text)) / int64(len(text)))
	}
	return n
}

// Condense implements kit.Prompter: one of a conversation's own
// summaries, asked as the agent with its system prompt, of its summary so
// far and the messages it now covers.
func (h *host) Condense(ctx context.Context, c kit.Condense) string {
	sp := c.Plan
	what := fmt.Sprintf("node %q: summarize.when", h.node.ID)
	if !h.summaryWhen(sp, what) {
		return ""
	}
	text := formatMessages(c.Messages)
	if c.Previous != "" {
		text = "[summary of the conversation before]\n" + c.Previous + "\n\n" + text
	}
	data := &value.SummaryData{
		PromptBase: h.Base(h.node, c.Agent), Text: text, MaxChars: sp.MaxChars, Chars: len(text),
		Extra: map[string]any{"max_chars": sp.MaxChars, "chars": len(text)},
	}
	fail := func(err error) string {
		if ctx.Err() == nil {
			h.Warn("node %q: summary of the conversation for %s failed (%v); its prompts keep the messages since its last summary", h.node.ID, c.Agent.ID, err)
		}
		return ""
	}
	prompt, err := h.Render(sp.Template, data)
	if err != nil {
		return fail(err)
	}
	model := sp.Model
	if model == nil {
		model = c.Agent.Model
	}
	rep, err := h.Complete(ctx, kit.Call{Key: c.Key, Node: h.node.ID, Agent: c.Agent, Model: model, Messages: kit.Messages(c.System, prompt), Aside: true})
	if err == nil && strings.TrimSpace(rep.Content) == "" {
		err = fmt.Errorf("the reply is empty")
	}
	if err != nil {
		return fail(err)
	}
	out := cutToChars(strings.TrimSpace(rep.Content), sp.MaxChars)
	_ = h.Event(event.Summary, c.Key, map[string]any{"agent": c.Agent.ID, "before_chars": len(text), "after_chars": len(out), "max_chars": sp.MaxChars, "turn": c.Turn, "messages": len(c.Messages)})
	h.Record(value.Message{From: c.Agent.ID, Private: true, Record: "summary", Content: out, Turn: c.Turn})
	return out
}

// historySize is the size of the history a summary would condense, by the
// measure: the characters of the messages' contents (chars), or the UTF-8
// bytes of text, the history as the summary prompt shows it (bytes). In a
// dry run stand-ins count as the replies they stand for.
func historySize(covered []value.Message, text, measure string, dry *dryState) int {
	if measure != spec.MeasureChars {
		if dry != nil {
			return dry.size(text)
		}
		return len(text)
	}
	size := 0
	for _, m := range covered {
		if dry != nil && dry.Size != nil {
			size += dry.Size(m.Content)
		} else {
			size += utf8.RuneCountInString(m.Content)
		}
	}
	return size
}

// summaryDue reports whether a history of this size is summarised: from
// over_chars on when measured in characters (as the original tool), past
// it when measured in bytes.
func summaryDue(size int, sp *spec.SummarizePlan) bool {
	if sp.Measure == spec.MeasureChars {
		return size >= sp.OverChars
	}
	return size > sp.OverChars
}

// cutToChars cuts s to at most n characters (runes), at a rune boundary.
func cutToChars(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := range s {
		if i == n {
			return strings.TrimSpace(s[:k])
		}
		i++
	}
	return s
}
