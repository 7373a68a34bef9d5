package runtime

import (
	"context"
	"github.com/debate-runner/runner/runtime/answers"
	"math"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"
)

// Run statuses.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusWaiting   = "waiting"
)

// ErrWaiting stops a run that needs answers from a person; the CLI exits 5.
var ErrWaiting = kit.ErrWaiting

// Result is result.json.
type Result struct {
	RunID        string         `json:"run_id"`
	Spec         string         `json:"spec"`
	Status       string         `json:"status"`
	Error        string         `json:"error,omitempty"`
	Outputs      map[string]any `json:"outputs"`
	OutputOrder  []string       `json:"output_order"`
	Messages     []spec.Message `json:"messages"`
	GoalVerdicts []GoalVerdicts `json:"goal_verdicts,omitempty"`
	Whispers     []WhisperStat  `json:"whispers,omitempty"`
	ToolCalls    []ToolCallInfo `json:"tool_calls,omitempty"`
	Usage        UsageReport    `json:"usage"`
	// Expected and Score are set when the run was given an expected value
	// (a dataset line) and the spec has a score expression.
	Expected   any      `json:"expected,omitempty"`
	Score      *float64 `json:"score,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
	DurationMS int64    `json:"duration_ms"`
}

// Usage counts calls and tokens.
type Usage struct {
	Calls            int `json:"calls"`
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// EstimatedCalls counts the calls whose server sent no usage: their
	// tokens (and so the cost) were counted with a tokenizer.
	EstimatedCalls int     `json:"estimated_calls,omitempty"`
	LatencyMS      int64   `json:"latency_ms"`
	Cost           float64 `json:"cost,omitempty"`
	// Priced is false when some call's model has no declared price, so Cost
	// is a lower bound.
	Priced bool `json:"priced"`
}

// UsageReport is usage per agent, per node and in total.
type UsageReport struct {
	Total   Usage            `json:"total"`
	ByAgent map[string]Usage `json:"by_agent"`
	ByNode  map[string]Usage `json:"by_node"`
	ByModel map[string]Usage `json:"by_model"`
}

type usageBook struct {
	mu     sync.Mutex
	report UsageReport
}

func newUsageBook() *usageBook {
	return &usageBook{report: UsageReport{
		Total: Usage{Priced: true}, ByAgent: map[string]Usage{}, ByNode: map[string]Usage{}, ByModel: map[string]Usage{},
	}}
}

func (b *usageBook) add(node, agent string, model *spec.ModelPlan, rep kit.Reply) {
	cost, priced := 0.0, false
	if model != nil && model.Price != nil {
		cost = (float64(rep.PromptTokens)*model.Price.Prompt + float64(rep.CompletionTokens)*model.Price.Completion) / 1e6
		priced = true
	}
	one := func(u Usage) Usage {
		if u.Calls == 0 {
			u.Priced = true
		}
		u.Calls++
		u.PromptTokens += rep.PromptTokens
		u.CompletionTokens += rep.CompletionTokens
		if rep.UsageEstimated {
			u.EstimatedCalls++
		}
		u.LatencyMS += rep.LatencyMS
		u.Cost += cost
		u.Priced = u.Priced && priced
		return u
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.report.Total = one(b.report.Total)
	b.report.ByNode[node] = one(b.report.ByNode[node])
	if agent != "" {
		b.report.ByAgent[agent] = one(b.report.ByAgent[agent])
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
type GoalVerdicts = spec.GoalVerdicts

// AgentVerdict is an agent's final verdict on a goal.
type AgentVerdict = spec.AgentVerdict

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
	r.mu.Unlock()
	if outputs == nil {
		outputs = map[string]any{}
	}
	res := &Result{
		RunID: r.ID, Spec: r.Plan.Name, Status: status, Outputs: outputs, OutputOrder: r.Outputs(),
		Messages: msgs, GoalVerdicts: r.hist.GoalVerdicts(), Whispers: whisperStats(msgs), Usage: r.usage.snapshot(),
		ToolCalls: r.toolCallLog(),
		Warnings:  warnings, DurationMS: d.Milliseconds(),
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
	defer a.run.mu.Unlock()
	if !ok {
		a.run.waiting = append(a.run.waiting, q)
		return "", false, nil
	}
	if v == "" {
		v = "NA"
	}
	q.Answer = v
	a.run.answered = append(a.run.answered, q)
	return v, true, nil
}

// writeQuestions writes the open questions to questions.yaml for a person
// to answer and `runner resume --answers` to read, after the questions
// answered so far (a resumed run asks those again).
func (r *Run) writeQuestions() error {
	r.mu.Lock()
	qs := append(append([]spec.Question(nil), r.answered...), r.waiting...)
	r.mu.Unlock()
	return answers.WriteQuestions(filepath.Join(r.Dir, "questions.yaml"), r.Dir, qs)
}

// ReadAnswers reads an answers file (see answers.Read); a problem with it is
// a problem with the --answers flag.
func ReadAnswers(path string) (map[string]string, error) {
	a, err := answers.Read(path)
	if err != nil {
		return nil, &FlagError{Flag: "--answers", Err: unwrapPathError(err)}
	}
	return a, nil
}

// ToolCallInfo is a tool call an agent made, for the result and report.
type ToolCallInfo struct {
	Key       string `json:"key"`
	Agent     string `json:"agent"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	Result    string `json:"result"`
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
