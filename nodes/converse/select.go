package converse

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"
	"gopkg.in/yaml.v3"
)

// SpeakerSelect is the strategy where a model chooses each speaker: a
// selector agent reads the conversation and names who speaks next.
const SpeakerSelect = "select"

// What a selection does when its repairs are spent and the selector still
// names no one it may choose.
const (
	SelectFallbackFail       = "fail"
	SelectFallbackPrevious   = "previous"
	SelectFallbackRoundRobin = "round_robin"
)

// Select is a speaker chosen by a model.
type Select struct {
	// Agent asks: its model and, unless System is set, its system prompt.
	Agent *spec.AgentPlan
	// Template and System are rendered with SelectData.
	Template, System string
	// Repeat lets the last speaker be chosen again.
	Repeat bool
	// Repair is how many times an invalid choice is asked again.
	Repair int
	// Fallback is what a choice still invalid after the repairs does.
	Fallback string
	// End, when set, is the reply that ends the conversation.
	End string
}

// SelectData is the dot of a selector's templates: the conversation's data
// (its .Agent is the selector), and whom it may choose.
type SelectData struct {
	PromptData
	// Candidates are the participants the selector may choose, in
	// declaration order: those who have not withdrawn, without the last
	// speaker unless repeat is allowed (or it is alone).
	Candidates []value.AgentView
	// Last is the id of the last speaker ("" before the first turn).
	Last string
	// End is the reply that ends the conversation ("" when the selector
	// may not end it).
	End string
}

type rawSelect struct {
	Selector syntax.Str  `yaml:"selector"`
	Template syntax.Str  `yaml:"template"`
	System   syntax.Str  `yaml:"system"`
	Repeat   bool        `yaml:"repeat"`
	Repair   syntax.Expr `yaml:"repair"`
	Fallback string      `yaml:"fallback"`
	End      syntax.Str  `yaml:"end"`
	Expr     syntax.Expr `yaml:"expr"`
}

// compileSpeaker compiles a mapping under speaker: {expr: ...} or a
// selector.
func compileSpeaker(c *spec.NodeContext, n *yaml.Node, cfg *Config, ids []string) {
	var s rawSelect
	_ = n.Decode(&s)
	if !s.Selector.Set {
		cfg.Speaker = SpeakerExpr
		cfg.SpeakerExpr = c.ExprChoice(s.Expr, ParticipantsSample(), "speaker", ids)
		return
	}
	cfg.Speaker = SpeakerSelect
	sel := &Select{Repeat: s.Repeat, Repair: 2, Fallback: SelectFallbackFail, End: strings.TrimSpace(s.End.V)}
	cfg.Select = sel
	if group := c.Plan().Groups[s.Selector.V]; len(group) > 0 {
		c.Errorf(s.Selector.Pos, "speaker.selector names %d agents (%s is replicated): name one of them, such as %s", len(group), s.Selector.V, group[0].ID)
	} else if sel.Agent = c.Agent(s.Selector); sel.Agent != nil {
		c.UseModel(sel.Agent.Model)
	}
	if !s.Template.Set {
		c.Errorf(syntax.Pos{Line: n.Line, Col: n.Column}, "speaker.selector needs a template: the prompt that asks %s who speaks next", s.Selector.V)
	} else {
		sel.Template = c.TemplateWith(s.Template, SelectData{})
	}
	if s.System.Set {
		sel.System = c.TemplateWith(s.System, SelectData{})
	} else if sel.Agent != nil && sel.Agent.System != "" {
		// The selector's own system prompt, checked against the dot it
		// gets here.
		sel.System = c.TemplateWith(syntax.Str{V: sel.Agent.System, Pos: s.Selector.Pos, Set: true}, SelectData{})
	}
	sel.Repair = c.Count(s.Repair, "speaker.repair", 0, 10, sel.Repair)
	if s.Fallback != "" {
		sel.Fallback = s.Fallback
	}
	if s.End.Set {
		if len(words(sel.End)) == 0 {
			c.Errorf(s.End.Pos, "speaker.end %q has no word in it: give the reply that ends the conversation, such as DONE, or leave end out", s.End.V)
		}
		for _, a := range c.Node.Agents {
			if sameName(s.End.V, a.ID) || sameName(s.End.V, a.Name) {
				c.Errorf(s.End.Pos, "speaker.end %q names the participant %s: the selector could not name it; choose another word, such as DONE", s.End.V, a.ID)
			}
		}
	}
}

// selectSpeaker asks the selector who speaks next among candidates; it
// returns "" when the selector ends the conversation. A lone candidate
// speaks without a call: there is nothing to choose.
func (s *state) selectSpeaker(ctx context.Context, candidates []value.Participant) (string, error) {
	sel := s.cfg.Select
	if len(candidates) == 1 && sel.End == "" {
		return candidates[0].ID, nil
	}
	agent := sel.Agent
	data := &SelectData{PromptData: PromptData{PromptBase: s.h.Base(s.node, agent)}, Last: s.last, End: sel.End}
	s.fill(&data.PromptData)
	for _, p := range candidates {
		data.Candidates = append(data.Candidates, s.node.Agents[s.index[p.ID]].View())
	}
	system, err := kit.SystemPrompt(s.h, sel.System, agent, data)
	if err != nil {
		return "", err
	}
	user, err := s.h.Render(sel.Template, data)
	if err != nil {
		return "", err
	}
	// "t3-select/AGENT": before the turn's own key "t3/SPEAKER" in
	// the natural order of keys that lists a run's calls.
	key := fmt.Sprintf("t%d-select/%s", s.turn+1, agent.ID)
	choices := make([]any, 0, len(candidates)+1)
	for _, p := range candidates {
		choices = append(choices, p.ID)
	}
	if sel.End != "" {
		choices = append(choices, sel.End)
	}
	schema, _ := json.Marshal(map[string]any{"enum": choices})
	var choice string
	var ends bool
	asked := 0
	s.h.Progress(kit.ProgressEvent{Node: s.node.ID, Agent: agent.ID, Started: true, Expected: s.expected()})
	at, err := kit.Repairs{
		Max: sel.Repair,
		Accept: func(r kit.Reply) error {
			var err error
			choice, ends, err = s.readChoice(r.Content, candidates)
			if err != nil {
				// Kept with the turns' rejections, for result.json and the report.
				_ = s.h.Event(event.Rejected, kit.RepairKey(key, asked), map[string]any{"speaker": agent.ID, "selector": true, "reasons": err.Error(), "attempt": asked + 1})
			}
			asked++
			return err
		},
		Feedback: func(err error) string { return err.Error() },
		Event: func(attempt int, err error) any {
			return map[string]any{"selector": agent.ID, "turn": s.turn + 1, "attempt": attempt, "reasons": err.Error()}
		},
	}.Call(ctx, s.h, kit.Call{Key: key, Node: s.node.ID, Agent: agent, Model: agent.Model, Messages: kit.Messages(system, user),
		// The stand-in of a dry run names the first candidate.
		Shape: kit.Shape{Format: "json", Schema: schema}, Repairs: sel.Repair})
	s.h.Progress(kit.ProgressEvent{Node: s.node.ID, Agent: agent.ID, Finished: true, Expected: s.expected()})
	s.selectCalls += at.N + 1
	if err != nil {
		return "", err
	}
	ev := map[string]any{"selector": agent.ID, "turn": s.turn + 1, "attempts": at.N + 1}
	if at.Invalid != nil {
		if sel.Fallback == SelectFallbackFail {
			return "", fmt.Errorf("node %q%s, turn %d: the selector %s's choice of speaker was rejected %d time(s), last because: %v (speaker.fallback: previous or round_robin would go on)",
				s.node.ID, s.goalNote(), s.turn+1, agent.ID, at.N+1, at.Invalid)
		}
		choice, ends = s.fallbackSpeaker(candidates), false
		s.h.Warn("node %q%s, turn %d: the selector %s named no one it may choose after %d attempt(s) (%v); %s speaks, chosen by speaker.fallback: %s",
			s.node.ID, s.goalNote(), s.turn+1, agent.ID, at.N+1, at.Invalid, choice, sel.Fallback)
		ev["fallback"] = sel.Fallback
	}
	if ends {
		ev["ended"] = true
		_ = s.h.Event(event.SpeakerSelected, key, ev)
		s.endedBy = "selector"
		return "", nil
	}
	ev["speaker"] = choice
	_ = s.h.Event(event.SpeakerSelected, key, ev)
	return choice, nil
}

// fallbackSpeaker is who speaks when the selector chose no one: the last
// speaker when the strategy says previous and it may speak (else the first
// candidate), or the next in declaration order.
func (s *state) fallbackSpeaker(candidates []value.Participant) string {
	if s.cfg.Select.Fallback == SelectFallbackPrevious {
		if i, ok := s.index[s.last]; ok && !s.participants[i].Withdrawn {
			return s.last
		}
		return candidates[0].ID
	}
	return s.roundRobin(len(s.active()))
}

// readChoice reads the speaker a selector's reply names. The reply may be
// an id or a name alone, in any case, quoted or emphasised, with a full
// stop; else it is searched for whole-word mentions of the participants'
// ids and names ("debater 2" names debater_2). A reply naming more than one
// participant, or none, or one who may not speak now, is rejected with a
// reason the selector is told: it is never guessed between two.
func (s *state) readChoice(reply string, candidates []value.Participant) (string, bool, error) {
	sel := s.cfg.Select
	var ids []string
	for _, p := range candidates {
		ids = append(ids, p.ID)
	}
	list := strings.Join(ids, ", ")
	if sel.End != "" {
		list += fmt.Sprintf(" (or %s to end the conversation)", sel.End)
	}
	bare := strings.Trim(strings.TrimSpace(reply), "\"'`*_.!@[]() \t\n")
	if sel.End != "" && sameName(bare, sel.End) {
		return "", true, nil
	}
	// An id names its agent (ids are unique, so one whose id is another's
	// name can still be named); else a name, when only one has it.
	named := ""
	var byName []string
	for _, a := range s.node.Agents {
		if sameName(bare, a.ID) {
			named = a.ID
			break
		}
		if sameName(bare, a.Name) {
			byName = append(byName, a.ID)
		}
	}
	if named == "" && len(byName) > 1 {
		return "", false, fmt.Errorf("%q is the name of %s: reply with the id of one of %s", bare, strings.Join(byName, " and "), list)
	}
	if named == "" && len(byName) == 1 {
		named = byName[0]
	}
	if named == "" {
		mentioned := s.mentions(reply)
		if sel.End != "" && containsWords(words(reply), words(sel.End)) >= 0 {
			if len(mentioned) == 0 {
				return "", true, nil
			}
			mentioned = append(mentioned, sel.End)
		}
		switch len(mentioned) {
		case 0:
			return "", false, fmt.Errorf("your reply names none of the participants who may speak next; reply with exactly one of: %s", list)
		case 1:
			named = mentioned[0]
		default:
			return "", false, fmt.Errorf("your reply names %s: name exactly one of %s", strings.Join(mentioned, " and "), list)
		}
	}
	if slices.Contains(ids, named) {
		return named, false, nil
	}
	p := s.participants[s.index[named]]
	switch {
	case p.Withdrawn:
		return "", false, fmt.Errorf("%s has withdrawn from the conversation; choose one of %s", named, list)
	case named == s.last:
		return "", false, fmt.Errorf("%s has just spoken and may not speak twice in a row; choose one of %s", named, list)
	}
	return "", false, fmt.Errorf("%s may not speak now; choose one of %s", named, list)
}

// mentions are the participants a text names by id or name as whole words
// (case, spaces, hyphens and underscores alike), in declaration order. A
// mention inside a longer one of another participant ("Ana" in "Ana
// Lima") does not count.
func (s *state) mentions(text string) []string {
	tw := words(text)
	type span struct {
		from, to int
		id       string
		byID     bool
	}
	var spans []span
	for _, a := range s.node.Agents {
		for k, form := range []string{a.ID, a.Name} {
			fw := words(form)
			if len(fw) == 0 {
				continue
			}
			for i := 0; i+len(fw) <= len(tw); i++ {
				if slices.Equal(tw[i:i+len(fw)], fw) {
					spans = append(spans, span{i, i + len(fw), a.ID, k == 0})
				}
			}
		}
	}
	var out []string
	for _, x := range spans {
		inside := false
		for _, y := range spans {
			longer := y.to-y.from > x.to-x.from
			same := y.from == x.from && y.to == x.to
			// Inside another's longer mention, or the same words as
			// another's id (as for a whole reply, an id comes first).
			if y.id != x.id && y.from <= x.from && x.to <= y.to && (longer || same && y.byID && !x.byID) {
				inside = true
			}
		}
		if !inside && !slices.Contains(out, x.id) {
			out = append(out, x.id)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return s.index[a] - s.index[b] })
	return out
}

// words splits a text into lower-case words of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// containsWords is where the words of want start in have, or -1.
func containsWords(have, want []string) int {
	for i := 0; len(want) > 0 && i+len(want) <= len(have); i++ {
		if slices.Equal(have[i:i+len(want)], want) {
			return i
		}
	}
	return -1
}

// sameName reports whether two names are the same words ("Debater 2" and
// debater_2).
func sameName(a, b string) bool {
	wa, wb := words(a), words(b)
	return len(wa) > 0 && slices.Equal(wa, wb)
}
