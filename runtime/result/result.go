// Package result holds the records a run leaves in its directory: run.json
// (Manifest) and result.json (Result), with the readers that tools built on
// run directories share (runs, compare, the report, the web view). It knows
// nothing of how a run is executed, so every package can import it.
package result

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/runtime/runflags"
	"github.com/debate-runner/runner/spec"
)

// FormatVersion is the version of result.json's format. Version 2 added
// format_version and rejections and stopped repeating a message's text as
// its output; files without format_version are version 1.
const FormatVersion = 2

// Run statuses.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusWaiting   = "waiting"
	// StatusBudget is a run stopped before a call that would have passed
	// its budget; resuming with a raised budget continues it.
	StatusBudget = "budget_exceeded"
	// StatusInconclusive is a run that finished without reaching its
	// purpose (see Conclusion): its outputs are written, but a goal has no
	// verdict or an output came from a fallback or a forced verdict.
	StatusInconclusive = "inconclusive"
)

// Finished reports whether a status is that of a run that ran to its end
// (completed or inconclusive): there is nothing left to resume.
func Finished(status string) bool {
	return status == StatusCompleted || status == StatusInconclusive
}

// Manifest is run.json: everything needed to reproduce or resume the run.
type Manifest struct {
	RunID           string                         `json:"run_id"`
	SpecPath        string                         `json:"spec_path"`
	SpecName        string                         `json:"spec_name"`
	SpecDigest      string                         `json:"spec_digest"`
	TemplateSources map[string]spec.TemplateSource `json:"template_sources"`
	Inputs          map[string]any                 `json:"inputs"`
	Vars            map[string]any                 `json:"vars"`
	Seed            int64                          `json:"seed"`
	RunnerVersion   string                         `json:"runner_version"`
	// RunnerCommit is the commit the runner was built from ("" when the
	// build recorded none), with "+modified" for a tree with changes.
	RunnerCommit string `json:"runner_commit,omitempty"`
	// BuiltIns are the versions of built-in template libraries the spec
	// resolved to, with their digests (absent in runs from before
	// versions: their template_sources still give each template's digest).
	BuiltIns  []spec.BuiltIn       `json:"built_ins,omitempty"`
	GoVersion string               `json:"go_version"`
	Platform  string               `json:"platform,omitempty"`
	Models    map[string]ModelInfo `json:"models"`
	Created   time.Time            `json:"created"`
	// ReplayedFrom is the recording the run's calls were served from.
	ReplayedFrom string `json:"replayed_from,omitempty"`
	// Cache says whether responses could come from the response cache.
	Cache bool `json:"cache,omitempty"`
	// ModelOverrides are the models the run put in place of the spec's
	// (--model, --matrix model=...), by the spec's model name.
	ModelOverrides map[string]string `json:"model_overrides,omitempty"`
	// Answers are the answers to clarifying questions the run was given
	// (--answers); answers given while it ran are in its journal.
	Answers map[string]string `json:"answers,omitempty"`
	// ContextDir is the folder the file tools read (--context DIR).
	ContextDir string `json:"context_dir,omitempty"`
	// Libraries are the run's copies of the template libraries its spec
	// uses: folders of the run directory by the name the spec gives the
	// library. A resume compiles the spec with them.
	Libraries map[string]string `json:"libraries,omitempty"`
	// Budget is what the run may spend, from the spec and --budget.
	Budget *spec.BudgetPlan `json:"budget,omitempty"`
	// Status is how the run's last attempt ended (result.json's status:
	// completed, inconclusive, failed, waiting, budget_exceeded), written
	// when it ended; absent while it runs, after a kill, and while a
	// resume runs.
	Status string `json:"status,omitempty"`
	// Place is where the run stands in a sweep, each under its own key.
	Place
	// Flags are the run's flags (runflags.Flags), each under its own key.
	runflags.Flags
}

// Place is where a run stands in a sweep: a run is given it (runtime's
// options embed it), run.json keeps it (Manifest embeds it), and a resume
// takes it back whole.
type Place struct {
	// Sample is the sample index of a repeated run (--repeat): it enters
	// the cache key of calls at temperature > 0 so each repeat gets its
	// own samples. 0 is the plain run.
	Sample int `json:"sample,omitempty"`
	// Expected is what the spec's score expression compares the outputs
	// with (a dataset line's expected field); nil means no score.
	Expected any `json:"expected,omitempty"`
	// Sweep is the id of the sweep the run belongs to.
	Sweep string `json:"sweep,omitempty"`
	// CacheScope, when set, keeps the run's cache entries to runs of the
	// same scope: a sweep with --own-samples gives its runs its id, so
	// they are served neither another sweep's replies nor theirs to it
	// (see calls.ScopedKey). Empty: identical requests are shared.
	CacheScope string `json:"cache_scope,omitempty"`
	// DatasetLine is the dataset line (1-based) the run's inputs and
	// expected value come from.
	DatasetLine int `json:"dataset_line,omitempty"`
	// SweepIndex is the run's number in its sweep (1-based).
	SweepIndex int `json:"sweep_index,omitempty"`
}

// ModelInfo records a model's parameters in the manifest (never keys).
type ModelInfo struct {
	Model      string `json:"model"`
	Endpoint   string `json:"endpoint"`
	BaseURL    string `json:"base_url"`
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"api_version,omitempty"`
	// Simulated is set for a model whose replies runner made instead of a
	// model (the offline provider kind): none of its replies is a model's.
	Simulated  bool   `json:"simulated,omitempty"`
	Deployment string `json:"deployment,omitempty"`
	// MaxTokensField is the token-limit field asked for ("" picks by model
	// name); the client may learn another from the endpoint's refusal.
	MaxTokensField  string          `json:"max_tokens_field,omitempty"`
	Temperature     *float64        `json:"temperature,omitempty"`
	TopP            *float64        `json:"top_p,omitempty"`
	MaxTokens       int             `json:"max_tokens,omitempty"`
	Seed            *int            `json:"seed,omitempty"`
	Stream          bool            `json:"stream,omitempty"`
	ReasoningEffort string          `json:"reasoning_effort,omitempty"`
	JSONMode        string          `json:"json_mode,omitempty"`
	Omit            []string        `json:"omit,omitempty"`
	Extra           json.RawMessage `json:"extra,omitempty"`
	// Price is per million tokens, as the spec declares it.
	Price *PriceInfo `json:"price,omitempty"`
}

// PriceInfo is a model's price per million tokens in the manifest.
type PriceInfo struct {
	Prompt     float64 `json:"prompt"`
	Completion float64 `json:"completion"`
	// CachedPrompt is the price of prompt tokens served from a provider's
	// prompt cache; nil means the prompt price.
	CachedPrompt *float64 `json:"cached_prompt,omitempty"`
	// CacheWrite is the price of prompt tokens written to a provider's
	// prompt cache; nil means the prompt price.
	CacheWrite *float64 `json:"cache_write,omitempty"`
	// Builtin is the date of the built-in list price used for a model the
	// spec gave no price.
	Builtin string `json:"builtin,omitempty"`
}

// Cost is what a call with these token counts costs at these prices.
func (p *PriceInfo) Cost(prompt, cached, completion int) float64 {
	return p.CostWritten(prompt, cached, 0, completion)
}

// CostWritten is Cost with the prompt tokens written to the cache.
func (p *PriceInfo) CostWritten(prompt, cached, written, completion int) float64 {
	return (&syntax.Price{Prompt: p.Prompt, Completion: p.Completion, CachedPrompt: p.CachedPrompt, CacheWrite: p.CacheWrite}).CostWritten(prompt, cached, written, completion)
}

// Result is result.json. Its JSON Schema (Schema, `runner schema
// --result`) is made from these types and their doc tags.
type Result struct {
	FormatVersion int                  `json:"format_version" doc:"version of this file's format (2); a file without it is version 1"`
	RunID         string               `json:"run_id" doc:"the run's id, also the name of its directory"`
	Spec          string               `json:"spec" doc:"the spec's name"`
	Status        string               `json:"status" doc:"completed, inconclusive (finished without reaching its purpose: see conclusion), failed, waiting (for answers to clarifying questions) or budget_exceeded (stopped before a call that would have passed its budget)" enum:"completed,inconclusive,failed,waiting,budget_exceeded"`
	Error         string               `json:"error,omitempty" doc:"why the run failed"`
	Outputs       map[string]any       `json:"outputs" doc:"the outputs by name (empty unless the run completed or was inconclusive)"`
	Conclusion    *Conclusion          `json:"conclusion,omitempty" doc:"whether the run reached its purpose, and which values stood in for answers (set when the run ran to its end)"`
	OutputOrder   []string             `json:"output_order" doc:"output names in the order the spec declares them"`
	Messages      []value.Message      `json:"messages" doc:"every recorded message, in order"`
	GoalVerdicts  []value.GoalVerdicts `json:"goal_verdicts,omitempty" doc:"per goal and node: each agent's final verdict, and counts and percentages per verdict"`
	Whispers      []WhisperStat        `json:"whispers,omitempty" doc:"whisper counts per goal, sender and addressee"`
	Dynamics      []GoalDynamics       `json:"dynamics,omitempty" doc:"per goal with verdicts or whispers: verdict changes, how consensus formed, and what whispers did to their addressees' next verdicts"`
	ToolCalls     []ToolCallInfo       `json:"tool_calls,omitempty" doc:"every tool call an agent made"`
	Rejections    []Rejection          `json:"rejections,omitempty" doc:"replies that broke a conversation's rules and were asked again"`
	Absent        []Absence            `json:"absent,omitempty" doc:"agents a node completed without (an ask node's min_answers): their call failed after its retries or their reply stayed unusable after its repairs"`
	Usage         UsageReport          `json:"usage" doc:"calls, tokens, latency and cost"`
	// Expected and Score are set when the run was given an expected value
	// (a dataset line) and the spec has a score expression.
	Expected any      `json:"expected,omitempty" doc:"the value the outputs were scored against (a dataset line's)"`
	Score    *float64 `json:"score,omitempty" doc:"the score expression's value (true is 1, false 0); 0 for an inconclusive run (an answer not reached counts as wrong)"`
	Rounds   []Round  `json:"rounds,omitempty" doc:"per loop round of a scored run: the score the outputs would have had had the run stopped after the round, each agent's score, answer flips and agreement"`
	// Judgements are the judges' grades of a judged score.
	Judgements []Judgement `json:"judgements,omitempty" doc:"a judged score's judgements (score: {judge: ...}): each judge's level and reasoning; the score is the mean of their scores"`
	Warnings   []string    `json:"warnings,omitempty" doc:"problems that did not stop the run"`
	// ChangedPrompts marks a run replayed with changed prompts.
	ChangedPrompts []string `json:"changed_prompts,omitempty" doc:"calls served from a recording (--replay) although their request differs from the recorded one: the run was replayed with changed prompts, and these replies answered other requests"`
	DurationMS     int64    `json:"duration_ms" doc:"wall time of the run (of its last attempt when resumed), in milliseconds"`
	// The runner and spec that made the result, as run.json has them, so
	// that a result.json read alone says what it came from.
	RunnerVersion string `json:"runner_version,omitempty" doc:"the version of the runner that wrote this file"`
	RunnerCommit  string `json:"runner_commit,omitempty" doc:"the commit that runner was built from, when its build recorded one"`
	SpecDigest    string `json:"spec_digest,omitempty" doc:"SHA-256 of the spec file the run used"`
}

// Judgement is one judge's grade of a run (a judged score).
type Judgement struct {
	Judge      string   `json:"judge" doc:"the judge: the model's name in the spec"`
	Model      string   `json:"model,omitempty" doc:"the model id the judge called"`
	Key        string   `json:"key" doc:"the call key of the judge's call (in the journal)"`
	Level      string   `json:"level,omitempty" doc:"the rubric level the judge gave"`
	LevelIndex *int     `json:"level_index,omitempty" doc:"the level's place in the rubric, 0 for the lowest"`
	Score      *float64 `json:"score,omitempty" doc:"the level's place over the top place: 0 for the lowest level, 1 for the highest"`
	Reasoning  string   `json:"reasoning,omitempty" doc:"the judge's reasoning for its level (its whole reply when it named no level)"`
	Error      string   `json:"error,omitempty" doc:"why the judge gave no level: its call failed, or its reply named none"`
}

// Conclusion says whether a run that ran to its end reached its purpose
// (the spec's concluded: condition, or by default: every goal has a verdict
// given freely and no output came from a fallback or a forced verdict), and
// counts the values that stood in for answers.
type Conclusion struct {
	Concluded bool `json:"concluded" doc:"the run reached its purpose; false makes its status inconclusive"`
	// Condition is the spec's concluded: expression, when it has one.
	Condition string `json:"condition,omitempty" doc:"the spec's concluded condition (absent: the default, no inconclusive goal and no output from a fallback or a forced verdict)"`
	// InconclusiveGoals are the goals that reached no conclusion.
	InconclusiveGoals []string `json:"inconclusive_goals,omitempty" doc:"goals that reached no conclusion: no verdict, a most common verdict only ever forced, or the goal's concluded condition false"`
	// FallbackOutputs are the outputs whose values depend on a fallback or
	// a forced verdict: they change when those values do.
	FallbackOutputs []string `json:"fallback_outputs,omitempty" doc:"outputs whose values came from a fallback or a forced verdict (they change when those values do)"`
	Fallbacks       int      `json:"fallbacks" doc:"messages whose output is their node's fallback (marked fallback: true)"`
	ForcedVerdicts  int      `json:"forced_verdicts" doc:"verdicts given because a conversation forced them (force_verdict; marked forced: true)"`
	// Problem is why the condition could not be evaluated, if it could not.
	Problem string `json:"problem,omitempty" doc:"why the concluded condition could not be evaluated (the run then counts as inconclusive)"`
}

// Summary says in one line why a run is inconclusive ("" when it
// concluded).
func (c *Conclusion) Summary() string {
	if c == nil || c.Concluded {
		return ""
	}
	var parts []string
	if len(c.InconclusiveGoals) > 0 {
		parts = append(parts, "goals without a verdict given freely: "+strings.Join(c.InconclusiveGoals, ", "))
	}
	if len(c.FallbackOutputs) > 0 {
		parts = append(parts, "outputs from fallbacks or forced verdicts: "+strings.Join(c.FallbackOutputs, ", "))
	}
	if c.Problem != "" {
		parts = append(parts, c.Problem)
	}
	if c.Condition != "" {
		parts = append(parts, "concluded: "+c.Condition+" is false")
	}
	parts = append(parts, fmt.Sprintf("%d fallback(s), %d forced verdict(s)", c.Fallbacks, c.ForcedVerdicts))
	return strings.Join(parts, "; ")
}

// Short says in a few words why a run is inconclusive, for tables ("" when
// it concluded).
func (c *Conclusion) Short() string {
	switch {
	case c == nil || c.Concluded:
		return ""
	case len(c.InconclusiveGoals) > 0:
		return "no verdict on " + strings.Join(c.InconclusiveGoals, ", ")
	case len(c.FallbackOutputs) > 0:
		return "fallback in " + strings.Join(c.FallbackOutputs, ", ")
	case c.Problem != "":
		return "concluded could not be evaluated"
	}
	return "concluded is false"
}

// CacheMinTokens is the shortest shared start a provider's prompt cache
// serves: OpenAI's 1,024 tokens, also Anthropic's minimum for Sonnet and
// Opus (its Haiku models need 2,048). The cacheable share counts no
// shorter one.
const CacheMinTokens = 1024

// The providers' rules for what their prompt caches serve, as the
// cacheable share by rule counts them (docs/runs.md, "Cacheable share"):
// OpenAI's automatic cache serves a start of at least 1,024 tokens in steps
// of 128; Anthropic's serves a start only up to a cache breakpoint the
// earlier request wrote, of at least 1,024 tokens (Sonnet and Opus); Gemini's
// implicit cache serves a start of at least 2,048 tokens (Gemini 2.5 Flash
// and Pro in Google's table; its newer models list 4,096).
const (
	OpenAICacheMin, OpenAICacheStep = 1024, 128
	AnthropicCacheMin               = 1024
	GeminiCacheMin                  = 2048
)

// CacheRules are the prompt tokens each provider's cache rule could serve
// from a start shared with an earlier request of any agent to the same
// model (what run_cacheable_tokens counts, held to the rule).
type CacheRules struct {
	OpenAI    RuleShare `json:"openai" doc:"OpenAI's automatic cache: a shared start of at least 1,024 tokens, counted in steps of 128"`
	Anthropic RuleShare `json:"anthropic" doc:"Anthropic's cache: a shared start up to a cache breakpoint of the earlier request (where runner puts them with prompt_cache: breakpoints), of at least 1,024 tokens"`
	Gemini    RuleShare `json:"gemini" doc:"Gemini's implicit cache: a shared start of at least 2,048 tokens"`
}

// RuleShare is what one provider's rule could serve.
type RuleShare struct {
	Tokens int     `json:"tokens" doc:"prompt tokens the rule could serve from its cache"`
	Share  float64 `json:"share" doc:"tokens / prompt_tokens"`
}

// Add counts one call's tokens by each rule, and the shares of promptTokens
// (the entry's prompt tokens, this call's included).
func (c *CacheRules) Add(call CacheRules, promptTokens int) {
	for _, p := range []struct{ sum, one *RuleShare }{{&c.OpenAI, &call.OpenAI}, {&c.Anthropic, &call.Anthropic}, {&c.Gemini, &call.Gemini}} {
		p.sum.Tokens += p.one.Tokens
		if promptTokens > 0 {
			p.sum.Share = math.Round(float64(p.sum.Tokens)/float64(promptTokens)*10000) / 10000
		}
	}
}

// Usage counts calls and tokens.
type Usage struct {
	Calls            int `json:"calls" doc:"model calls, including repairs and tool round trips"`
	PromptTokens     int `json:"prompt_tokens" doc:"prompt tokens as the endpoint counted them"`
	CompletionTokens int `json:"completion_tokens" doc:"completion tokens as the endpoint counted them"`
	// CachedTokens are the prompt tokens providers served from their prompt
	// caches, as they reported them.
	CachedTokens int `json:"cached_tokens,omitempty" doc:"prompt tokens the providers served from their prompt caches (prompt_tokens_details.cached_tokens), priced at the model's cached_prompt price"`
	// PrefixTokens are the prompt tokens that repeat the start of the same
	// agent's previous request: what a provider's prompt cache can serve.
	// CacheWriteTokens are the prompt tokens providers wrote to their
	// prompt caches, as they reported them.
	CacheWriteTokens int `json:"cache_write_tokens,omitempty" doc:"prompt tokens the providers wrote to their prompt caches (prompt_tokens_details.cache_write_tokens, or cache_creation_input_tokens), priced at the model's cache_write price"`
	PrefixTokens     int `json:"prefix_tokens,omitempty" doc:"prompt tokens that repeat the start of the same agent's previous request (what a provider's prompt cache can serve), counted in proportion to the characters repeated"`
	// PrefixShare is PrefixTokens / PromptTokens.
	PrefixShare float64 `json:"prefix_share,omitempty" doc:"prefix_tokens / prompt_tokens: the share of input tokens that repeat the same agent's previous request"`
	// CacheableTokens and RunCacheableTokens are the prompt tokens a
	// provider's prompt cache could serve (see docs/runs.md, "Cacheable
	// share").
	CacheableTokens    int     `json:"cacheable_tokens,omitempty" doc:"prompt tokens that lie in a start the request shares with an earlier request of the same agent to the same model, counted when that start is at least 1,024 tokens (a provider's minimum)"`
	CacheableShare     float64 `json:"cacheable_share,omitempty" doc:"cacheable_tokens / prompt_tokens"`
	RunCacheableTokens int     `json:"run_cacheable_tokens,omitempty" doc:"prompt tokens that lie in a start the request shares with an earlier request of any agent to the same model, counted when that start is at least 1,024 tokens"`
	RunCacheableShare  float64 `json:"run_cacheable_share,omitempty" doc:"run_cacheable_tokens / prompt_tokens"`
	// CacheableByRule are the run's cacheable tokens held to each
	// provider's rule; left out when no rule serves any.
	CacheableByRule CacheRules `json:"cacheable_by_rule,omitzero" doc:"prompt tokens each provider's cache rule could serve from a start shared with an earlier request of any agent to the same model, and their share of prompt_tokens"`
	// EstimatedCalls counts the calls whose server sent no usage: their
	// tokens (and so the cost) were counted with a tokenizer.
	EstimatedCalls int `json:"estimated_calls,omitempty" doc:"calls whose endpoint sent no token usage: their tokens were counted with a tokenizer and are estimates"`
	// BatchCalls were answered in a provider's batch (runner run --batch)
	// and are priced at kit.BatchPrice times their model's prices.
	BatchCalls int     `json:"batch_calls,omitempty" doc:"calls answered in a provider's batch (runner run --batch), priced at half the model's prices"`
	LatencyMS  int64   `json:"latency_ms" doc:"sum of the calls' latencies, in milliseconds"`
	Cost       float64 `json:"cost,omitempty" doc:"cost from the models' declared prices"`
	// Priced is false when some call's model has no declared price, so Cost
	// is a lower bound.
	Priced bool `json:"priced" doc:"false when some call's model has no price, so cost is a lower bound"`
	// BuiltinPrices is the date of the built-in list prices some of Cost
	// comes from (models the spec gave no price).
	BuiltinPrices string `json:"builtin_prices,omitempty" doc:"date of the built-in list prices part of cost comes from (models the spec gave no price: declare price: to override)"`
}

// UsageReport is usage per agent, per node and in total.
type UsageReport struct {
	Total   Usage            `json:"total" doc:"every call of the run"`
	ByAgent map[string]Usage `json:"by_agent" doc:"by agent id"`
	ByNode  map[string]Usage `json:"by_node" doc:"by node id"`
	ByModel map[string]Usage `json:"by_model" doc:"by model name (the spec's name for it)"`
	ByRound map[string]Usage `json:"by_round,omitempty" doc:"by round: the innermost loop's counter (calls outside loops are under 0)"`
	ByGoal  map[string]Usage `json:"by_goal,omitempty" doc:"by goal id (calls outside goals are left out)"`
}

// Round is how a scored run stood after one loop round: its outputs
// evaluated over the messages written up to the round's last one (the
// majority so far), and over each agent's own messages alone (the agent's
// answer so far), each scored against the expected value.
type Round struct {
	Round int `json:"round" doc:"the loop round (1-based)"`
	// Score is nil when the score could not be computed after this round.
	Score  *float64           `json:"score,omitempty" doc:"the score of the outputs over the messages up to the round's last (absent when it could not be computed)"`
	Agents map[string]float64 `json:"agents" doc:"each agent that wrote in the round: the score of the outputs over that agent's messages up to the round (absent when it could not be computed)"`
	// Flips compare each agent with the round before (none in the first).
	RightToWrong      []string `json:"right_to_wrong,omitempty" doc:"agents right (score 1) the round before and wrong (score 0) now"`
	WrongToRight      []string `json:"wrong_to_right,omitempty" doc:"agents wrong the round before and right now"`
	ChangedWhileWrong []string `json:"changed_while_wrong,omitempty" doc:"agents wrong in both rounds whose answer changed"`
	// MajorityChanged says the outputs after this round differ from those
	// after the round before.
	MajorityChanged bool `json:"majority_changed,omitempty" doc:"the outputs over the messages up to this round differ from those up to the round before (the majority changed)"`
	// Agreement is the share of the round's agents whose answer is the
	// most common one.
	Agreement float64 `json:"agreement" doc:"the share of the round's agents whose answer (their outputs over their own messages) is the most common one"`
}

// WhisperStat counts whispers from one agent to another within a goal.
type WhisperStat struct {
	Goal  string `json:"goal,omitempty" doc:"the goal (absent outside goals)"`
	From  string `json:"from" doc:"the sender's agent id"`
	To    string `json:"to" doc:"the addressee's agent id"`
	Count int    `json:"count" doc:"how many whispers"`
}

// ToolCallInfo is a tool call an agent made, for the result and report.
// Spec tests' assertions see it as tool_calls (expr tags), without Files.
type ToolCallInfo struct {
	Key       string `json:"key" expr:"key" doc:"the call key of the model call that asked for the tool"`
	Agent     string `json:"agent" expr:"agent" doc:"the agent's id"`
	Tool      string `json:"tool" expr:"tool" doc:"search_history, read_file, list_files, or SERVER__TOOL of an MCP server"`
	Arguments string `json:"arguments" expr:"arguments" doc:"the arguments as the model gave them (JSON text)"`
	Result    string `json:"result" expr:"result" doc:"what the tool answered"`
	// Files are the context files the tool read, with their digests.
	Files []FileRead `json:"files,omitempty" expr:"-" doc:"the context files the tool read, with their SHA-256"`
}

// FileRead is a context file a tool read.
type FileRead struct {
	Path   string `json:"path" doc:"the path relative to the context folder"`
	SHA256 string `json:"sha256" doc:"the SHA-256 of the bytes read, in hex"`
	Size   int64  `json:"size" doc:"the file's size in bytes"`
}

// Rejection is a reply that broke a conversation's rules (an unknown
// verdict, a verdict without reasons, a failed rule): it was not recorded,
// and its author was asked again with the reasons.
type Rejection struct {
	Key     string `json:"key" doc:"the call key of the rejected reply (its response is in the journal under it)"`
	Node    string `json:"node" doc:"the node"`
	Goal    string `json:"goal,omitempty" doc:"the goal (absent outside goals)"`
	Round   int    `json:"round,omitempty" doc:"the innermost loop's counter (absent outside loops)"`
	Agent   string `json:"agent" doc:"the agent whose reply was rejected"`
	Attempt int    `json:"attempt" doc:"1 for the first reply of the turn, 2 for the first re-ask, ..."`
	Reasons string `json:"reasons" doc:"why it was rejected, as the agent was told"`
	Content string `json:"content" doc:"the rejected reply"`
}

// Absence is an agent a node completed without: it has no message and no
// output there, and the node's outputs and the spec's are made from the
// other agents' replies.
type Absence struct {
	Key    string `json:"key" doc:"the call key of the call that failed, or of the last unusable reply (its response is in the journal under it)"`
	Node   string `json:"node" doc:"the node"`
	Goal   string `json:"goal,omitempty" doc:"the goal (absent outside goals)"`
	Round  int    `json:"round,omitempty" doc:"the innermost loop's counter (absent outside loops)"`
	Agent  string `json:"agent" doc:"the agent left out"`
	Reason string `json:"reason" doc:"why: the endpoint's error after the retries, or what was wrong with the reply after the repairs"`
	Reply  string `json:"reply,omitempty" doc:"the last unusable reply (absent when the call failed)"`
}

// MarshalJSON writes result.json's form: the format version, lists that are
// never null, and a message's output left out when it is the message's own
// text (a text reply), so that no text is stored twice.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result // without the method, to not recurse
	p := plain(r)
	p.FormatVersion = FormatVersion
	if p.Outputs == nil {
		p.Outputs = map[string]any{}
	}
	if p.OutputOrder == nil {
		p.OutputOrder = []string{}
	}
	p.Usage = p.Usage.nonNil()
	msgs := make([]message, len(r.Messages))
	for i, m := range r.Messages {
		msgs[i] = message(m)
		if OutputIsContent(m) {
			msgs[i].Output = nil
		}
	}
	return json.Marshal(struct {
		plain
		Messages []message `json:"messages"`
	}{p, msgs})
}

func (u UsageReport) nonNil() UsageReport {
	if u.ByAgent == nil {
		u.ByAgent = map[string]Usage{}
	}
	if u.ByNode == nil {
		u.ByNode = map[string]Usage{}
	}
	if u.ByModel == nil {
		u.ByModel = map[string]Usage{}
	}
	return u
}

// message is a value.Message as result.json writes it (Result.MarshalJSON
// leaves out an output that is the content).
type message value.Message

// OutputIsContent reports whether a message's output is its own text (the
// reply of a node that does not parse, trimmed), which result.json does not
// repeat: a reader takes the trimmed content for a missing output of such a
// message.
func OutputIsContent(m value.Message) bool {
	s, ok := m.Output.(string)
	return ok && s != "" && s == strings.TrimSpace(m.Content)
}

// WhisperStats counts whispers per goal, sender and addressee, in the order
// they first occur.
func WhisperStats(msgs []value.Message) []WhisperStat {
	idx := map[[3]string]int{}
	var out []WhisperStat
	for _, m := range msgs {
		if !m.Whisper {
			continue
		}
		k := [3]string{m.Goal, m.From, m.To}
		if i, ok := idx[k]; ok {
			out[i].Count++
			continue
		}
		idx[k] = len(out)
		out = append(out, WhisperStat{Goal: m.Goal, From: m.From, To: m.To, Count: 1})
	}
	return out
}

// ReadManifest reads run.json of a run directory.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	data, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		return m, fmt.Errorf("%s is not a run directory (no run.json): %w", dir, err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("%s: %w", filepath.Join(dir, "run.json"), err)
	}
	return m, nil
}

// Read reads result.json of a run directory; the error wraps
// os.ErrNotExist when the run has none yet (it is running, or was killed).
func Read(dir string) (*Result, error) {
	data, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		return nil, err
	}
	var res Result
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "result.json"), err)
	}
	return &res, nil
}

// Provenance is one line naming what made a run: the runner's version and
// commit, the spec's digest and the built-in library versions it used.
func (m Manifest) Provenance() string {
	var b strings.Builder
	fmt.Fprintf(&b, "runner %s", orUnknown(m.RunnerVersion))
	if m.RunnerCommit != "" {
		c := m.RunnerCommit
		if len(c) > 12 && !strings.HasSuffix(c, "+modified") {
			c = c[:12]
		}
		fmt.Fprintf(&b, " (commit %s)", c)
	}
	d := m.SpecDigest
	if len(d) > 12 {
		d = d[:12]
	}
	fmt.Fprintf(&b, ", spec sha256 %s", orUnknown(d))
	if len(m.BuiltIns) > 0 {
		var libs []string
		for _, l := range m.BuiltIns {
			s := l.Ref() + " " + l.Digest
			if !l.Pinned {
				s += " (unpinned)"
			}
			libs = append(libs, s)
		}
		fmt.Fprintf(&b, ", built-ins %s", strings.Join(libs, ", "))
	}
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
