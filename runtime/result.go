package runtime

import (
	"context"
	"github.com/debate-runner/runner/runtime/answers"
	"github.com/debate-runner/runner/runtime/args"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/report"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/rundir"
	"github.com/debate-runner/runner/spec"
)

// Run statuses.
const (
	StatusCompleted = result.StatusCompleted
	StatusFailed    = result.StatusFailed
	StatusWaiting   = result.StatusWaiting
	StatusBudget    = result.StatusBudget
)

// ErrWaiting stops a run that needs answers from a person; the CLI exits 5.
var ErrWaiting = kit.ErrWaiting

// The records of a run live in package result, which tools that read run
// directories import without the runtime; these names keep the runtime's
// API as it was.
type (
	// Result is result.json.
	Result = result.Result
	// Usage counts calls and tokens.
	Usage = result.Usage
	// UsageReport is usage per agent, per node and in total.
	UsageReport = result.UsageReport
	// WhisperStat counts whispers from one agent to another within a goal.
	WhisperStat = result.WhisperStat
	// ToolCallInfo is a tool call an agent made.
	ToolCallInfo = result.ToolCallInfo
	// Rejection is a reply a conversation rejected.
	Rejection = result.Rejection
	// Manifest is run.json.
	Manifest = result.Manifest
	// ModelInfo records a model's parameters in the manifest.
	ModelInfo = result.ModelInfo
	// PriceInfo is a model's price per million tokens in the manifest.
	PriceInfo = result.PriceInfo
	// Budget is what a run may spend (run.json).
	Budget = result.Budget
	// BudgetLimits are the limits of a budget.
	BudgetLimits = result.BudgetLimits
	// FileRead is a context file a tool read.
	FileRead = result.FileRead
)

type usageBook struct {
	mu     sync.Mutex
	report UsageReport
	// recent are each agent's latest requests (see prefixTokens).
	recent map[string][]recentRequest
}

func newUsageBook() *usageBook {
	return &usageBook{report: UsageReport{
		Total: Usage{Priced: true}, ByAgent: map[string]Usage{}, ByNode: map[string]Usage{}, ByModel: map[string]Usage{},
		ByRound: map[string]Usage{}, ByGoal: map[string]Usage{},
	}}
}

// usageKey says whose a call's usage is.
type usageKey struct {
	node, agent string
	round       int
	goal        string
	// call is the call key; see prefixTokens.
	call string
}

// add counts a call: its reply's usage, and the prompt tokens of its
// request that repeat the agent's previous request.
func (b *usageBook) add(k usageKey, model *spec.ModelPlan, rep kit.Reply, request []kit.ChatMessage) {
	cost, priced, builtin := 0.0, false, ""
	if model != nil && model.Price != nil {
		cost = model.Price.Cost(rep.PromptTokens, rep.CachedTokens, rep.CompletionTokens)
		priced, builtin = true, model.Price.Builtin
	}
	prefix := 0 // set below, under the lock
	one := func(u Usage) Usage {
		if u.Calls == 0 {
			u.Priced = true
		}
		u.Calls++
		u.PromptTokens += rep.PromptTokens
		u.CompletionTokens += rep.CompletionTokens
		u.CachedTokens += rep.CachedTokens
		u.PrefixTokens += prefix
		if u.PromptTokens > 0 {
			u.PrefixShare = math.Round(float64(u.PrefixTokens)/float64(u.PromptTokens)*10000) / 10000
		}
		if rep.UsageEstimated {
			u.EstimatedCalls++
		}
		u.LatencyMS += rep.LatencyMS
		u.Cost += cost
		u.Priced = u.Priced && priced
		if builtin != "" {
			u.BuiltinPrices = builtin
		}
		return u
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	prefix = b.prefixTokens(k.agent, k.call, request, rep.PromptTokens)
	b.report.Total = one(b.report.Total)
	b.report.ByNode[k.node] = one(b.report.ByNode[k.node])
	if k.agent != "" {
		b.report.ByAgent[k.agent] = one(b.report.ByAgent[k.agent])
	}
	round := strconv.Itoa(k.round)
	b.report.ByRound[round] = one(b.report.ByRound[round])
	if k.goal != "" {
		b.report.ByGoal[k.goal] = one(b.report.ByGoal[k.goal])
	}
	if model != nil {
		b.report.ByModel[model.Name] = one(b.report.ByModel[model.Name])
	}
}

func (b *usageBook) snapshot() UsageReport {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.report
	r.ByAgent, r.ByNode, r.ByModel = copyUsage(r.ByAgent), copyUsage(r.ByNode), copyUsage(r.ByModel)
	r.ByRound, r.ByGoal = copyUsage(r.ByRound), copyUsage(r.ByGoal)
	if len(r.ByGoal) == 0 {
		r.ByGoal = nil
	}
	if len(r.ByRound) <= 1 && r.ByRound["0"] == r.Total {
		// A run without loops has no rounds to tell apart.
		r.ByRound = nil
	}
	return r
}

func copyUsage(m map[string]Usage) map[string]Usage {
	out := make(map[string]Usage, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// GoalVerdicts are the verdicts of one goal (see spec.GoalVerdicts).
type GoalVerdicts = result.GoalVerdicts

// AgentVerdict is an agent's final verdict on a goal.
type AgentVerdict = result.AgentVerdict

// goalVerdicts keeps every goal's verdicts: the latest verdict of each agent
// per goal and node, in the order they were first given.
func goalVerdicts(plan *spec.Plan, msgs []spec.Message) []GoalVerdicts {
	type group struct{ goal, node string }
	type key struct {
		group
		agent string
	}
	latest := map[key]spec.Message{}
	withdrawn := map[key]bool{}
	var groups []group
	agentsOf := map[group][]string{}
	for _, m := range msgs {
		g := group{m.Goal, m.Node}
		k := key{g, m.From}
		if m.Withdrawn {
			withdrawn[k] = true
		}
		if m.Verdict == "" {
			continue
		}
		if _, ok := latest[k]; !ok {
			if len(agentsOf[g]) == 0 {
				groups = append(groups, g)
			}
			agentsOf[g] = append(agentsOf[g], m.From)
		}
		latest[k] = m
	}
	var out []GoalVerdicts
	for _, g := range groups {
		gv := GoalVerdicts{Goal: g.goal, Node: g.node, Counts: map[string]int{}, Percent: map[string]float64{}}
		for _, a := range agentsOf[g] {
			k := key{g, a}
			m := latest[k]
			gv.Verdicts = append(gv.Verdicts, AgentVerdict{Agent: a, Verdict: m.Verdict, Reasoning: m.Reasoning, Withdrawn: withdrawn[k]})
			gv.Counts[m.Verdict]++
		}
		for v, n := range gv.Counts {
			gv.Percent[v] = math.Round(float64(n)*10000/float64(len(gv.Verdicts))) / 100
		}
		out = append(out, gv)
	}
	return out
}

func (r *Run) buildResult(status string, outputs map[string]any, runErr error, d time.Duration) *Result {
	r.mu.Lock()
	msgs := r.messagesSoFar()
	warnings := append([]string(nil), r.warnings...)
	rejections := append([]Rejection(nil), r.rejections...)
	r.mu.Unlock()
	if outputs == nil {
		outputs = map[string]any{}
	}
	res := &Result{
		RunID: r.ID, Spec: r.Plan.Name, Status: status, Outputs: outputs, OutputOrder: r.Outputs(),
		Messages: msgs, GoalVerdicts: r.hist.GoalVerdicts(), Whispers: result.WhisperStats(msgs), Usage: r.usage.snapshot(),
		ToolCalls: r.toolCallLog(), Rejections: rejections,
		Warnings: warnings, DurationMS: d.Milliseconds(),
	}
	if res.Messages == nil {
		res.Messages = []spec.Message{}
	}
	if runErr != nil && status == StatusFailed {
		res.Error = runErr.Error()
	}
	return res
}

// answerer serves answers to clarifying questions: from --answers, then
// from the interactive prompt, else the run must wait.
type answerer struct{ run *Run }

func (a answerer) Answer(ctx context.Context, q spec.Question) (string, bool, error) {
	if a.run.dry != nil {
		// A dry run answers every question, so follow-up iterations are
		// counted.
		return "<answer to " + q.ID + ">", true, nil
	}
	v, ok := a.run.opts.Answers[q.ID]
	if !ok && a.run.opts.Ask != nil {
		var err error
		if v, err = a.run.opts.Ask(ctx, q); err != nil {
			return "", false, err
		}
		ok = true
	}
	a.run.mu.Lock()
	if !ok {
		a.run.waiting = append(a.run.waiting, q)
		a.run.mu.Unlock()
		return "", false, nil
	}
	if v == "" {
		v = "NA"
	}
	q.Answer = v
	a.run.answered = append(a.run.answered, q)
	a.run.mu.Unlock()
	// The answer is journaled (and synced) before the run goes on with it:
	// one typed at the terminal exists nowhere else, and a resume must
	// give the same answer without asking again.
	if err := a.run.event("answer", q.ID, answerEvent{Agent: q.Agent, Question: q.Question, Answer: v}); err != nil {
		return "", false, err
	}
	return v, true, nil
}

// writeQuestions writes the open questions to questions.yaml for a person
// to answer and `runner resume --answers` to read, after the questions
// answered so far (a resumed run asks those again).
func (r *Run) writeQuestions() error {
	r.mu.Lock()
	qs := append(append([]spec.Question(nil), r.answered...), r.waiting...)
	r.mu.Unlock()
	if err := redactValue(r.red, &qs); err != nil {
		return err
	}
	return answers.WriteQuestions(filepath.Join(r.Dir, "questions.yaml"), r.Dir, qs)
}

// ReadAnswers reads an answers file (see answers.Read); a problem with it is
// a problem with the --answers flag.
func ReadAnswers(path string) (map[string]string, error) {
	a, err := answers.Read(path)
	if err != nil {
		return nil, &FlagError{Flag: "--answers", Err: args.UnwrapPathError(err)}
	}
	return a, nil
}

func (r *Run) noteToolCall(t ToolCallInfo) {
	r.mu.Lock()
	r.toolCalls = append(r.toolCalls, t)
	r.mu.Unlock()
}

func (r *Run) toolCallLog() []ToolCallInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]ToolCallInfo(nil), r.toolCalls...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// writeReports writes report.md and report.html, the readable records of
// the run.
func (r *Run) writeReports(res *Result) error {
	md := r.Redact(report.Markdown(r.Plan, r.manifest, res))
	if err := rundir.WriteFile(filepath.Join(r.Dir, "report.md"), []byte(md)); err != nil {
		return err
	}
	page, err := report.HTML(r.Plan.Name+" "+res.RunID, md)
	if err != nil {
		return err
	}
	return r.writeText(filepath.Join(r.Dir, "report.html"), page)
}
