// Package dryrun works out what a run of a spec would do without calling any
// model: the calls per node in the worst case, the first round's prompts and
// an estimate of tokens and cost per model. It is built on package runtime,
// which knows nothing of it.
package dryrun

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/debate-runner/runner/nodes/ask"
	"github.com/debate-runner/runner/nodes/clarify"
	"github.com/debate-runner/runner/nodes/converse"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/sweep"
	"github.com/debate-runner/runner/spec"
	"github.com/expr-lang/expr/vm"
)

// DefaultReplyTokens is the reply size a dry run assumes for models that
// set no max_tokens.
const DefaultReplyTokens = 500

// Options configure Run.
type Options struct {
	Inputs      []string
	InputValues map[string]any
	Sets        []string
	// ReplyTokens is the assumed size of a reply from a model without
	// max_tokens (default DefaultReplyTokens); with max_tokens, that is
	// assumed: the worst case.
	ReplyTokens int
}

// Report is what a run would do: its calls, first prompts and an estimate
// of tokens and cost, worked out without calling any model.
type Report struct {
	Spec string `json:"spec"`
	// Nodes in the order the flow first runs them.
	Nodes []*Node `json:"nodes"`
	// Calls is the worst case from the loop bounds and max_turns: every loop
	// runs to its max, no until ends it early, both branches of an if whose
	// condition depends on replies are counted.
	Calls int `json:"calls"`
	// UpperBound adds every repair and tool round the spec allows.
	UpperBound int `json:"upper_bound"`
	// Prompts are the rendered prompts of each node's first round.
	Prompts []Prompt `json:"prompts"`
	// Models estimate tokens and cost per model over the worst case.
	Models      []*Model `json:"models"`
	ReplyTokens int      `json:"reply_tokens"`
	Notes       []string `json:"notes,omitempty"`
}

// Node is one node's share of the worst case.
type Node struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Runs is how many times the flow runs the node.
	Runs int `json:"runs"`
	// MinPerRun and MaxPerRun bound the calls of one run of the node.
	MinPerRun  int    `json:"min_per_run"`
	MaxPerRun  int    `json:"max_per_run"`
	Calls      int    `json:"calls"`
	UpperBound int    `json:"upper_bound"`
	Detail     string `json:"detail"`
}

// Prompt is one rendered prompt.
type Prompt struct {
	Key    string `json:"key"`
	Node   string `json:"node"`
	Agent  string `json:"agent"`
	Target string `json:"target,omitempty"`
	Model  string `json:"model"`
	System string `json:"system,omitempty"`
	User   string `json:"user"`
	Tokens int    `json:"tokens"`
	Error  string `json:"error,omitempty"`
}

// Model is the estimate for one model.
type Model struct {
	Name             string  `json:"name"`
	Model            string  `json:"model"`
	Encoding         string  `json:"encoding"`
	Calls            int     `json:"calls"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	Cost             float64 `json:"cost"`
	Priced           bool    `json:"priced"`
}

// dry walks a plan the way a run would, with placeholder replies.
type dry struct {
	plan        *spec.Plan
	inputs      map[string]any
	vars        map[string]any
	replyTokens int
	report      *Report
	nodes       map[string]*Node
	models      map[string]*Model
	messages    []spec.Message
	results     map[string]spec.NodeResult
	// placeholders maps each placeholder text to the reply tokens it stands
	// for, so a prompt that quotes it is charged for the real reply.
	placeholders map[string]int
	shown        map[string]bool // nodes whose first-round prompts are kept
	occurrences  map[string]int
	lastTokens   map[string]int // per node and agent, for prompts that cannot render
	notes        map[string]bool
}

// Run works out what running plan would do, without any model call:
// the calls per node and their worst case, the prompts of every node's first
// round (with placeholders for replies not known in advance), and prompt
// and completion tokens and cost per model.
func Run(plan *spec.Plan, opts Options) (*Report, error) {
	inputs, err := runtime.ResolveInputValues(plan, opts.Inputs, opts.InputValues)
	if err != nil {
		return nil, err
	}
	vars, err := runtime.ResolveVars(plan, opts.Sets)
	if err != nil {
		return nil, err
	}
	d := &dry{
		plan: plan, inputs: inputs, vars: vars, replyTokens: opts.ReplyTokens,
		report: &Report{Spec: plan.Name},
		nodes:  map[string]*Node{}, models: map[string]*Model{},
		results: map[string]spec.NodeResult{}, placeholders: map[string]int{},
		shown: map[string]bool{}, occurrences: map[string]int{}, lastTokens: map[string]int{}, notes: map[string]bool{},
	}
	if d.replyTokens <= 0 {
		d.replyTokens = DefaultReplyTokens
	}
	d.report.ReplyTokens = d.replyTokens
	if err := d.steps(plan.Flow, kit.Scope{Key: "-"}); err != nil {
		return nil, err
	}
	if plan.Summarize != nil {
		d.note(fmt.Sprintf("history summaries (over %d characters) may add one call per agent and scope; they are not counted", plan.Summarize.OverChars))
	}
	for _, n := range d.report.Nodes {
		d.report.Calls += n.Calls
		d.report.UpperBound += n.UpperBound
	}
	for _, name := range slices.Sorted(maps.Keys(d.models)) {
		d.report.Models = append(d.report.Models, d.models[name])
	}
	return d.report, nil
}

func (d *dry) note(s string) {
	if !d.notes[s] {
		d.notes[s] = true
		d.report.Notes = append(d.report.Notes, s)
	}
}

func (d *dry) env(s kit.Scope) map[string]any {
	results := make(map[string]spec.NodeResult, len(d.results))
	for k, v := range d.results {
		results[k] = v
	}
	e := &spec.Env{
		Inputs: d.inputs, Vars: d.vars, Nodes: results, Goals: d.plan.Goals, Verdicts: d.plan.Verdicts,
		Messages: append([]spec.Message(nil), d.messages...), Round: s.Round, Goal: s.Goal, Loop: s.Loop,
		Extra: map[string]any{"goal_verdicts": runtime.GoalVerdictsOf(d.plan, d.messages)},
	}
	return e.Map()
}

func (d *dry) eval(p *spec.Program, s kit.Scope) (any, error) {
	v, err := vm.Run(p.Program, d.env(s))
	if err != nil {
		return nil, errors.New(strings.SplitN(err.Error(), "\n", 2)[0])
	}
	return v, nil
}

func withLoop(s kit.Scope, name string, value any, keyPart string) kit.Scope {
	loop := map[string]any{}
	for k, v := range s.Loop {
		loop[k] = v
	}
	loop[name] = value
	s.Loop = loop
	if s.Key == "-" || s.Key == "" {
		s.Key = keyPart
	} else {
		s.Key += "/" + keyPart
	}
	return s
}

func (d *dry) steps(steps []*spec.FlowStep, s kit.Scope) error {
	for _, st := range steps {
		if err := d.step(st, s); err != nil {
			return err
		}
	}
	return nil
}

func (d *dry) step(st *spec.FlowStep, s kit.Scope) error {
	switch st.Kind {
	case spec.StepNode:
		return d.node(st.Node, s)
	case spec.StepLoop:
		max := st.MaxConst
		if st.MaxExpr != nil {
			v, err := d.eval(st.MaxExpr, s)
			n, ok := runtime.LoopCount(v)
			if err != nil || !ok || n < 0 {
				return fmt.Errorf("%s: loop max (%s) cannot be worked out before the run: %v", posString(d.plan, st.Pos), st.MaxExpr.Source, errOr(err, v))
			}
			max = n
		}
		if st.Until != nil {
			d.note(fmt.Sprintf("the loop at %s counts all %d iterations; until (%s) may end it earlier", posString(d.plan, st.Pos), max, st.Until.Source))
		}
		for i := 1; i <= max; i++ {
			inner := withLoop(s, st.As, i, fmt.Sprintf("%s=%d", st.As, i))
			inner.Round = i
			if err := d.steps(st.Do, inner); err != nil {
				return err
			}
		}
	case spec.StepForeach:
		v, err := d.eval(st.In, s)
		var items []any
		if err == nil {
			items, err = runtime.ForeachItems(v)
		}
		if err != nil {
			d.note(fmt.Sprintf("foreach at %s: its list (%s) is not known before the run (%v); counted once", posString(d.plan, st.Pos), st.In.Source, err))
			items = []any{nil}
		}
		for i, item := range items {
			key := fmt.Sprintf("%s=%d", st.As, i+1)
			if g, ok := item.(spec.GoalView); ok {
				key = fmt.Sprintf("%s=%s", st.As, g.ID)
			}
			inner := withLoop(s, st.As, item, key)
			inner.Item = item
			if g, ok := item.(spec.GoalView); ok {
				inner.Goal, inner.Round = g, 0
			}
			if err := d.steps(st.Do, inner); err != nil {
				return err
			}
		}
	case spec.StepIf:
		v, err := d.eval(st.Cond, s)
		if b, ok := v.(bool); err == nil && ok {
			if b {
				return d.steps(st.Do, s)
			}
			return d.steps(st.Else, s)
		}
		d.note(fmt.Sprintf("if at %s (%s) depends on replies; both branches are counted", posString(d.plan, st.Pos), st.Cond.Source))
		if err := d.steps(st.Do, s); err != nil {
			return err
		}
		return d.steps(st.Else, s)
	}
	return nil
}

func errOr(err error, v any) any {
	if err != nil {
		return err
	}
	return fmt.Sprintf("got %v", v)
}

// node simulates one run of a node.
func (d *dry) node(n *spec.NodePlan, s kit.Scope) error {
	dn := d.nodes[n.ID]
	if dn == nil {
		dn = &Node{ID: n.ID, Kind: n.Kind, MinPerRun: -1}
		d.nodes[n.ID] = dn
		d.report.Nodes = append(d.report.Nodes, dn)
	}
	occKey := n.ID + "/" + s.Key
	d.occurrences[occKey]++
	scopeKey := s.Key
	if c := d.occurrences[occKey]; c > 1 {
		scopeKey = fmt.Sprintf("%s#%d", scopeKey, c)
	}
	prefix := n.ID + "/" + scopeKey
	show := !d.shown[n.ID]
	d.shown[n.ID] = true
	var calls, bound int
	var res spec.NodeResult
	var err error
	switch cfg := n.Config.(type) {
	case *ask.Config:
		calls, bound, res, err = d.ask(n, cfg, s, prefix, show)
		dn.Detail = askDetail(n, cfg)
	case *converse.Config:
		calls, bound, res, err = d.converse(n, cfg, s, prefix, show)
		dn.Detail = fmt.Sprintf("%d participants, up to %d turns", len(n.Agents), cfg.MaxTurns)
	case *clarify.Config:
		calls, bound, res, err = d.clarify(n, cfg, s, prefix, show)
		dn.Detail = fmt.Sprintf("%s x up to %d iterations", plural(len(n.Agents), "agent"), cfg.MaxIterations)
	default:
		d.note(fmt.Sprintf("node %q: kind %q is not simulated; its calls are not counted", n.ID, n.Kind))
	}
	if err != nil {
		return err
	}
	dn.Runs++
	dn.Calls += calls
	dn.UpperBound += bound
	if dn.MinPerRun < 0 || calls < dn.MinPerRun {
		dn.MinPerRun = calls
	}
	dn.MaxPerRun = max(dn.MaxPerRun, calls)
	res.Calls = calls
	d.results[n.ID] = res
	return nil
}

func askDetail(n *spec.NodePlan, cfg *ask.Config) string {
	parts := []string{plural(len(n.Agents), "agent")}
	if cfg.Each != nil {
		parts = append(parts, fmt.Sprintf("each %s message (%s)", cfg.Each.Record, cfg.Each.From))
	}
	if cfg.CarryOver != "" {
		parts = append(parts, "carry_over "+cfg.CarryOver+" from round 2")
	}
	if cfg.Output.Repair > 0 && cfg.Output.Format != ask.FormatText && cfg.Output.Format != "" {
		parts = append(parts, fmt.Sprintf("repair %d", cfg.Output.Repair))
	}
	if cfg.MaxToolCalls > 0 && len(cfg.Tools) > 0 {
		parts = append(parts, fmt.Sprintf("up to %d tool calls", cfg.MaxToolCalls))
	}
	return strings.Join(parts, ", ")
}

// prompt builds prompt data the way the run's host does, from the
// placeholder history.
func (d *dry) prompt(n *spec.NodePlan, a *spec.AgentPlan, s kit.Scope) spec.PromptBase {
	data := spec.PromptBase{
		Agent: a.View(), Round: s.Round, Loop: s.Loop, Item: s.Item, Goal: s.Goal,
		Inputs: d.inputs, Vars: d.vars, Nodes: map[string]spec.NodeResult{},
	}
	for _, x := range n.Agents {
		data.Agents = append(data.Agents, x.View())
	}
	for k, v := range d.results {
		data.Nodes[k] = v
	}
	for _, m := range d.messages {
		if !runtime.Visible(m, a.ID) {
			continue
		}
		data.History = append(data.History, m)
		if m.To == a.ID && m.Round == s.Round && m.Goal == s.Goal.ID {
			data.Inbox = append(data.Inbox, m)
		}
	}
	return data
}

// call renders one call's prompt, counts it against the model and keeps
// the prompt when it is of a node's first round.
func (d *dry) call(n *spec.NodePlan, a *spec.AgentPlan, model *spec.ModelPlan, system, template string, data any, key, target string, show bool) {
	if model == nil {
		model = a.Model
	}
	p := Prompt{Key: key, Node: n.ID, Agent: a.ID, Target: target}
	if model != nil {
		p.Model = model.Name
	}
	var errs []string
	sys, err := d.render(systemTemplate(system, a), data)
	if err != nil {
		errs = append(errs, err.Error())
	}
	user, err := d.render(template, data)
	if err != nil {
		errs = append(errs, err.Error())
	}
	p.System, p.User = sys, user
	modelID := ""
	if model != nil {
		modelID = model.Model
	}
	memo := n.ID + "/" + a.ID
	if len(errs) == 0 {
		var texts []string
		if sys != "" {
			texts = append(texts, sys)
		}
		texts = append(texts, user)
		p.Tokens = CountChatTokens(modelID, texts...) + d.placeholderTokens(modelID, sys+"\n"+user)
		d.lastTokens[memo] = p.Tokens
	} else {
		p.Error = strings.Join(errs, "; ")
		p.Tokens = d.lastTokens[memo]
		d.note(fmt.Sprintf("some prompts of node %q cannot be rendered with placeholder replies (%s); their tokens are estimated from the node's last prompt that could", n.ID, p.Error))
	}
	if model != nil {
		dm := d.models[model.Name]
		if dm == nil {
			dm = &Model{Name: model.Name, Model: model.Model, Encoding: EncodingFor(model.Model), Priced: model.Price != nil}
			d.models[model.Name] = dm
		}
		dm.Calls++
		dm.PromptTokens += p.Tokens
		dm.CompletionTokens += d.replySize(model)
		if model.Price != nil {
			dm.Cost = (float64(dm.PromptTokens)*model.Price.Prompt + float64(dm.CompletionTokens)*model.Price.Completion) / 1e6
		}
	}
	if show {
		d.report.Prompts = append(d.report.Prompts, p)
	}
}

func systemTemplate(nodeSystem string, a *spec.AgentPlan) string {
	if nodeSystem != "" {
		return nodeSystem
	}
	return a.System
}

func (d *dry) render(name string, data any) (string, error) {
	if name == "" {
		return "", nil
	}
	var b strings.Builder
	if err := d.plan.Templates.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("template %s: %w", name, err)
	}
	return b.String(), nil
}

func (d *dry) replySize(m *spec.ModelPlan) int {
	if m != nil && m.MaxTokens > 0 {
		return m.MaxTokens
	}
	return d.replyTokens
}

// placeholderPattern finds placeholder replies quoted in a prompt.
var placeholderPattern = regexp.MustCompile(`<[^<>\n]{1,200}>`)

// placeholderTokens is what the replies a prompt quotes add beyond their
// placeholders.
func (d *dry) placeholderTokens(model, text string) int {
	extra := 0
	for _, m := range placeholderPattern.FindAllString(text, -1) {
		if size, ok := d.placeholders[m]; ok {
			extra += max(0, size-CountTokens(model, m))
		}
	}
	return extra
}

// reply records a placeholder message standing for a reply.
func (d *dry) reply(m spec.Message, model *spec.ModelPlan, s kit.Scope, n *spec.NodePlan) spec.Message {
	d.placeholders[m.Content] = d.replySize(model)
	m.ID = fmt.Sprintf("m%d", len(d.messages)+1)
	m.Node = n.ID
	if m.Round == 0 {
		m.Round = s.Round
	}
	if m.Goal == "" {
		m.Goal = s.Goal.ID
	}
	d.messages = append(d.messages, m)
	return m
}

func roundLabel(s kit.Scope) string {
	var parts []string
	if s.Goal.ID != "" {
		parts = append(parts, "goal "+s.Goal.ID)
	}
	if s.Round > 0 {
		parts = append(parts, fmt.Sprintf("round %d", s.Round))
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}

func (d *dry) ask(n *spec.NodePlan, cfg *ask.Config, s kit.Scope, prefix string, show bool) (int, int, spec.NodeResult, error) {
	type task struct {
		agent   *spec.AgentPlan
		target  *spec.Message
		carried *spec.Message
	}
	var tasks []task
	for _, a := range n.Agents {
		if cfg.CarryOver != "" && s.Round > 1 {
			if prev, ok := ask.LatestFrom(d.messages, cfg.CarryOver, a.ID, s.Goal.ID); ok {
				tasks = append(tasks, task{agent: a, carried: &prev})
				continue
			}
		}
		if cfg.Each == nil {
			tasks = append(tasks, task{agent: a})
			continue
		}
		for _, other := range n.Agents {
			if cfg.Each.From == ask.FromOthers && other.ID == a.ID || cfg.Each.From == ask.FromSelf && other.ID != a.ID {
				continue
			}
			if m, ok := ask.LatestFrom(d.messages, cfg.Each.Record, other.ID, s.Goal.ID); ok {
				tasks = append(tasks, task{agent: a, target: &m})
			}
		}
	}
	repairs := cfg.Output.Repair
	if cfg.Output.Format == ask.FormatText || cfg.Output.Format == "" {
		repairs = 0 // any text is a valid reply
	}
	perCall := (1 + repairs) * (1 + toolRounds(cfg))
	calls := 0
	var replies []spec.Message
	for _, t := range tasks {
		if t.carried != nil {
			replies = append(replies, spec.Message{From: t.agent.ID, Record: cfg.Record, Content: t.carried.Content, Output: t.carried.Output, Carried: true})
			continue
		}
		calls++
		data := &ask.PromptData{PromptBase: d.prompt(n, t.agent, s)}
		key := prefix + "/" + t.agent.ID
		to, about := "", ""
		if t.target != nil {
			data.Target = *t.target
			key += ">" + t.target.From
			to, about = t.target.From, " on "+t.target.From
		}
		if cfg.Record != "" {
			if own, ok := ask.LatestFrom(d.messages, cfg.Record, t.agent.ID, s.Goal.ID); ok {
				data.Own = own
			}
		}
		d.call(n, t.agent, cfg.Model, cfg.System, cfg.Template, data, key, to, show)
		content := fmt.Sprintf("<reply of %s to %s%s%s>", t.agent.ID, n.ID, about, roundLabel(s))
		replies = append(replies, spec.Message{From: t.agent.ID, To: to, Record: cfg.Record, Content: content, Output: content})
	}
	model := cfg.Model
	res := spec.NodeResult{Outputs: map[string]any{}}
	for _, m := range replies {
		mm := model
		if mm == nil {
			mm = d.plan.AgentByID[m.From].Model
		}
		rec := d.reply(m, mm, s, n)
		res.Messages = append(res.Messages, rec)
		res.Outputs[rec.From] = rec.Output
		res.Output, res.Text = rec.Output, rec.Content
	}
	return calls, calls * perCall, res, nil
}

func toolRounds(cfg *ask.Config) int {
	if len(cfg.Tools) == 0 {
		return 0
	}
	return cfg.MaxToolCalls
}

func (d *dry) converse(n *spec.NodePlan, cfg *converse.Config, s kit.Scope, prefix string, show bool) (int, int, spec.NodeResult, error) {
	var parts []spec.Participant
	for _, a := range n.Agents {
		parts = append(parts, spec.Participant{ID: a.ID, Name: a.Name})
	}
	undecided := make([]string, 0, len(n.Agents))
	for _, a := range n.Agents {
		undecided = append(undecided, a.ID)
	}
	calls, bound := 0, 0
	res := spec.NodeResult{Outputs: map[string]any{}}
	if len(n.Agents) == 0 {
		return 0, 0, res, nil
	}
	fired := make([]bool, len(cfg.Interject))
	forced := false
	if cfg.Until != nil {
		d.note(fmt.Sprintf("node %q counts all %d turns; until (%s) may end it earlier", n.ID, cfg.MaxTurns, cfg.Until.Source))
	}
	for turn := 1; turn <= cfg.MaxTurns; turn++ {
		// Who speaks depends on the replies; round robin stands in for it:
		// the prompts are alike but for the speaker.
		i := (turn - 1) % len(n.Agents)
		a := n.Agents[i]
		data := &converse.PromptData{PromptBase: d.prompt(n, a, s)}
		data.Turn, data.MaxTurns = turn, cfg.MaxTurns
		data.Participants = append([]spec.Participant(nil), parts...)
		data.Undecided = undecided
		data.Verdict = spec.VerdictView{Set: cfg.VerdictSet, Options: cfg.Options, Reasoning: cfg.Reasoning}
		d.call(n, a, cfg.Model, cfg.System, cfg.Template, data, fmt.Sprintf("%s/t%d/%s", prefix, turn, a.ID), "", show && turn <= len(n.Agents))
		calls++
		bound += 1 + converseRepairs(cfg)
		model := cfg.Model
		if model == nil {
			model = a.Model
		}
		content := fmt.Sprintf("<turn %d of %s in %s%s>", turn, a.ID, n.ID, roundLabel(s))
		rec := d.reply(spec.Message{From: a.ID, Content: content, Turn: turn, Record: "message"}, model, s, n)
		res.Messages = append(res.Messages, rec)
		res.Text = rec.Content
		parts[i].Turns++
		// A time keeper's force_verdict makes every undecided participant
		// answer at once. A participant who has answered is no longer
		// undecided, so the worst case is everyone, once per conversation.
		for k, r := range cfg.Interject {
			if forced || !r.ForceVerdict || r.Every > 0 && turn%r.Every != 0 || r.Every == 0 && fired[k] {
				continue
			}
			fired[k], forced = true, true
			d.note(fmt.Sprintf("node %q: a force_verdict interjection is counted once, with every participant undecided", n.ID))
			for fi, fa := range n.Agents {
				data := &converse.PromptData{PromptBase: d.prompt(n, fa, s)}
				data.Turn, data.MaxTurns = turn+1, cfg.MaxTurns
				data.Participants = append([]spec.Participant(nil), parts...)
				data.Undecided = undecided
				data.Verdict = spec.VerdictView{Set: cfg.VerdictSet, Options: cfg.Options, Reasoning: cfg.Reasoning}
				d.call(n, fa, cfg.Model, cfg.System, cfg.Template, data, fmt.Sprintf("%s/t%d/%s", prefix, turn+1+fi, fa.ID), "", false)
				calls++
				bound += 1 + converseRepairs(cfg)
				fm := cfg.Model
				if fm == nil {
					fm = fa.Model
				}
				content := fmt.Sprintf("<verdict of %s in %s%s>", fa.ID, n.ID, roundLabel(s))
				res.Messages = append(res.Messages, d.reply(spec.Message{From: fa.ID, Content: content, Turn: turn, Record: "message"}, fm, s, n))
				parts[fi].Turns++
			}
			undecided = nil
		}
		for _, w := range cfg.Watch {
			if w.Every > 0 && turn%w.Every == 0 {
				if wn, ok := d.plan.Nodes[w.Node]; ok {
					if err := d.node(wn, s); err != nil {
						return calls, bound, res, err
					}
				}
			}
		}
	}
	out := map[string]any{"turns": cfg.MaxTurns, "ended_by": "max_turns"}
	if s.Goal.ID != "" {
		out["goal"] = s.Goal.ID
	}
	res.Output = out
	return calls, bound, res, nil
}

// converseRepairs is how often a turn may be asked again: plain text
// turns are only rejected by rules.
func converseRepairs(cfg *converse.Config) int {
	if cfg.Format == "text" && len(cfg.Rules) == 0 {
		return 0
	}
	return cfg.Repair
}

func (d *dry) clarify(n *spec.NodePlan, cfg *clarify.Config, s kit.Scope, prefix string, show bool) (int, int, spec.NodeResult, error) {
	calls := 0
	var msgs []spec.Message
	for iter := 1; iter <= cfg.MaxIterations; iter++ {
		for _, a := range n.Agents {
			data := &clarify.PromptData{PromptBase: d.prompt(n, a, s)}
			data.MaxQuestions = cfg.MaxQuestions
			key := fmt.Sprintf("%s/%s", prefix, a.ID)
			if iter > 1 {
				key = fmt.Sprintf("%s/%s/i%d", prefix, a.ID, iter)
			}
			d.call(n, a, cfg.Model, cfg.System, cfg.Template, data, key, "", show && iter == 1)
			calls++
		}
		for _, a := range n.Agents {
			model := cfg.Model
			if model == nil {
				model = a.Model
			}
			content := fmt.Sprintf("<questions of %s in %s and their answers>", a.ID, n.ID)
			msgs = append(msgs, d.reply(spec.Message{From: a.ID, Record: "clarification", Content: content, Output: []any{}}, model, s, n))
		}
	}
	if cfg.MaxIterations > 1 {
		d.note(fmt.Sprintf("node %q: follow-up iterations happen only while agents ask new questions; all %d are counted", n.ID, cfg.MaxIterations))
	}
	return calls, calls * (1 + cfg.Repair), spec.NodeResult{Output: []any{}, Messages: msgs, Outputs: map[string]any{}}, nil
}

// Write prints the report: the first-round prompts (when prompts is set),
// the plan of calls, and the estimate per model.
func (r *Report) Write(w io.Writer, prompts bool) {
	if prompts {
		for _, p := range r.Prompts {
			target := ""
			if p.Target != "" {
				target = " on " + p.Target
			}
			fmt.Fprintf(w, "=== %s (agent %s%s, model %s, %d prompt tokens)\n", p.Key, p.Agent, target, p.Model, p.Tokens)
			if p.Error != "" {
				fmt.Fprintf(w, "(cannot render in advance: %s)\n\n", p.Error)
				continue
			}
			if p.System != "" {
				fmt.Fprintf(w, "--- system\n%s\n", strings.TrimRight(p.System, "\n"))
			}
			fmt.Fprintf(w, "--- user\n%s\n\n", strings.TrimRight(p.User, "\n"))
		}
	}
	fmt.Fprintf(w, "Plan of %s (dry run: no model was called)\n\n", r.Spec)
	t := sweep.Table{Header: []string{"node", "kind", "runs", "calls per run", "calls", "with repairs", "detail"}}
	for _, n := range r.Nodes {
		per := fmt.Sprint(n.MaxPerRun)
		if n.MinPerRun != n.MaxPerRun {
			per = fmt.Sprintf("%d-%d", n.MinPerRun, n.MaxPerRun)
		}
		t.Rows = append(t.Rows, []string{n.ID, n.Kind, fmt.Sprint(n.Runs), per, fmt.Sprint(n.Calls), fmt.Sprint(n.UpperBound), n.Detail})
	}
	fmt.Fprint(w, t.Markdown(0))
	fmt.Fprintf(w, "\nWorst case: %d calls (every loop to its max, every conversation to max_turns); with every repair and tool round: %d.\n\n", r.Calls, r.UpperBound)
	mt := sweep.Table{Header: []string{"model", "name", "tokenizer", "calls", "prompt tokens", "completion tokens", "cost"}}
	total := 0.0
	allPriced := true
	for _, m := range r.Models {
		cost := "no price"
		if m.Priced {
			cost = fmt.Sprintf("%.4f", m.Cost)
			total += m.Cost
		} else {
			allPriced = false
		}
		mt.Rows = append(mt.Rows, []string{m.Model, m.Name, m.Encoding, fmt.Sprint(m.Calls), fmt.Sprint(m.PromptTokens), fmt.Sprint(m.CompletionTokens), cost})
	}
	fmt.Fprintf(w, "Estimate for the worst case (replies assumed to be %d tokens, or max_tokens):\n\n", r.ReplyTokens)
	fmt.Fprint(w, mt.Markdown(0))
	switch {
	case len(r.Models) > 0 && allPriced:
		fmt.Fprintf(w, "\nEstimated cost: %.4f (prices per million tokens from the spec).\n", total)
	case total > 0:
		fmt.Fprintf(w, "\nEstimated cost: at least %.4f (some models declare no price: models.NAME.price {prompt, completion} per million tokens).\n", total)
	default:
		fmt.Fprintf(w, "\nNo cost estimate: declare models.NAME.price {prompt, completion} (per million tokens) in the spec.\n")
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(w, "\nNotes:")
		notes := append([]string(nil), r.Notes...)
		sort.Strings(notes)
		for _, n := range notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// The helpers below are small pure functions that package runtime keeps to
// itself; they are copied rather than exported to keep runtime's API small.

// posString is a spec position as FILE:LINE:COL, as the run's errors give it.
func posString(p *spec.Plan, pos spec.Pos) string {
	return fmt.Sprintf("%s:%d:%d", p.Path, pos.Line, pos.Col)
}
