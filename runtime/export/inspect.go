// Package export writes a run's or a sweep's records in formats other
// tools read: Inspect's eval log (runner export --format inspect).
package export

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/sweep"
)

// This file maps runner's records onto the eval log of Inspect (the
// format its viewer, `inspect view`, opens; version 2): one eval per run
// or sweep, the spec as the task, each run a sample. Every field the
// format declares is written, null or empty where runner has nothing for
// it, so the log reads under the format's strict schema.

// InspectLog is an Inspect eval log.
type InspectLog struct {
	Version int             `json:"version"`
	Status  string          `json:"status"`
	Eval    inspectSpec     `json:"eval"`
	Plan    inspectPlan     `json:"plan"`
	Results *inspectResult  `json:"results"`
	Stats   inspectStats    `json:"stats"`
	Error   any             `json:"error"`
	Samples []InspectSample `json:"samples"`
	// Reductions are none: each run is its own sample.
	Reductions any `json:"reductions"`
}

type inspectSpec struct {
	EvalSetID         any               `json:"eval_set_id"`
	EvalID            string            `json:"eval_id"`
	RunID             string            `json:"run_id"`
	Created           string            `json:"created"`
	Task              string            `json:"task"`
	TaskID            string            `json:"task_id"`
	TaskVersion       int               `json:"task_version"`
	TaskFile          any               `json:"task_file"`
	TaskDisplayName   any               `json:"task_display_name"`
	TaskRegistryName  any               `json:"task_registry_name"`
	TaskAttribs       map[string]any    `json:"task_attribs"`
	TaskArgs          map[string]any    `json:"task_args"`
	TaskArgsPassed    map[string]any    `json:"task_args_passed"`
	Solver            any               `json:"solver"`
	SolverArgs        any               `json:"solver_args"`
	Tags              any               `json:"tags"`
	Dataset           inspectDataset    `json:"dataset"`
	Sandbox           any               `json:"sandbox"`
	Model             string            `json:"model"`
	ModelGenerateConf generateConfig    `json:"model_generate_config"`
	ModelBaseURL      any               `json:"model_base_url"`
	ModelArgs         map[string]any    `json:"model_args"`
	ModelRoles        any               `json:"model_roles"`
	Config            evalConfig        `json:"config"`
	Revision          any               `json:"revision"`
	Packages          map[string]string `json:"packages"`
	Metadata          map[string]any    `json:"metadata"`
	Scorers           any               `json:"scorers"`
	Metrics           any               `json:"metrics"`
}

type inspectDataset struct {
	Name      any   `json:"name"`
	Location  any   `json:"location"`
	Samples   int   `json:"samples"`
	SampleIDs []int `json:"sample_ids"`
	Shuffled  bool  `json:"shuffled"`
}

// generateConfig is the model's generation settings; runner keeps them
// per model in run.json, so the log's are all unset.
type generateConfig struct {
	MaxRetries        any `json:"max_retries"`
	Timeout           any `json:"timeout"`
	MaxConnections    any `json:"max_connections"`
	SystemMessage     any `json:"system_message"`
	MaxTokens         any `json:"max_tokens"`
	TopP              any `json:"top_p"`
	Temperature       any `json:"temperature"`
	StopSeqs          any `json:"stop_seqs"`
	BestOf            any `json:"best_of"`
	FrequencyPenalty  any `json:"frequency_penalty"`
	PresencePenalty   any `json:"presence_penalty"`
	LogitBias         any `json:"logit_bias"`
	Seed              any `json:"seed"`
	TopK              any `json:"top_k"`
	NumChoices        any `json:"num_choices"`
	Logprobs          any `json:"logprobs"`
	TopLogprobs       any `json:"top_logprobs"`
	ParallelToolCalls any `json:"parallel_tool_calls"`
	InternalTools     any `json:"internal_tools"`
	MaxToolOutput     any `json:"max_tool_output"`
	CachePrompt       any `json:"cache_prompt"`
	ReasoningEffort   any `json:"reasoning_effort"`
	ReasoningTokens   any `json:"reasoning_tokens"`
	ReasoningSummary  any `json:"reasoning_summary"`
	ReasoningHistory  any `json:"reasoning_history"`
	ResponseSchema    any `json:"response_schema"`
	ExtraBody         any `json:"extra_body"`
	Batch             any `json:"batch"`
}

// evalConfig is Inspect's run configuration: nothing of it applies.
type evalConfig struct {
	Limit          any `json:"limit"`
	SampleID       any `json:"sample_id"`
	SampleShuffle  any `json:"sample_shuffle"`
	Epochs         any `json:"epochs"`
	EpochsReducer  any `json:"epochs_reducer"`
	Approval       any `json:"approval"`
	FailOnError    any `json:"fail_on_error"`
	ContinueOnFail any `json:"continue_on_fail"`
	RetryOnError   any `json:"retry_on_error"`
	MessageLimit   any `json:"message_limit"`
	TokenLimit     any `json:"token_limit"`
	TimeLimit      any `json:"time_limit"`
	WorkingLimit   any `json:"working_limit"`
	MaxSamples     any `json:"max_samples"`
	MaxTasks       any `json:"max_tasks"`
	MaxSubprocs    any `json:"max_subprocesses"`
	MaxSandboxes   any `json:"max_sandboxes"`
	SandboxCleanup any `json:"sandbox_cleanup"`
	LogSamples     any `json:"log_samples"`
	LogRealtime    any `json:"log_realtime"`
	LogImages      any `json:"log_images"`
	LogBuffer      any `json:"log_buffer"`
	LogShared      any `json:"log_shared"`
	ScoreDisplay   any `json:"score_display"`
}

type inspectPlan struct {
	Name   string         `json:"name"`
	Steps  []planStep     `json:"steps"`
	Finish any            `json:"finish"`
	Config generateConfig `json:"config"`
}

type planStep struct {
	Solver string         `json:"solver"`
	Params map[string]any `json:"params"`
}

type inspectResult struct {
	TotalSamples     int            `json:"total_samples"`
	CompletedSamples int            `json:"completed_samples"`
	Scores           []inspectScore `json:"scores"`
	Metadata         map[string]any `json:"metadata"`
}

type inspectScore struct {
	Name            string                   `json:"name"`
	Scorer          string                   `json:"scorer"`
	Reducer         any                      `json:"reducer"`
	ScoredSamples   int                      `json:"scored_samples"`
	UnscoredSamples int                      `json:"unscored_samples"`
	Params          map[string]any           `json:"params"`
	Metrics         map[string]inspectMetric `json:"metrics"`
	Metadata        any                      `json:"metadata"`
}

type inspectMetric struct {
	Name     string         `json:"name"`
	Value    float64        `json:"value"`
	Params   map[string]any `json:"params"`
	Metadata any            `json:"metadata"`
}

type inspectStats struct {
	StartedAt   string                `json:"started_at"`
	CompletedAt string                `json:"completed_at"`
	ModelUsage  map[string]modelUsage `json:"model_usage"`
}

type modelUsage struct {
	InputTokens     int      `json:"input_tokens"`
	OutputTokens    int      `json:"output_tokens"`
	TotalTokens     int      `json:"total_tokens"`
	InputCacheWrite *int     `json:"input_tokens_cache_write"`
	InputCacheRead  *int     `json:"input_tokens_cache_read"`
	ReasoningTokens any      `json:"reasoning_tokens"`
	TotalCost       *float64 `json:"total_cost,omitempty"`
}

// InspectSample is one run.
type InspectSample struct {
	ID           int                   `json:"id"`
	Epoch        int                   `json:"epoch"`
	Input        string                `json:"input"`
	Choices      any                   `json:"choices"`
	Target       string                `json:"target"`
	Sandbox      any                   `json:"sandbox"`
	Files        any                   `json:"files"`
	Setup        any                   `json:"setup"`
	Messages     []chatMessage         `json:"messages"`
	Output       modelOutput           `json:"output"`
	Scores       map[string]score      `json:"scores"`
	Metadata     map[string]any        `json:"metadata"`
	Store        map[string]any        `json:"store"`
	Events       []any                 `json:"events"`
	ModelUsage   map[string]modelUsage `json:"model_usage"`
	TotalTime    *float64              `json:"total_time"`
	WorkingTime  *float64              `json:"working_time"`
	UUID         string                `json:"uuid"`
	Error        *evalError            `json:"error"`
	ErrorRetries any                   `json:"error_retries"`
	Attachments  map[string]string     `json:"attachments"`
	Limit        any                   `json:"limit"`
}

type evalError struct {
	Message       string `json:"message"`
	Traceback     string `json:"traceback"`
	TracebackANSI string `json:"traceback_ansi"`
}

// chatMessage is a user or an assistant message; the fields of the
// other role are left out.
type chatMessage map[string]any

type modelOutput struct {
	Model      string         `json:"model"`
	Choices    []choice       `json:"choices"`
	Completion string         `json:"completion"`
	Usage      *modelUsage    `json:"usage"`
	Time       *float64       `json:"time"`
	Metadata   map[string]any `json:"metadata"`
	Error      any            `json:"error"`
}

type choice struct {
	Message    chatMessage `json:"message"`
	StopReason string      `json:"stop_reason"`
	Logprobs   any         `json:"logprobs"`
}

type score struct {
	History     []any          `json:"history"`
	Value       any            `json:"value"`
	Answer      any            `json:"answer"`
	Explanation any            `json:"explanation"`
	Metadata    map[string]any `json:"metadata"`
}

// runRecord is what a sample is made of.
type runRecord struct {
	res   *result.Result
	m     result.Manifest
	index int
	line  int
	epoch int
}

// Inspect makes the eval log of a run directory, or of a sweep directory
// (one with summary.json): every run that has a result is a sample.
func Inspect(dir string) (*InspectLog, error) {
	var runs []runRecord
	var sum *sweep.Summary
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err == nil {
		s, err := sweep.Load(dir)
		if err != nil {
			return nil, err
		}
		sum = s
		for _, r := range s.Runs {
			if r.Dir == "" {
				continue
			}
			rd := r.Dir
			if !filepath.IsAbs(rd) {
				rd = filepath.Join(dir, filepath.Base(rd))
			}
			res, err := result.Read(rd)
			if err != nil {
				continue // not finished: the log has the runs that are
			}
			m, err := result.ReadManifest(rd)
			if err != nil {
				return nil, err
			}
			runs = append(runs, runRecord{res: res, m: m, index: r.Index, line: r.Line, epoch: r.Sample + 1})
		}
	} else {
		res, err := result.Read(dir)
		if err != nil {
			return nil, fmt.Errorf("%s has neither a run's result.json nor a sweep's summary.json: %w", dir, err)
		}
		m, err := result.ReadManifest(dir)
		if err != nil {
			return nil, err
		}
		runs = append(runs, runRecord{res: res, m: m, epoch: 1})
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%s: no run of the sweep has finished", dir)
	}
	return inspectLog(runs, sum), nil
}

func inspectLog(runs []runRecord, sum *sweep.Summary) *InspectLog {
	first := runs[0]
	id, created, dataset := first.res.RunID, first.m.Created, ""
	if sum != nil {
		id, created, dataset = sum.ID, sum.Created, sum.Dataset
	}
	log := &InspectLog{Version: 2, Status: "success"}
	log.Eval = inspectSpec{
		EvalID: id, RunID: id, Created: created.UTC().Format(time.RFC3339), Task: first.res.Spec, TaskID: first.m.SpecDigest,
		TaskFile: first.m.SpecPath, TaskAttribs: map[string]any{}, TaskArgs: map[string]any{}, TaskArgsPassed: map[string]any{},
		Dataset: inspectDataset{Samples: len(runs), SampleIDs: []int{}},
		Model:   modelName(first.m), ModelArgs: map[string]any{},
		Packages: map[string]string{"runner": first.m.RunnerVersion},
		Metadata: map[string]any{"runner": map[string]any{"spec_digest": first.m.SpecDigest, "seed": first.m.Seed, "commit": first.m.RunnerCommit}},
	}
	if dataset != "" {
		log.Eval.Dataset.Name, log.Eval.Dataset.Location = dataset, dataset
	}
	log.Plan = inspectPlan{Name: "plan", Steps: []planStep{{Solver: first.res.Spec, Params: map[string]any{"spec": first.m.SpecPath}}}}
	usage := map[string]modelUsage{}
	var scores []float64
	completed := 0
	start, end := created, created
	for i, r := range runs {
		s := sample(i, r)
		log.Eval.Dataset.SampleIDs = append(log.Eval.Dataset.SampleIDs, s.ID)
		log.Samples = append(log.Samples, s)
		for name, u := range s.ModelUsage {
			usage[name] = addUsage(usage[name], u)
		}
		switch r.res.Status {
		case result.StatusCompleted, result.StatusInconclusive:
			completed++
		case result.StatusFailed:
			log.Status = "error"
		default:
			if log.Status == "success" {
				log.Status = "started"
			}
		}
		if r.res.Score != nil {
			scores = append(scores, *r.res.Score)
		}
		if r.m.Created.Before(start) {
			start = r.m.Created
		}
		if e := r.m.Created.Add(time.Duration(r.res.DurationMS) * time.Millisecond); e.After(end) {
			end = e
		}
	}
	log.Stats = inspectStats{StartedAt: start.UTC().Format(time.RFC3339), CompletedAt: end.UTC().Format(time.RFC3339), ModelUsage: usage}
	log.Results = &inspectResult{TotalSamples: len(runs), CompletedSamples: completed, Scores: []inspectScore{}, Metadata: map[string]any{}}
	if len(scores) > 0 {
		acc := sweep.MeanCI(scores)
		metrics := map[string]inspectMetric{
			"accuracy": {Name: "accuracy", Value: acc.Mean, Params: map[string]any{}},
			"ci_low":   {Name: "ci_low", Value: acc.Low, Params: map[string]any{}},
			"ci_high":  {Name: "ci_high", Value: acc.High, Params: map[string]any{}},
		}
		log.Results.Scores = append(log.Results.Scores, inspectScore{Name: "score", Scorer: "score", ScoredSamples: len(scores),
			UnscoredSamples: len(runs) - len(scores), Params: map[string]any{"interval": acc.Method}, Metrics: metrics})
	}
	// Each judge's mean score over the samples it graded, and the judges'
	// agreement (kappa) from the sweep's summary.
	var judges []string
	byJudge := map[string][]float64{}
	for _, r := range runs {
		for _, j := range r.res.Judgements {
			if _, ok := byJudge[j.Judge]; !ok {
				judges = append(judges, j.Judge)
				byJudge[j.Judge] = nil
			}
			if j.Score != nil {
				byJudge[j.Judge] = append(byJudge[j.Judge], *j.Score)
			}
		}
	}
	for _, name := range judges {
		xs := byJudge[name]
		sc := inspectScore{Name: judgeScorer(name), Scorer: "judge", ScoredSamples: len(xs), UnscoredSamples: len(runs) - len(xs),
			Params: map[string]any{"judge": name}, Metrics: map[string]inspectMetric{}}
		if acc := sweep.MeanCI(xs); acc != nil {
			sc.Params["interval"] = acc.Method
			sc.Metrics["mean"] = inspectMetric{Name: "mean", Value: acc.Mean, Params: map[string]any{}}
			sc.Metrics["ci_low"] = inspectMetric{Name: "ci_low", Value: acc.Low, Params: map[string]any{}}
			sc.Metrics["ci_high"] = inspectMetric{Name: "ci_high", Value: acc.High, Params: map[string]any{}}
		}
		log.Results.Scores = append(log.Results.Scores, sc)
	}
	if sum != nil && sum.Judges != nil {
		log.Results.Metadata["judges"] = sum.Judges
	}
	return log
}

// judgeScorer is a judge's scorer name in the log.
func judgeScorer(judge string) string { return "judge/" + judge }

// sample is a run as a sample: its inputs as the user's message, each
// agent's message as an assistant message (the agent, node, round and
// record in its metadata), its outputs as the completion.
func sample(i int, r runRecord) InspectSample {
	id := i + 1
	if r.line > 0 {
		id = r.line
	}
	s := InspectSample{ID: id, Epoch: r.epoch, Input: inputText(r.m.Inputs), Target: targetText(r.res.Expected),
		Metadata: map[string]any{"run_id": r.res.RunID, "status": r.res.Status, "outputs": r.res.Outputs, "usage": r.res.Usage.Total},
		Store:    map[string]any{}, Events: []any{}, Attachments: map[string]string{}, UUID: r.res.RunID,
		ModelUsage: map[string]modelUsage{}}
	if len(r.res.Rounds) > 0 {
		s.Metadata["rounds"] = r.res.Rounds
	}
	if r.res.Conclusion != nil && !r.res.Conclusion.Concluded {
		s.Metadata["inconclusive"] = r.res.Conclusion.Summary()
	}
	secs := float64(r.res.DurationMS) / 1000
	s.TotalTime, s.WorkingTime = &secs, &secs
	s.Messages = append(s.Messages, chatMessage{"id": fmt.Sprintf("%s-input", r.res.RunID), "content": s.Input, "source": "input",
		"metadata": nil, "role": "user", "tool_call_id": nil})
	model := modelName(r.m)
	for _, msg := range r.res.Messages {
		s.Messages = append(s.Messages, chatMessage{"id": msg.ID, "content": msg.Content, "source": "generate",
			"metadata": map[string]any{"agent": msg.From, "node": msg.Node, "round": msg.Round, "record": msg.Record},
			"role":     "assistant", "tool_calls": nil, "model": model})
	}
	completion := outputsText(r.res)
	final := chatMessage{"id": r.res.RunID + "-outputs", "content": completion, "source": "generate", "metadata": nil,
		"role": "assistant", "tool_calls": nil, "model": model}
	s.Output = modelOutput{Model: model, Choices: []choice{{Message: final, StopReason: "stop"}}, Completion: completion,
		Time: &secs, Metadata: map[string]any{}}
	for name, u := range r.res.Usage.ByModel {
		s.ModelUsage[name] = usageOf(u)
	}
	if r.res.Score != nil {
		explanation := fmt.Sprintf("the spec's score expression gave %g against the expected %s", *r.res.Score, targetText(r.res.Expected))
		if len(r.res.Judgements) > 0 {
			explanation = fmt.Sprintf("the mean of %d judges' levels (0 for the lowest, 1 for the highest): %g", len(r.res.Judgements), *r.res.Score)
		}
		s.Scores = map[string]score{"score": {History: []any{}, Value: *r.res.Score, Answer: completion, Explanation: explanation, Metadata: map[string]any{}}}
	}
	// Each judge of a judged score is a scorer of its own: its level's
	// score, the level as the answer, its reasoning as the explanation.
	for _, j := range r.res.Judgements {
		if s.Scores == nil {
			s.Scores = map[string]score{}
		}
		md := map[string]any{"model": j.Model, "key": j.Key}
		if j.LevelIndex != nil {
			md["level_index"] = *j.LevelIndex
		}
		if j.Error != "" {
			md["error"] = j.Error
		}
		var value any
		if j.Score != nil {
			value = *j.Score
		} else {
			value = "N" // Inspect's value for no answer; the error says why
		}
		var answer any
		if j.Level != "" {
			answer = j.Level
		}
		s.Scores[judgeScorer(j.Judge)] = score{History: []any{}, Value: value, Answer: answer, Explanation: j.Reasoning, Metadata: md}
	}
	if r.res.Status == result.StatusFailed {
		s.Error = &evalError{Message: r.res.Error, Traceback: "", TracebackANSI: ""}
	}
	return s
}

func usageOf(u result.Usage) modelUsage {
	out := modelUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
	if u.CacheWriteTokens > 0 {
		n := u.CacheWriteTokens
		out.InputCacheWrite = &n
	}
	if u.CachedTokens > 0 {
		n := u.CachedTokens
		out.InputCacheRead = &n
	}
	return out
}

func addUsage(a, b modelUsage) modelUsage {
	a.InputTokens += b.InputTokens
	a.OutputTokens += b.OutputTokens
	a.TotalTokens += b.TotalTokens
	add := func(x, y *int) *int {
		if x == nil && y == nil {
			return nil
		}
		n := 0
		if x != nil {
			n += *x
		}
		if y != nil {
			n += *y
		}
		return &n
	}
	a.InputCacheWrite, a.InputCacheRead = add(a.InputCacheWrite, b.InputCacheWrite), add(a.InputCacheRead, b.InputCacheRead)
	return a
}

// modelName is the run's model as Inspect names models
// (endpoint/model), the first by the spec's name when there are several.
func modelName(m result.Manifest) string {
	names := make([]string, 0, len(m.Models))
	for n := range m.Models {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "none"
	}
	mi := m.Models[names[0]]
	return mi.Endpoint + "/" + mi.Model
}

// inputText is the run's one input as it is, or its inputs as JSON.
func inputText(in map[string]any) string {
	if len(in) == 1 {
		for _, v := range in {
			if s, ok := v.(string); ok {
				return s
			}
		}
	}
	b, _ := json.Marshal(in)
	return string(b)
}

func targetText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// outputsText is the run's outputs, one "name: value" line each, in the
// spec's order.
func outputsText(res *result.Result) string {
	var lines []string
	for _, name := range res.OutputOrder {
		v, ok := res.Outputs[name]
		if !ok {
			continue
		}
		s, isText := v.(string)
		if !isText {
			b, _ := json.Marshal(v)
			s = string(b)
		}
		lines = append(lines, name+": "+s)
	}
	return strings.Join(lines, "\n")
}
