package converse

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/chat"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/nodes/parse"
	"github.com/debate-runner/runner/spec"
	"github.com/expr-lang/expr/vm"
)

// Speaker names used for messages that no agent wrote.
const (
	TimeKeeper = "timekeeper"
)

// state is a conversation in progress.
type state struct {
	cfg          *Config
	node         *spec.NodePlan
	h            kit.Host
	participants []value.Participant
	index        map[string]int
	turn         int
	last         string // last speaker
	lastMsg      value.Message
	transcript   []value.Message
	fired        []bool
	forced       map[string]bool
	endedBy      string
	// watched is, per watcher, the transcript's length when it last ran.
	watched []int
	// breakSeen is how many messages the transcript had when break was
	// last checked.
	breakSeen int
	// selectCalls are the selector's calls not yet counted.
	selectCalls int
	// sums are the speakers' latest summaries of the conversation
	// (summarize: as a mapping), by agent id.
	sums map[string]*threadSummary
}

// Execute implements kit.Def: turns until the until-condition holds,
// every participant has withdrawn, or max_turns is reached.
func (Kind) Execute(ctx context.Context, h kit.Host, node *spec.NodePlan, cfg *Config) (value.NodeResult, error) {
	s := &state{cfg: cfg, node: node, h: h, index: map[string]int{}, fired: make([]bool, len(cfg.Interject)), forced: map[string]bool{},
		watched: make([]int, len(cfg.Watch))}
	for i, a := range node.Agents {
		s.participants = append(s.participants, value.Participant{ID: a.ID, Name: a.Name})
		s.index[a.ID] = i
	}
	calls, err := s.interjectAtStart(ctx)
	if err != nil {
		return value.NodeResult{}, err
	}
	for s.turn < cfg.MaxTurns {
		if err := ctx.Err(); err != nil {
			return value.NodeResult{}, err
		}
		if stop, err := s.stops(); err != nil || stop {
			if err != nil {
				return value.NodeResult{}, err
			}
			break
		}
		speaker, err := s.nextSpeaker(ctx)
		calls += s.selectCalls
		s.selectCalls = 0
		if err != nil {
			return value.NodeResult{}, err
		}
		if speaker == "" {
			if s.endedBy == "" {
				s.endedBy = "everyone withdrew"
			}
			break
		}
		n, err := s.takeTurn(ctx, speaker)
		calls += n
		if err != nil {
			return value.NodeResult{}, err
		}
		done, err := s.finished()
		if err != nil {
			return value.NodeResult{}, err
		}
		// After the last allowed turn nobody speaks again, so a time keeper's
		// call or a watcher's decision would go unheard.
		if done || s.turn >= cfg.MaxTurns {
			break
		}
		n, err = s.interject(ctx)
		calls += n
		if err != nil {
			return value.NodeResult{}, err
		}
		if err := s.watch(ctx); err != nil {
			return value.NodeResult{}, err
		}
		if done, err = s.finished(); err != nil || done {
			if err != nil {
				return value.NodeResult{}, err
			}
			break
		}
	}
	if s.endedBy == "" {
		s.endedBy = "max_turns"
	}
	_ = h.Event(event.ConversationEnded, "", map[string]any{"turns": s.turn, "reason": s.endedBy})
	return s.result(calls), nil
}

func (s *state) result(calls int) value.NodeResult {
	verdicts := map[string]any{}
	counts := map[string]any{}
	var list []any
	for _, p := range s.participants {
		verdicts[p.ID] = p.Verdict
		if p.Verdict != "" {
			n, _ := counts[p.Verdict].(int)
			counts[p.Verdict] = n + 1
		}
		list = append(list, map[string]any{"agent": p.ID, "verdict": p.Verdict, "reasoning": p.Reasoning, "withdrawn": p.Withdrawn, "turns": p.Turns})
	}
	out := map[string]any{"turns": s.turn, "ended_by": s.endedBy, "verdicts": list, "counts": counts}
	if s.h.Scope().Goal.ID != "" {
		out["goal"] = s.h.Scope().Goal.ID
	}
	return value.NodeResult{Output: out, Outputs: verdicts, Messages: s.transcript, Calls: calls, Text: s.lastMsg.Content}
}

// env is the expression environment: the flow's plus the conversation's.
func (s *state) env() map[string]any {
	m := s.h.Env().Map()
	undecided := s.undecided()
	var speakers []string
	for _, p := range s.participants {
		speakers = append(speakers, p.ID)
	}
	m["participants"] = append([]value.Participant(nil), s.participants...)
	m["turn"] = s.turn
	m["max_turns"] = s.cfg.MaxTurns
	m["undecided"] = undecided
	m["speakers"] = speakers
	m["last"] = s.lastMsg
	// Shared, capped so that appending copies: turns only append to it.
	m["transcript"] = s.transcript[:len(s.transcript):len(s.transcript)]
	return m
}

func (s *state) undecided() []string {
	out := []string{}
	for _, p := range s.participants {
		if p.Verdict == "" {
			out = append(out, p.ID)
		}
	}
	return out
}

func (s *state) eval(p *spec.Program, env map[string]any) (any, error) {
	v, err := vm.Run(p.Program, env)
	if err != nil {
		return nil, fmt.Errorf("node %q: %s (%s): %w", s.node.ID, "expression", p.Source, spec.ConditionError(errors.New(strings.SplitN(err.Error(), "\n", 2)[0])))
	}
	return v, nil
}

// stops reports, before a turn, whether the conversation ends there: its
// break holds after what was posted since the last turn, or its while no
// longer holds.
func (s *state) stops() (bool, error) {
	if s.cfg.Break != nil && s.posted() {
		if stop, err := s.breaks(); err != nil || stop {
			return stop, err
		}
	}
	if s.cfg.While == nil {
		return false, nil
	}
	goes, err := s.h.Continues(s.cfg.While, s.env())
	if err != nil {
		return false, fmt.Errorf("node %q: while (%s): %w", s.node.ID, s.cfg.While.Source, err)
	}
	if !goes {
		s.endedBy = "while"
	}
	return !goes, nil
}

// posted reports whether a message was posted since break was last
// checked.
func (s *state) posted() bool {
	n := len(s.transcript)
	if n == s.breakSeen {
		return false
	}
	s.breakSeen = n
	return true
}

func (s *state) breaks() (bool, error) {
	stop, err := s.h.Holds(s.cfg.Break, s.env())
	if err != nil {
		return false, fmt.Errorf("node %q: break (%s): %w", s.node.ID, s.cfg.Break.Source, err)
	}
	if stop {
		s.endedBy = "break"
	}
	return stop, nil
}

// finished reports whether the conversation is over: everyone has withdrawn
// (nobody is left to speak, whatever until says), its break holds after
// the turn, or until holds.
func (s *state) finished() (bool, error) {
	if len(s.active()) == 0 {
		s.endedBy = "everyone withdrew"
		return true, nil
	}
	if s.cfg.Break != nil && s.posted() {
		if stop, err := s.breaks(); err != nil || stop {
			return stop, err
		}
	}
	if s.cfg.Until == nil {
		return false, nil
	}
	done, err := s.h.Holds(s.cfg.Until, s.env())
	if err != nil {
		return false, fmt.Errorf("node %q: until (%s): %w", s.node.ID, s.cfg.Until.Source, err)
	}
	if done {
		s.endedBy = "until"
	}
	return done, nil
}

// active are the participants who have not withdrawn.
func (s *state) active() []value.Participant {
	var out []value.Participant
	for _, p := range s.participants {
		if !p.Withdrawn {
			out = append(out, p)
		}
	}
	return out
}

// nextSpeaker picks who speaks: a whisper's target first (with the
// configured chance), then the strategy. "" means nobody can speak.
func (s *state) nextSpeaker(ctx context.Context) (string, error) {
	active := s.active()
	if len(active) == 0 {
		return "", nil
	}
	rng := s.h.Rand()
	// A whisper's addressee answers first (with reply_to_whisper's chance),
	// whatever the strategy: a speaker expression decides only when the
	// addressee does not (set reply_to_whisper: 0 to let it decide alone).
	if s.lastMsg.Whisper && s.lastMsg.To != "" {
		if i, ok := s.index[s.lastMsg.To]; ok && !s.participants[i].Withdrawn && rng.Float64() < s.cfg.ReplyToWhisper {
			return s.lastMsg.To, nil
		}
	}
	candidates := active
	if len(active) > 1 {
		candidates = nil
		for _, p := range active {
			if p.ID != s.last {
				candidates = append(candidates, p)
			}
		}
	}
	switch s.cfg.Speaker {
	case SpeakerRoundRobin:
		return s.roundRobin(len(active)), nil
	case SpeakerSelect:
		if s.cfg.Select.Repeat {
			candidates = active
		}
		return s.selectSpeaker(ctx, candidates)
	case SpeakerRandom:
		return candidates[rng.IntN(len(candidates))].ID, nil
	case SpeakerExpr:
		v, err := s.eval(s.cfg.SpeakerExpr, s.env())
		if err != nil {
			return "", err
		}
		id, _ := v.(string)
		i, ok := s.index[id]
		if !ok {
			return "", fmt.Errorf("node %q: speaker expression %q chose %v, which is not a participant", s.node.ID, s.cfg.SpeakerExpr.Source, v)
		}
		if s.participants[i].Withdrawn {
			return "", fmt.Errorf("node %q: speaker expression chose %q, who has withdrawn", s.node.ID, id)
		}
		return id, nil
	default:
		// least_spoken: weight 1/(1+d)^2, where d is how many more turns a
		// candidate has had than the quietest one. Counting from the quietest
		// keeps the preference as strong at turn 50 as at turn 5; weights of
		// absolute counts (1/(1+turns)^2) flatten out as a conversation grows.
		quiet := candidates[0].Turns
		for _, p := range candidates {
			quiet = min(quiet, p.Turns)
		}
		total := 0.0
		weights := make([]float64, len(candidates))
		for i, p := range candidates {
			d := float64(1 + p.Turns - quiet)
			weights[i] = 1 / (d * d)
			total += weights[i]
		}
		x := rng.Float64() * total
		for i, w := range weights {
			if x < w {
				return candidates[i].ID, nil
			}
			x -= w
		}
		return candidates[len(candidates)-1].ID, nil
	}
}

// roundRobin is the next participant after the last speaker in
// declaration order, who has not withdrawn (the last speaker again only
// when alone: active is how many have not withdrawn).
func (s *state) roundRobin(active int) string {
	start := 0
	if i, ok := s.index[s.last]; ok {
		start = i + 1
	}
	for k := 0; k < len(s.participants); k++ {
		p := s.participants[(start+k)%len(s.participants)]
		if !p.Withdrawn && (p.ID != s.last || active == 1) {
			return p.ID
		}
	}
	return s.active()[0].ID
}

// takeTurn asks the speaker for a message, re-asking with the reasons when
// it breaks the rules, and records it. It returns the number of calls made.
func (s *state) takeTurn(ctx context.Context, speaker string) (int, error) {
	agent := s.node.Agents[s.index[speaker]]
	p := s.participants[s.index[speaker]]
	mustDecide := s.forced[speaker] && p.Verdict == ""
	feedback := ""
	var parsed Parsed
	var content string
	var req *chat.Request
	calls := 0
	for attempt := 0; ; attempt++ {
		data := &PromptData{PromptBase: s.h.Base(s.node, agent)}
		s.fill(data)
		data.Feedback = feedback
		system, err := kit.SystemPrompt(s.h, s.cfg.System, agent, data)
		if err != nil {
			return calls, err
		}
		if system, err = s.summarize(ctx, agent, data, system); err != nil {
			return calls, err
		}
		skip := 0
		if system, skip, err = s.condense(ctx, agent, data, system); err != nil {
			return calls, err
		}
		user, err := s.h.Render(s.cfg.Template, data)
		if err != nil {
			return calls, err
		}
		model := s.cfg.Model
		if model == nil {
			model = agent.Model
		}
		key := kit.RepairKey(fmt.Sprintf("t%d/%s", s.turn+1, speaker), attempt)
		s.h.Progress(kit.ProgressEvent{Node: s.node.ID, Agent: speaker, Started: true, Expected: s.expected()})
		var reply kit.Reply
		reply, req, err = s.complete(ctx, agent, data, kit.Call{Key: key, Node: s.node.ID, Agent: agent, Model: model,
			Shape: s.shape(mustDecide), Repairs: s.repairs()}, system, user, skip)
		s.h.Progress(kit.ProgressEvent{Node: s.node.ID, Agent: speaker, Finished: true, Expected: s.expected()})
		calls++
		if err != nil {
			return calls, err
		}
		content = reply.Content
		if s.cfg.Format == "text" {
			parsed = Parsed{Content: strings.TrimSpace(content)}
			break
		}
		parsed, err = ParseMessage(content, s.node.Agents, speaker, s.cfg.Options, s.cfg.Reasoning, p.Verdict != "", mustDecide)
		if err == nil {
			err = s.checkRules(speaker, parsed)
		}
		if err == nil {
			break
		}
		err = parse.Truncated(reply.FinishReason, err)
		_ = s.h.Event(event.Rejected, key, map[string]any{"speaker": speaker, "reasons": err.Error(), "attempt": attempt + 1})
		if attempt >= s.cfg.Repair && s.acceptUndecided(speaker, key, content, p.Verdict != "", mustDecide, &parsed) {
			break
		}
		if attempt >= s.cfg.Repair {
			return calls, fmt.Errorf("node %q%s, turn %d: %s's message was rejected %d time(s), last because: %w", s.node.ID, s.goalNote(), s.turn+1, speaker, attempt+1, err)
		}
		feedback = fmt.Sprintf("Your last message was not accepted: %v. Write your message again, following the format.", err)
		if errors.As(err, new(*parse.TruncatedError)) {
			feedback = fmt.Sprintf("Your last message was not accepted: %v. Write it again, much more briefly, following the format.", err)
		}
	}
	req.Done(content)
	s.turn++
	msg := value.Message{
		From: speaker, To: parsed.To, Whisper: parsed.Whisper, Content: parsed.Content, Turn: s.turn,
		Record: "message", Verdict: parsed.Verdict, Reasoning: parsed.Reasoning, Withdrawn: parsed.Withdrawn,
		// A verdict given when the time keeper made the speaker decide is
		// marked: it was forced, not reached.
		Forced: mustDecide && parsed.Verdict != "",
	}
	toRecord := []value.Message{msg}
	if parsed.Private != "" {
		toRecord = append(toRecord, value.Message{From: speaker, Private: true, Content: parsed.Private, Turn: s.turn, Record: "private"})
	}
	recorded := s.h.Record(toRecord...)
	s.transcript = append(s.transcript, recorded[0])
	s.lastMsg, s.last = recorded[0], speaker
	pp := &s.participants[s.index[speaker]]
	pp.Turns++
	if parsed.Verdict != "" {
		pp.Verdict, pp.Reasoning = parsed.Verdict, parsed.Reasoning
		delete(s.forced, speaker)
	}
	if parsed.HasWithdrawn {
		pp.Withdrawn = parsed.Withdrawn
	}
	return calls, nil
}

// shape is what a turn's reply must look like: the tags of a message to
// everyone, with a verdict when the speaker must give one now.
func (s *state) shape(mustDecide bool) kit.Shape {
	return MessageShape(s.cfg.Format, s.cfg.Options, s.cfg.Reasoning, mustDecide)
}

// MessageShape is what a turn's reply must look like in a conversation of
// that format, verdict options and need of reasons: the tags of a message
// to everyone, with a verdict when the speaker must give one now. A
// message without content is refused (ParseMessage), and so is a verdict
// without its reasons when they are needed: those tags are Filled.
func MessageShape(format string, options []string, reasoning, mustDecide bool) kit.Shape {
	if format == "text" {
		return kit.Shape{}
	}
	tags := []kit.Tag{{Name: "SpeakingTo", Value: "All"}, {Name: "Content", Filled: true}}
	if mustDecide && len(options) > 0 {
		tags = append(tags, kit.Tag{Name: "Verdict", Value: options[0]}, kit.Tag{Name: "VerdictReasoning", Filled: reasoning})
	}
	return kit.Shape{Format: "tags", Tags: tags}
}

// expected is how many calls the conversation expects at most, repairs
// aside: a turn each, and a selection before each when a model chooses.
func (s *state) expected() int {
	if s.cfg.Select != nil {
		return 2 * s.cfg.MaxTurns
	}
	return s.cfg.MaxTurns
}

// repairs is how often a turn may be asked again: a plain text turn is
// only rejected by rules.
func (s *state) repairs() int {
	if s.cfg.Format == "text" && len(s.cfg.Rules) == 0 {
		return 0
	}
	return s.cfg.Repair
}

// goalNote names the current goal for error messages, when there is one.
func (s *state) goalNote() string {
	if g := s.h.Scope().Goal.ID; g != "" {
		return fmt.Sprintf(" (goal %s)", g)
	}
	return ""
}

func (s *state) checkRules(speaker string, p Parsed) error {
	if len(s.cfg.Rules) == 0 {
		return nil
	}
	env := s.env()
	env["msg"] = value.Message{From: speaker, To: p.To, Whisper: p.Whisper, Content: p.Content, Verdict: p.Verdict, Reasoning: p.Reasoning, Withdrawn: p.Withdrawn, Turn: s.turn + 1}
	var reasons []string
	for _, r := range s.cfg.Rules {
		v, err := s.eval(r.Check, env)
		if err != nil {
			return err
		}
		if b, _ := v.(bool); !b {
			reasons = append(reasons, r.Message)
		}
	}
	if len(reasons) > 0 {
		return &Rejection{Reasons: reasons}
	}
	return nil
}

// fill adds the conversation's state to prompt data.
func (s *state) fill(d *PromptData) {
	d.Turn = s.turn + 1
	d.MaxTurns = s.cfg.MaxTurns
	d.Participants = append([]value.Participant(nil), s.participants...)
	d.Undecided = s.undecided()
	d.Verdict = value.VerdictView{Set: s.cfg.VerdictSet, Options: s.cfg.Options, Reasoning: s.cfg.Reasoning}
	if len(d.Agents) == 0 {
		for _, a := range s.node.Agents {
			d.Agents = append(d.Agents, a.View())
		}
	}
}

// acceptUndecided applies the verdict policy to a speaker that had to
// give its verdict and still did not, its repairs spent: unless the spec
// says to fail, the message is taken without a verdict (when nothing else
// is wrong with it), with a warning, and the speaker is no longer made to
// decide. One participant must not sink a whole conversation.
func (s *state) acceptUndecided(speaker, key, content string, hadVerdict, mustDecide bool, parsed *Parsed) bool {
	if !mustDecide || s.cfg.FailUndecided {
		return false
	}
	p, err := ParseMessage(content, s.node.Agents, speaker, s.cfg.Options, s.cfg.Reasoning, hadVerdict, false)
	if err == nil {
		err = s.checkRules(speaker, p)
	}
	if err != nil {
		return false
	}
	*parsed = p
	delete(s.forced, speaker)
	s.h.Warn("node %q%s, turn %d: %s gave no verdict when it had to; its message is recorded without one (verdict.undecided: fail would fail the run)", s.node.ID, s.goalNote(), s.turn+1, speaker)
	_ = s.h.Event(event.NoVerdict, key, map[string]any{"speaker": speaker})
	return true
}

// interject posts the time keeper's message when a rule applies after this
// turn. Rules are in escalating order: when several apply, the last one is
// posted. A rule without every fires once; with every, each time both hold.
// force_verdict makes every undecided participant answer now with a verdict.
func (s *state) interject(ctx context.Context) (int, error) {
	return s.interjectWhere(ctx, func(Interject) bool { return true })
}

// interjectWhere posts the last applicable rule among those eligible.
func (s *state) interjectWhere(ctx context.Context, eligible func(Interject) bool) (int, error) {
	chosen := -1
	env := s.env()
	for i, r := range s.cfg.Interject {
		if !eligible(r) {
			continue
		}
		if r.Every > 0 && s.turn%r.Every != 0 {
			continue
		}
		if r.Every == 0 && s.fired[i] {
			continue
		}
		if r.When != nil {
			v, err := s.eval(r.When, env)
			if err != nil {
				return 0, err
			}
			if b, _ := v.(bool); !b {
				continue
			}
		}
		chosen = i
	}
	if chosen < 0 {
		return 0, nil
	}
	r := s.cfg.Interject[chosen]
	s.fired[chosen] = true
	data := &PromptData{PromptBase: s.h.Base(s.node, s.node.Agents[0])}
	s.fill(data)
	data.Turn = s.turn
	data.Agent = value.AgentView{ID: TimeKeeper, Name: "Time Keeper"}
	text, err := s.h.Render(r.Template, data)
	if err != nil {
		return 0, err
	}
	rec := s.h.Record(value.Message{From: TimeKeeper, Content: strings.TrimSpace(text), Turn: s.turn, Record: "interjection"})
	s.transcript = append(s.transcript, rec[0])
	_ = s.h.Event(event.Interjection, "", map[string]any{"turn": s.turn, "template": r.Template, "force_verdict": r.ForceVerdict})
	if !r.ForceVerdict {
		return 0, nil
	}
	calls := 0
	for _, id := range s.undecided() {
		if s.participants[s.index[id]].Withdrawn || s.turn >= s.cfg.MaxTurns {
			continue
		}
		s.forced[id] = true
		n, err := s.takeTurn(ctx, id)
		calls += n
		if err != nil {
			return calls, err
		}
	}
	return calls, nil
}

// watch runs watcher nodes every N turns and posts their decision when a
// majority of the watcher's agents agree.
func (s *state) watch(ctx context.Context) error {
	for i, w := range s.cfg.Watch {
		if !s.watchDue(i) {
			continue
		}
		s.watched[i] = len(s.transcript)
		res, err := s.h.RunNode(ctx, w.Node)
		if err != nil {
			return fmt.Errorf("node %q: watcher %q: %w", s.node.ID, w.Node, err)
		}
		decision, votes, total := majority(res)
		_ = s.h.Event(event.Watch, "", map[string]any{"watcher": w.Node, "turn": s.turn, "decision": decision, "votes": votes, "of": total})
		if decision == "" || w.silent(decision) {
			continue
		}
		why := reasons(res, decision)
		text := fmt.Sprintf("%s decided: %s (%d of %d agree).", w.Node, decision, votes, total)
		if len(why) > 0 {
			text += " " + strings.Join(why, " | ")
		}
		if w.Template != "" {
			data := &WatchData{PromptData: PromptData{PromptBase: s.h.Base(s.node, s.node.Agents[0])}, Decision: decision, Text: decision, Reasons: why}
			s.fill(&data.PromptData)
			data.Agent = value.AgentView{ID: w.Node, Name: w.Node}
			if text, err = s.h.Render(w.Template, data); err != nil {
				return err
			}
		}
		rec := s.h.Record(value.Message{From: w.Node, Content: strings.TrimSpace(text), Turn: s.turn, Record: "watch", Verdict: ""})
		s.transcript = append(s.transcript, rec[0])
	}
	return nil
}

// majority finds the verdict (or output) more than half of a node's agents
// gave.
func majority(res value.NodeResult) (string, int, int) {
	counts := map[string]int{}
	total := 0
	for _, v := range res.Outputs {
		if sv := fmt.Sprint(v); v != nil && sv != "" {
			counts[sv]++
		}
		total++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if counts[k]*2 > total {
			return k, counts[k], total
		}
	}
	return "", 0, total
}
