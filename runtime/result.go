package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/debate-runner/runner/internal/buildinfo"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/runtime/answers"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/journal"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/prefix"
	"github.com/debate-runner/runner/runtime/report"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/rundir"
	"github.com/debate-runner/runner/spec"
)

type usageBook struct {
	mu     sync.Mutex
	report result.UsageReport
	// recent are the run's latest requests, by agent and by model.
	recent prefix.Book
}

func newUsageBook() *usageBook {
	return &usageBook{report: result.UsageReport{
		Total: result.Usage{Priced: true}, ByAgent: map[string]result.Usage{}, ByNode: map[string]result.Usage{}, ByModel: map[string]result.Usage{},
		ByRound: map[string]result.Usage{}, ByGoal: map[string]result.Usage{},
	}}
}

// usageKey says whose a call's usage is.
type usageKey struct {
	node, agent string
	round       int
	goal        string
	// call is the call key; see prefix.Book.Tokens.
	call string
}

// add counts a call: its reply's usage, and the prompt tokens of its
// request that repeat the agent's previous request.
func (b *usageBook) add(k usageKey, model *spec.ModelPlan, rep kit.Reply, request []kit.ChatMessage, marks []int) {
	cost, priced, builtin := 0.0, false, ""
	if model != nil && model.Price != nil {
		cost = model.Price.CostWritten(rep.PromptTokens, rep.CachedTokens, rep.CacheWriteTokens, rep.CompletionTokens) * rep.PriceFactor()
		priced, builtin = true, model.Price.Builtin
	}
	repeated, cacheAgent, cacheModel := 0, 0, 0 // set below, under the lock
	var rules result.CacheRules
	one := func(u result.Usage) result.Usage {
		if u.Calls == 0 {
			u.Priced = true
		}
		u.Calls++
		u.PromptTokens += rep.PromptTokens
		u.CompletionTokens += rep.CompletionTokens
		u.CachedTokens += rep.CachedTokens
		u.CacheWriteTokens += rep.CacheWriteTokens
		u.PrefixTokens += repeated
		u.CacheableTokens += cacheAgent
		u.RunCacheableTokens += cacheModel
		u.CacheableByRule.Add(rules, u.PromptTokens)
		if u.PromptTokens > 0 {
			u.PrefixShare = math.Round(float64(u.PrefixTokens)/float64(u.PromptTokens)*10000) / 10000
			u.CacheableShare = math.Round(float64(u.CacheableTokens)/float64(u.PromptTokens)*10000) / 10000
			u.RunCacheableShare = math.Round(float64(u.RunCacheableTokens)/float64(u.PromptTokens)*10000) / 10000
		}
		if rep.UsageEstimated {
			u.EstimatedCalls++
		}
		if rep.Batch != "" {
			u.BatchCalls++
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
	repeated = b.recent.Tokens(k.agent, k.call, request, rep.PromptTokens)
	if model != nil {
		id := model.Model
		if model.Endpoint != nil {
			id = model.Endpoint.Name + "|" + id
		}
		cacheAgent, cacheModel, rules = b.cacheable(k.agent, id, k.call, request, marks, rep.PromptTokens)
	}
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

func (b *usageBook) snapshot() result.UsageReport {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.report
	r.Total = roundCost(r.Total)
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

func copyUsage(m map[string]result.Usage) map[string]result.Usage {
	out := make(map[string]result.Usage, len(m))
	for k, v := range m {
		out[k] = roundCost(v)
	}
	return out
}

// roundCost rounds a cost to a ten-billionth of a dollar: sums of the same
// calls' costs taken in another order (a resumed run adds the journaled
// calls first) differ in their last bits, and a record must not.
func roundCost(u result.Usage) result.Usage {
	u.Cost = math.Round(u.Cost*1e10) / 1e10
	return u
}

func (r *Run) buildResult(status string, outputs map[string]any, runErr error, d time.Duration) *result.Result {
	r.mu.Lock()
	msgs := r.messagesSoFar()
	warnings := append([]string(nil), r.warnings...)
	drifted := append([]string(nil), r.drifted...)
	rejections := append([]result.Rejection(nil), r.rejections...)
	absent := append([]result.Absence(nil), r.absences...)
	r.mu.Unlock()
	if outputs == nil {
		outputs = map[string]any{}
	}
	res := &result.Result{
		RunID: r.ID, Spec: r.Plan.Name, Status: status, Outputs: outputs, OutputOrder: r.Outputs(),
		Messages: msgs, GoalVerdicts: r.hist.GoalVerdicts(), Whispers: result.WhisperStats(msgs), Dynamics: result.Dynamics(msgs), Usage: r.usage.snapshot(),
		ToolCalls: r.toolCallLog(), Rejections: rejections, Absent: absent,
		Warnings: warnings, DurationMS: d.Milliseconds(), ChangedPrompts: drifted,
		// The runner that writes this file (of a resumed run, the one that
		// finished it) and the digest of the spec of the run's last attempt.
		RunnerVersion: r.opts.Version, RunnerCommit: buildinfo.Read().CommitLabel(), SpecDigest: r.Plan.Digest,
	}
	if res.Messages == nil {
		res.Messages = []value.Message{}
	}
	if runErr != nil && status == result.StatusFailed {
		res.Error = runErr.Error()
	}
	return res
}

// answerer serves answers to clarifying questions: from --answers, then
// from the interactive prompt, else the run must wait.
type answerer struct{ run *Run }

func (a answerer) Answer(ctx context.Context, q value.Question) (string, bool, error) {
	if a.run.dry != nil {
		// A dry run answers every question, so follow-up iterations are
		// counted.
		return "<answer to " + q.ID + ">", true, nil
	}
	v, ok := a.run.opts.Answers[q.ID]
	if !ok && a.run.opts.Ask != nil {
		var err error
		// Asked at a terminal, the question is posted for the view too.
		if v, err = a.run.opts.Ask(a.run.shared(ctx, q, nil), q); err != nil {
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
	if err := a.run.event(event.Answer, q.ID, answerEvent{Agent: q.Agent, Question: q.Question, Answer: v}); err != nil {
		return "", false, err
	}
	return v, true, nil
}

// writeQuestions writes the open questions to questions.yaml for a person
// to answer and `runner resume --answers` to read, after the questions
// answered so far (a resumed run asks those again).
func (r *Run) writeQuestions() error {
	r.mu.Lock()
	qs := append(append([]value.Question(nil), r.answered...), r.waiting...)
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
		return nil, &args.FlagError{Flag: "--answers", Err: args.UnwrapPathError(err)}
	}
	return a, nil
}

func (r *Run) noteToolCall(t result.ToolCallInfo) {
	r.mu.Lock()
	r.toolCalls = append(r.toolCalls, t)
	r.mu.Unlock()
}

func (r *Run) toolCallLog() []result.ToolCallInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]result.ToolCallInfo(nil), r.toolCalls...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// writeRecords writes the records of a finished run: result.json, the
// reports and run.json with the run's status. result.json is streamed to
// disk a message at a time while the reports are, a piece at a time (see
// result.Result.WriteJSON and report.Write): neither is ever whole in
// memory. The four files are synced together, then renamed into place in
// that order (run.json last, so a reader that sees the run ended finds its
// result), with one sync of the folder.
func (r *Run) writeRecords(res *result.Result, status string) error {
	// The report escapes what it shows (`<` becomes `\<`, and `&lt;` in the
	// page), after which a secret no longer matches: what it is made from
	// is redacted first, and the text again after.
	m := r.manifest
	if err := redactValue(r.red, &m); err != nil {
		return err
	}
	r.manifest.Status = status
	manifest, err := r.jsonFile(r.manifest)
	if err != nil {
		return err
	}
	red := r.redactor()
	var files rundir.Batch
	files.ReplaceWith([]string{filepath.Join(r.Dir, "result.json")}, func(w []io.Writer) error {
		return res.WriteJSON(w[0], red.RedactJSON)
	})
	files.ReplaceWith([]string{filepath.Join(r.Dir, "report.md"), filepath.Join(r.Dir, "report.html")}, func(w []io.Writer) error {
		return report.Write(w[0], w[1], r.Plan.Name+" "+res.RunID, r.Plan, m, res, r.Redact)
	})
	files.Replace(filepath.Join(r.Dir, "run.json"), manifest)
	return files.Sync()
}

// redactResult is redactValue for a run's result, without its whole JSON
// in memory at once: the result less its messages, then each message, is
// checked for a secret (the run's redaction changes a JSON text only
// inside its strings and numbers, so the whole changes when a piece does),
// and only a result holding one is redacted whole.
func redactResult(red *journal.Redactor, res *result.Result) error {
	if !red.Active() {
		return nil
	}
	head := *res
	head.Messages = nil
	data, err := json.Marshal(head)
	if err != nil {
		return err
	}
	dirty := !bytes.Equal(red.RedactJSON(data), data)
	for i := 0; !dirty && i < len(res.Messages); i++ {
		if data, err = result.MessageJSON(res.Messages[i]); err != nil {
			return err
		}
		dirty = !bytes.Equal(red.RedactJSON(data), data)
	}
	if !dirty {
		return nil
	}
	return redactValue(red, res)
}

// cacheable is the usage book's cacheable tokens of a request (see
// prefix.Book.Cacheable). Call with b.mu held.
func (b *usageBook) cacheable(agent, model, key string, msgs []kit.ChatMessage, marks []int, promptTokens int) (byAgent, byModel int, rules result.CacheRules) {
	return b.recent.Cacheable(agent, model, key, msgs, marks, promptTokens)
}

// The names the usage book's tests know the prompt-prefix accounting by.
const prefixExact, prefixBlock, modelWindow = prefix.Exact, prefix.Block, prefix.ModelWindow

func callGroup(key string) string { return prefix.Group(key) }
