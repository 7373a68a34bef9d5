// Package dryrun works out what a run of a spec would do without calling any
// model, by running it: the engine's own flow walker and node kinds, with
// stand-in replies and the worst case taken where replies would decide
// (runtime.NewDry). It reports the calls per node in the worst case, the
// prompts of every call, and an estimate of tokens and cost per model.
package dryrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/llm/tokens"
	"github.com/debate-runner/runner/runtime/sweep"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
)

// DefaultReplyTokens is the reply size a dry run assumes for models that
// set no max_tokens.
const DefaultReplyTokens = 500

// Options configure Run.
type Options struct {
	// Given are the run's values, prepared as for a run (launch.Prepare);
	// Given.Budget are --budget flags over the spec's budget: the report
	// warns when the worst case passes it.
	launch.Given
	// Placeholders stand a placeholder in for each required input not
	// given (noted in the report), instead of failing.
	Placeholders bool
	// ReplyTokens is the assumed size of a reply from a model without
	// max_tokens (default DefaultReplyTokens); with max_tokens, that is
	// assumed: the worst case.
	ReplyTokens int
	// AllPrompts keeps every call's prompt in the report, not only those
	// of each node's first run.
	AllPrompts bool
	// CallBudget and RenderBudget bound the simulation (see runtime.Dry);
	// zero picks the defaults.
	CallBudget   int
	RenderBudget int64
	// ActualSizes measures histories by the stand-ins as they are, not by
	// the replies they stand for: the dry run is then exactly a real run
	// whose endpoint answered with the stand-ins (tests compare the two).
	// By default a history summary starts when replies of the assumed size
	// would have made the history long enough.
	ActualSizes bool
	// Answered, when set, is given every call the dry run answered.
	Answered func([]calls.Answered)
	// StandInsByPrompt gives identical requests identical stand-ins (see
	// calls.Placeholders.ByPrompt).
	StandInsByPrompt bool
}

// Report is what a run would do: its calls, first prompts and an estimate
// of tokens and cost, worked out without calling any model.
type Report struct {
	Spec string `json:"spec"`
	// Inputs and Vars are the values the run was planned with, prepared as
	// a run prepares them (launch.Prepare).
	Inputs map[string]any `json:"inputs"`
	Vars   map[string]any `json:"vars"`
	// Nodes in the order the flow first runs them.
	Nodes []*Node `json:"nodes"`
	// Calls is the worst case from the loop bounds and max_turns: every loop
	// runs to its max, no until ends it early, both branches of an if whose
	// condition depends on replies are counted.
	Calls int `json:"calls"`
	// UpperBound adds every repair and tool round the spec allows.
	UpperBound int `json:"upper_bound"`
	// HumanTurns are the turns, in the worst case, of agents a person
	// plays (human: true): no model is called for them, so they are in
	// neither Calls nor the estimate of tokens and cost.
	HumanTurns int `json:"human_turns,omitempty"`
	// Extrapolated are calls of Calls counted without being simulated: the
	// iterations of loops and foreach steps, and the turns of a
	// conversation, left when the simulation's budget ran out.
	Extrapolated int `json:"extrapolated,omitempty"`
	// Prompts are the prompts of each node's first run (or of every call).
	Prompts []Prompt `json:"prompts"`
	// Models estimate tokens and cost per model over the worst case.
	Models      []*Model `json:"models"`
	ReplyTokens int      `json:"reply_tokens"`
	Notes       []string `json:"notes,omitempty"`
	// OverBudget says which limits of the run's budget the worst case
	// passes: a real run may stop there (status budget_exceeded).
	OverBudget []string `json:"over_budget,omitempty"`
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
	// HumanTurns are its turns a person takes (not in Calls).
	HumanTurns int `json:"human_turns,omitempty"`
}

// Prompt is one rendered prompt.
type Prompt struct {
	Key    string `json:"key"`
	Node   string `json:"node"`
	Agent  string `json:"agent"`
	Target string `json:"target,omitempty"`
	Model  string `json:"model"`
	// System and User are the first system message and the last user
	// message; Messages the whole request.
	System   string            `json:"system,omitempty"`
	User     string            `json:"user"`
	Messages []kit.ChatMessage `json:"messages,omitempty"`
	Tokens   int               `json:"tokens"`
	Error    string            `json:"error,omitempty"`
	// Human says a person takes the turn: the prompt is what the person
	// is shown, and no model is called.
	Human bool `json:"human,omitempty"`
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
	// BuiltinPrice is the date of the built-in list price Cost is at, when
	// the spec gives the model no price.
	BuiltinPrice string `json:"builtin_price,omitempty"`
}

// Run works out what running plan would do, without any model call, by
// running it: the real flow walker and node kinds, with every model call
// answered by a stand-in of the shape the node expects (calls.StandIn) and
// the worst case taken where the replies would decide (see runtime.Dry).
// The report has the calls per node and their worst case, the prompts of
// every node's first run (every call's with AllPrompts), and prompt and
// completion tokens and cost per model.
func Run(plan *spec.Plan, opts Options) (*Report, error) {
	stage := &calls.Placeholders{ReplyTokens: opts.ReplyTokens, ByPrompt: opts.StandInsByPrompt}
	if stage.ReplyTokens <= 0 {
		stage.ReplyTokens = DefaultReplyTokens
	}
	rep := &Report{Spec: plan.Name, ReplyTokens: stage.ReplyTokens}
	var mu sync.Mutex
	notes := map[string]bool{}
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		if !notes[s] {
			notes[s] = true
			rep.Notes = append(rep.Notes, s)
		}
	}
	nodes := map[string]*Node{}
	// runOf is the run of a node each call belongs to (its key prefix), in
	// the order the nodes ran; first marks a node's first run.
	runOf := map[string]*nodeRun{}
	var runs []*nodeRun
	observer := func(n runtime.Notice) {
		if n.Event == nil {
			return
		}
		switch n.Event.Type {
		case event.NodeStarted:
			var ev struct {
				Node string `json:"node"`
				Kind string `json:"kind"`
			}
			_ = json.Unmarshal(n.Event.Data, &ev)
			mu.Lock()
			dn := nodes[ev.Node]
			if dn == nil {
				dn = &Node{ID: ev.Node, Kind: ev.Kind, MinPerRun: -1, Detail: detail(plan.Nodes[ev.Node])}
				nodes[ev.Node] = dn
				rep.Nodes = append(rep.Nodes, dn)
			}
			dn.Runs++
			nr := &nodeRun{prefix: n.Event.Key, node: dn, first: dn.Runs == 1}
			runOf[n.Event.Key] = nr
			runs = append(runs, nr)
			mu.Unlock()
		}
	}
	given, placeholders := opts.Given, []string(nil)
	if opts.Placeholders {
		given, placeholders = withPlaceholders(plan, given)
	}
	size := stage.Size
	if opts.ActualSizes {
		size = nil
	}
	r, err := runtime.NewDry(plan, runtime.Options{
		Launch:   launch.Launch{Given: given},
		Settings: runtime.Settings{Observer: observer},
	}, runtime.Dry{Stage: stage, Size: size, CallBudget: opts.CallBudget, RenderBudget: opts.RenderBudget, Note: note})
	if err != nil {
		return nil, err
	}
	plan = r.Plan // with the run's replicas and models
	if _, err := r.Execute(context.Background()); err != nil {
		return nil, err
	}
	rep.Inputs, rep.Vars = r.Values()
	if j := plan.Judge; j != nil {
		// The judges grade the run once it is done: a row of their own.
		dn := &Node{ID: runtime.JudgeNode, Kind: "judge", MinPerRun: -1, Runs: 1,
			Detail: fmt.Sprintf("%d judge(s) grade the run: %s", len(j.Names), strings.Join(j.Names, ", "))}
		rep.Nodes = append(rep.Nodes, dn)
		nr := &nodeRun{prefix: runtime.JudgeNode + "/-", node: dn, first: true}
		runOf[nr.prefix] = nr
		runs = append(runs, nr)
	}
	models := map[string]*Model{}
	answered := stage.Answered()
	if opts.Answered != nil {
		opts.Answered(answered)
	}
	// Calls of one node run may be answered in any order (an ask node's run
	// concurrently): show them in the order of the runs, then of the
	// agents as the spec declares them.
	order := map[string]int{}
	for i, a := range plan.Agents {
		order[a.ID] = i
	}
	seq := map[*nodeRun]int{}
	for i, nr := range runs {
		seq[nr] = i
	}
	sort.SliceStable(answered, func(i, j int) bool {
		ri, rj := runFor(runOf, answered[i].Key), runFor(runOf, answered[j].Key)
		if ri != rj && ri != nil && rj != nil {
			return seq[ri] < seq[rj]
		}
		return order[answered[i].Agent] < order[answered[j].Agent]
	})
	shown := map[string]bool{}
	for _, a := range answered {
		nr := runFor(runOf, a.Key)
		if nr == nil {
			continue
		}
		if a.Human {
			// A person's turn: shown as the model's first-round prompts
			// are, never counted as a call nor priced.
			nr.node.HumanTurns++
			rep.HumanTurns++
			who := a.Node + "\x00" + a.Agent + "\x00" + a.Target
			if opts.AllPrompts || nr.first && !shown[who] {
				shown[who] = true
				rep.Prompts = append(rep.Prompts, promptOf(a))
			}
			continue
		}
		nr.calls++
		nr.bound += a.Bound
		// By default a node's first run shows each agent's first call (to
		// each target): the prompts of its first round.
		who := a.Node + "\x00" + a.Agent + "\x00" + a.Target
		if opts.AllPrompts || nr.first && !shown[who] {
			shown[who] = true
			rep.Prompts = append(rep.Prompts, promptOf(a))
		}
		m := models[a.Model]
		if m == nil {
			mp := plan.Models[a.Model]
			m = &Model{Name: a.Model, Model: a.ModelID, Encoding: tokens.EncodingFor(a.ModelID), Priced: mp != nil && mp.Price != nil}
			if m.Priced {
				m.BuiltinPrice = mp.Price.Builtin
			}
			models[a.Model] = m
		}
		m.Calls++
		m.PromptTokens += a.PromptTokens
		m.CompletionTokens += a.CompletionTokens
		if mp := plan.Models[a.Model]; mp != nil && mp.Price != nil {
			m.Cost = (float64(m.PromptTokens)*mp.Price.Prompt + float64(m.CompletionTokens)*mp.Price.Completion) / 1e6
		}
	}
	for _, nr := range runs {
		dn := nr.node
		dn.Calls += nr.calls
		dn.UpperBound += nr.bound
		if dn.MinPerRun < 0 || nr.calls < dn.MinPerRun {
			dn.MinPerRun = nr.calls
		}
		dn.MaxPerRun = max(dn.MaxPerRun, nr.calls)
	}
	for _, n := range rep.Nodes {
		rep.Calls += n.Calls
		rep.UpperBound += n.UpperBound
	}
	if x := r.Extrapolated(); x > 0 {
		// The calls not simulated are like those simulated, so their
		// upper bound (with repairs) is in the same proportion.
		bound := x
		if rep.Calls > 0 {
			bound = int(math.Round(float64(x) * float64(rep.UpperBound) / float64(rep.Calls)))
		}
		rep.Extrapolated = x
		rep.Calls += x
		rep.UpperBound += bound
	}
	for _, name := range slices.Sorted(maps.Keys(models)) {
		rep.Models = append(rep.Models, models[name])
	}
	budget, err := args.Budget(plan, opts.Budget)
	if err != nil {
		return nil, err
	}
	rep.OverBudget = overBudget(rep, budget)
	if stop := r.StoppedBy(); stop != "" {
		rep.OverBudget = append(rep.OverBudget, "the run: "+stop)
	}
	if len(placeholders) > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("input(s) %s not given: a placeholder stands in, so prompt sizes leave them out", strings.Join(placeholders, ", ")))
	}
	return rep, nil
}

// withPlaceholders gives each required input that g lacks a placeholder
// value, and names them.
func withPlaceholders(plan *spec.Plan, g launch.Given) (launch.Given, []string) {
	given := map[string]bool{}
	for _, f := range g.Inputs {
		name, _, _ := strings.Cut(f, "=")
		given[name] = true
	}
	for name := range g.InputValues {
		given[name] = true
	}
	values := maps.Clone(g.InputValues)
	var names []string
	for _, in := range plan.Inputs {
		if in.Required && !given[in.Name] {
			if values == nil {
				values = map[string]any{}
			}
			values[in.Name] = "<input " + in.Name + ">"
			names = append(names, in.Name)
		}
	}
	g.InputValues = values
	return g, names
}

// overBudget lists the limits the worst case passes.
func overBudget(rep *Report, b *spec.BudgetPlan) []string {
	if b == nil {
		return nil
	}
	var tokens int64
	cost := 0.0
	for _, m := range rep.Models {
		tokens += int64(m.PromptTokens + m.CompletionTokens)
		cost += m.Cost
	}
	var out []string
	check := func(scope string, l syntax.BudgetLimits, calls int, tokens int64, cost float64) {
		if l.MaxCalls != nil && calls > *l.MaxCalls {
			out = append(out, fmt.Sprintf("%s: the worst case makes %d calls, more than max_calls %d", scope, calls, *l.MaxCalls))
		}
		if l.MaxTokens != nil && tokens > *l.MaxTokens {
			out = append(out, fmt.Sprintf("%s: the worst case uses about %d tokens, more than max_tokens %d", scope, tokens, *l.MaxTokens))
		}
		if l.MaxCost != nil && cost > *l.MaxCost {
			out = append(out, fmt.Sprintf("%s: the worst case costs about %.4f, more than max_cost %g", scope, cost, *l.MaxCost))
		}
	}
	check("the run", b.BudgetLimits, rep.Calls, tokens, cost)
	for _, n := range rep.Nodes {
		if l, ok := b.Nodes[n.ID]; ok {
			// Tokens and cost are estimated per model, not per node: only
			// the node's calls are checked.
			check("node "+n.ID, syntax.BudgetLimits{MaxCalls: l.MaxCalls}, n.Calls, 0, 0)
		}
	}
	return out
}

// nodeRun is one run of a node in a dry run.
type nodeRun struct {
	prefix       string
	node         *Node
	first        bool
	calls, bound int
}

// runFor finds the node run a call key belongs to: the longest run prefix
// that starts the key (a watcher's calls carry its own prefix).
func runFor(runOf map[string]*nodeRun, key string) *nodeRun {
	for k := key; k != ""; {
		if nr, ok := runOf[k]; ok {
			return nr
		}
		i := strings.LastIndexByte(k, '/')
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return nil
}

// promptOf is a call's prompt as the report shows it.
func promptOf(a calls.Answered) Prompt {
	p := Prompt{Key: a.Key, Node: a.Node, Agent: a.Agent, Target: a.Target, Model: a.Model, Tokens: a.PromptTokens, Messages: a.Messages, Human: a.Human}
	if a.Human {
		p.Model = ""
	}
	for _, m := range a.Messages {
		switch m.Role {
		case "system":
			if p.System == "" {
				p.System = m.Content
			}
		case "user":
			p.User = m.Content
		}
	}
	if strings.Contains(p.User, "\x00estimated prompt") {
		p.Error = "estimated: not rendered in full (the dry run's render budget was spent)"
	}
	return p
}

// detail describes what one run of a node does, for the plan's table: the
// kind's own description when it gives one (kit.Describer).
func detail(n *spec.NodePlan) string {
	if n == nil {
		return ""
	}
	if d, ok := n.Impl.(kit.Describer); ok {
		return d.Detail(n)
	}
	if n.Description != "" {
		return n.Description
	}
	return n.Kind
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
			if p.Human {
				fmt.Fprintf(w, "=== %s (agent %s%s, played by a person: what the person is shown)\n", p.Key, p.Agent, target)
			} else {
				fmt.Fprintf(w, "=== %s (agent %s%s, model %s, %d prompt tokens)\n", p.Key, p.Agent, target, p.Model, p.Tokens)
			}
			if p.Error != "" {
				fmt.Fprintf(w, "(cannot render in advance: %s)\n\n", p.Error)
				continue
			}
			if chatTurns(p.Messages) {
				// Threads, history turns, few-shot pairs: every message, in
				// the order it is sent.
				for _, m := range p.Messages {
					fmt.Fprintf(w, "--- %s\n%s\n", m.Role, strings.TrimRight(m.Content, "\n"))
				}
				fmt.Fprintln(w)
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
	fmt.Fprintf(w, "\nWorst case: %d calls (every loop to its max, every conversation to max_turns); with every repair and tool round: %d.\n", r.Calls, r.UpperBound)
	if r.HumanTurns > 0 {
		fmt.Fprintf(w, "Turns a person takes (agents with human: true): %d, besides the calls; each waits for the person's message (status waiting, exit 5) and costs nothing.\n", r.HumanTurns)
	}
	fmt.Fprintln(w)
	mt := sweep.Table{Header: []string{"model", "name", "tokenizer", "calls", "prompt tokens", "completion tokens", "cost"}}
	total := 0.0
	allPriced := true
	builtin := ""
	for _, m := range r.Models {
		cost := "no price"
		if m.Priced {
			cost = fmt.Sprintf("%.4f", m.Cost)
			if m.BuiltinPrice != "" {
				cost += "*"
				builtin = m.BuiltinPrice
			}
			total += m.Cost
		} else {
			allPriced = false
		}
		mt.Rows = append(mt.Rows, []string{m.Model, m.Name, m.Encoding, fmt.Sprint(m.Calls), fmt.Sprint(m.PromptTokens), fmt.Sprint(m.CompletionTokens), cost})
	}
	fmt.Fprintf(w, "Estimate for the worst case (replies assumed to be %d tokens, or max_tokens):\n\n", r.ReplyTokens)
	fmt.Fprint(w, mt.Markdown(0))
	switch {
	case len(r.Models) > 0 && allPriced && builtin == "":
		fmt.Fprintf(w, "\nEstimated cost: %.4f (prices per million tokens from the spec).\n", total)
	case len(r.Models) > 0 && allPriced:
		fmt.Fprintf(w, "\nEstimated cost: %.4f (prices per million tokens from the spec, or * built-in list prices of %s in US dollars; declare models.NAME.price to override).\n", total, builtin)
	case total > 0:
		fmt.Fprintf(w, "\nEstimated cost: at least %.4f (some models declare no price: models.NAME.price {prompt, completion} per million tokens).\n", total)
	default:
		fmt.Fprintf(w, "\nNo cost estimate: declare models.NAME.price {prompt, completion} (per million tokens) in the spec.\n")
	}
	if len(r.OverBudget) > 0 {
		fmt.Fprintln(w, "\nBudget: a real run may stop before its end (status budget_exceeded, exit 6):")
		for _, o := range r.OverBudget {
			fmt.Fprintf(w, "- %s\n", o)
		}
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

// chatTurns reports whether a request is more than a system prompt and one
// user message.
func chatTurns(msgs []kit.ChatMessage) bool {
	users := 0
	for _, m := range msgs {
		switch m.Role {
		case "system":
		case "user":
			users++
		default:
			return true
		}
	}
	return users > 1
}
