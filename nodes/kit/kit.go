// Package kit is the contract between the runtime and node executors: what a
// node may ask of the run (model calls, templates, messages, state) and what
// it must give back. The runtime implements Host; each node kind implements
// Executor. Keeping it here lets node packages stay independent of the
// runtime (the import graph flows cmd -> runtime -> nodes -> spec).
package kit

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/spec"
)

// Kind is a node kind: what the loader needs of it (spec.Kind: name,
// schema, YAML form, prompt data type, compile step) and its executor.
// Optional capabilities are further interfaces a kind may implement, found
// by type assertion.
type Kind interface {
	spec.Kind
	// Execute runs one node of a plan (node.Config is what Compile
	// returned) and returns its result.
	Execute(ctx context.Context, h Host, node *spec.NodePlan) (value.NodeResult, error)
}

// Describer is a kind that can say in a few words what one run of a node
// does (its agents, fan-out, repairs), for plans and dry runs.
type Describer interface {
	Detail(node *spec.NodePlan) string
}

// TurnBounded is a node config whose node takes turns, up to a bound
// (a conversation's max_turns), recording each turn's messages with its
// number (value.Message.Turn). A dry run whose call budget runs out in
// such a node extrapolates the turns it did not simulate.
type TurnBounded interface {
	TurnBound() int
}

// Reporter is a kind that adds sections of its own to a run's report:
// tables that only it makes sense of (a conversation's whispers and
// verdicts), built from the messages its nodes recorded. The report
// escapes and draws them.
type Reporter interface {
	ReportSections(plan *spec.Plan, msgs []value.Message) []ReportSection
}

// ReportSection is a titled part of a report.
type ReportSection struct {
	Title  string
	Tables []ReportTable
}

// ReportTable is a table of a report section, of plain text cells.
type ReportTable struct {
	// Title, when set, heads the table.
	Title  string
	Header []string
	Rows   [][]string
	// Pie, when set, is drawn as a pie chart of these counts after the
	// table (titled PieTitle).
	Pie      map[string]int
	PieTitle string
}

// Of returns the kind that runs a node, or an error naming the node when
// its kind cannot run (a registry of compile-only kinds, in tests).
func Of(node *spec.NodePlan) (Kind, error) {
	k, ok := node.Impl.(Kind)
	if !ok {
		return nil, fmt.Errorf("node %q: kind %q cannot run in this build", node.ID, node.Kind)
	}
	return k, nil
}

// ChatMessage is one message of a chat completion request or reply.
type ChatMessage struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	Name       string     `json:"name,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	// CacheSplit is where the message's stable start ends, when its
	// template marked it with {{cacheBreak}} (0: not marked); the model
	// call sets it from the mark (see value.SplitCacheBreak).
	CacheSplit int `json:"cache_split,omitempty"`
}

// ToolCall is a function call a model asked for.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is a function a model may call.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Call is one model call a node wants made.
type Call struct {
	// Key identifies the call within the run; the same key always means the
	// same call, which is how resume and replay find recorded responses.
	Key      string
	Node     string
	Agent    *spec.AgentPlan
	Model    *spec.ModelPlan
	Messages []ChatMessage
	Tools    []Tool
	// JSONMode asks the endpoint for a JSON reply. JSONSchema, when not
	// nil, is the JSON Schema the reply must satisfy, sent as
	// response_format json_schema under SchemaName where the endpoint
	// takes it.
	JSONMode   bool
	JSONSchema json.RawMessage
	SchemaName string
	// Target is the agent whose message is being answered (each:), if any.
	Target string
	// Continued says the agent's next request extends this one (a turn of
	// its thread), so a provider's cache should keep all of it.
	Continued bool
	// Shape says what a reply must look like to pass the node's checks, so
	// that a stand-in reply (a dry run's placeholder) can be made that does.
	Shape Shape
	// Repairs is how many times the node may ask again after an invalid
	// reply, and ToolRounds how many tool round trips a reply may take: a
	// dry run counts them in its upper bound.
	Repairs, ToolRounds int
	// Aside marks a call made on the agent's behalf rather than in its
	// voice (a summary of its history): a model answers it even when a
	// person plays the agent (spec.AgentPlan.Human).
	Aside bool
}

// Seat reports whether a person answers the call: it is a turn of an
// agent a person plays (human: true), not an aside.
func (c *Call) Seat() bool { return c.Agent != nil && c.Agent.Human && !c.Aside }

// Shape describes the reply a call expects.
type Shape struct {
	// Format is text (the default), json, tags or regex.
	Format string
	// Schema is the JSON Schema a json reply must satisfy (nil: any JSON).
	Schema json.RawMessage
	// Pattern is the regular expression a regex reply must match.
	Pattern string
	// Tags are the tags a tags reply must have, in order, with the value
	// to give each ("" for a placeholder text).
	Tags []Tag
}

// Tag is a tag of a tags-formatted reply.
type Tag struct {
	Name, Value string
	// Filled says the node refuses a reply whose tag is empty (a
	// conversation's <Content>): a stand-in gives it some text.
	Filled bool
}

// Reply is a model's answer to a Call.
type Reply struct {
	Content          string     `json:"content"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	FinishReason     string     `json:"finish_reason,omitempty"`
	Model            string     `json:"model,omitempty"`
	PromptTokens     int        `json:"prompt_tokens"`
	CompletionTokens int        `json:"completion_tokens"`
	// CachedTokens are the prompt tokens the provider served from its
	// prompt cache (prompt_tokens_details.cached_tokens), part of
	// PromptTokens.
	CachedTokens int `json:"cached_tokens,omitempty"`
	// CacheWriteTokens are the prompt tokens the provider wrote to its
	// prompt cache, part of PromptTokens (not of CachedTokens).
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	// UsageEstimated is set when the server reported no usage and the
	// token counts were computed with a tokenizer.
	UsageEstimated bool `json:"usage_estimated,omitempty"`
	// UsageError says why the usage the endpoint sent was not read (not a
	// count, negative, beyond any context), and UsageRaw is that usage as
	// sent: the reply is kept, its tokens counted with a tokenizer
	// (UsageEstimated).
	UsageError string          `json:"usage_error,omitempty"`
	UsageRaw   json.RawMessage `json:"usage_raw,omitempty"`
	LatencyMS  int64           `json:"latency_ms"`
	Attempts   int             `json:"attempts"`
	// Batch is the id of the provider's batch that answered the call
	// (`runner run --batch`), "" for a call answered on its own: a batched
	// call is priced at BatchPrice times the model's prices.
	Batch string `json:"batch,omitempty"`
	// BatchShared is set on a batched reply whose request was another
	// caller's (another run of the sweep asked the same, and the batch
	// held it once): the provider billed it to that caller, so this reply
	// costs nothing.
	BatchShared bool `json:"batch_shared,omitempty"`
	// Replayed is set when the reply came from a journal, not the network.
	Replayed bool `json:"-"`
}

// BatchPrice is the share of a model's prices a call answered in a
// provider's batch costs: OpenAI's Batch API and Anthropic's Message
// Batches both charge half the list price.
const BatchPrice = 0.5

// PriceFactor is what the reply's cost is of its model's prices: BatchPrice
// for a batched reply, 0 for one another caller's identical request was
// billed for (BatchShared), else 1.
func (r Reply) PriceFactor() float64 {
	if r.Batch != "" && r.BatchShared {
		return 0
	}
	if r.Batch != "" {
		return BatchPrice
	}
	return 1
}

// Scope is where in the flow a node runs.
type Scope struct {
	// Round is the innermost loop counter (1-based), 0 outside loops.
	Round int
	// Goal is the current goal, zero outside a foreach over goals.
	Goal value.GoalView
	// Loop holds every loop/foreach variable in scope by name.
	Loop map[string]any
	// Item is the innermost foreach element.
	Item any
	// Counters are every enclosing loop's iteration and foreach's item
	// number (1-based) by the loop's name: what recorded messages carry
	// (value.Message.Loops).
	Counters map[string]int
	// Key is a stable text form of the scope, e.g. "round=2" or
	// "goal=tech/round=1", used in call keys.
	Key string
}

// Host is what a node may do during a run: the small interfaces below,
// composed. The runtime implements all of it; a helper takes only the parts
// it uses (kit.SystemPrompt a Prompter, tools.Complete a Caller, a
// ToolRunner and a Journal), so a test host or a new kind's helper need not
// fake the rest. Its methods are safe for concurrent use unless noted.
type Host interface {
	Caller
	Prompter
	History
	Journal
	Flow
	Randomness
	Asker
	ToolRunner
}

// Caller makes model calls, one at a time or several at once.
type Caller interface {
	// Complete makes (or replays) a model call. The runtime journals the
	// request and the reply, applies limits and retries, and counts usage.
	Complete(ctx context.Context, c Call) (Reply, error)
	// Parallel runs f for every i in [0, n) at once and waits for them all.
	// The first failure cancels the others' context and is returned (not
	// the cancellations it caused). Executors run concurrent calls through
	// it rather than starting goroutines, so that a run can also execute
	// where they may not (a durable workflow replays its code).
	Parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error
}

// Prompter renders prompts and builds what every prompt sees.
type Prompter interface {
	// Render executes a template with data (the kind's prompt data).
	Render(name string, data any) (string, error)
	// Base returns what every prompt of an agent sees: inputs, vars,
	// scope, the agents of the node, and the history visible to the agent.
	// Kinds embed it in their own prompt data. Its slices and maps may be
	// shared with the run: read them, never modify them.
	Base(node *spec.NodePlan, agent *spec.AgentPlan) value.PromptBase
	// Summary returns a model-written summary of the agent's history when
	// the spec asks for summaries and the history is long enough, else "".
	// It is computed once per agent and scope, asked with system (the
	// agent's system prompt, "" for none); a failed summary gives "" and a
	// warning, so prompts fall back to the full history.
	Summary(ctx context.Context, agent *spec.AgentPlan, system string) string
	// SummarySize is the size of messages as a summary plan's threshold
	// measures them (characters, bytes or tokens; in a dry run stand-ins
	// count as the replies they stand for).
	SummarySize(sp *spec.SummarizePlan, agent *spec.AgentPlan, msgs []value.Message) int
	// SummaryDue reports whether messages of that size are summarised.
	SummaryDue(sp *spec.SummarizePlan, size int) bool
	// Condense asks for one of a conversation's own summaries
	// (spec.SummarizePlan.Thread) as its own call, journaled with the
	// summary event and recorded as a private message of record summary;
	// "" and a warning when it fails or the plan's when does not hold.
	Condense(ctx context.Context, c Condense) string
}

// Condense is what a conversation's summary covers.
type Condense struct {
	Plan  *spec.SummarizePlan
	Agent *spec.AgentPlan
	// System is the agent's system prompt ("" for none): the summary is
	// asked as the agent.
	System string
	// Previous is the agent's summary so far ("" for none), which the new
	// one takes in; Messages are the messages it covers beyond it.
	Previous string
	Messages []value.Message
	// Key is the call's key, unique in the node's scope.
	Key string
	// Turn is the conversation's turn the summary is made before.
	Turn int
}

// History is the run's messages and the agents' chat threads.
type History interface {
	// Messages returns every message recorded so far (all visibilities),
	// as a slice shared with the run: read it, never modify it.
	Messages() []value.Message
	// Record stores messages in the given order, assigning ids and filling
	// node, round and goal when empty. Call it from one goroutine.
	Record(msgs ...value.Message) []value.Message
	// Thread returns an agent's chat thread of that name in the current
	// goal (threads are scoped like records), made on first use. The run
	// keeps it, and rebuilds it on resume and replay from the prompts it
	// journaled.
	Thread(name, agent string) Thread
}

// Journal records what a node did beside its messages: events, warnings
// and progress.
type Journal interface {
	// Event journals a node-specific event (e.g. "repair", "warning").
	Event(typ event.Type, key string, data any) error
	// Warn reports a problem that does not stop the run.
	Warn(format string, args ...any)
	// Progress reports calls started/finished for live progress views.
	Progress(ev ProgressEvent)
}

// Flow is where a node runs in the flow, what it can evaluate there and
// the other nodes it can see or run.
type Flow interface {
	// Scope is where the node runs.
	Scope() Scope
	// Env returns the expression environment at this point of the run.
	Env() *spec.Env
	// Holds evaluates a condition that ends something (a conversation's
	// until): true when it holds. A dry run's worst case never ends early,
	// so a dry host answers false after checking that it evaluates.
	Holds(p *spec.Program, env map[string]any) (bool, error)
	// Continues evaluates a condition under which something goes on (a
	// conversation's while): true when it holds. A dry run's worst case
	// goes on, so a dry host answers true after checking that it
	// evaluates.
	Continues(p *spec.Program, env map[string]any) (bool, error)
	// Result returns a finished node's result.
	Result(node string) (value.NodeResult, bool)
	// RunNode executes another node in the current scope (watchers).
	RunNode(ctx context.Context, id string) (value.NodeResult, error)
	// Recruit makes the members of a recruited group (an agent declared
	// with recruit:) from the list list gives (spec.Plan.Recruit) and puts
	// them in the group's place in every node that runs after, until the
	// group is recruited again. A dry run (and the path check) takes the
	// worst case, every slot of the group, whatever list gives.
	Recruit(group string, list func() ([]any, error)) ([]*spec.AgentPlan, error)
}

// Randomness gives a node deterministic random numbers.
type Randomness interface {
	// Rand is a deterministic source for this node execution, derived from
	// the run seed and the node's scope.
	Rand() *rand.Rand
	// RandFor is a deterministic source for one call of this node, derived
	// from the run seed and the call key: the same call draws the same
	// numbers whatever else runs at the same time.
	RandFor(key string) *rand.Rand
}

// Asker finds answers to clarifying questions.
type Asker interface {
	// Answers returns answers to clarifying questions known to the run, by
	// question id, and whether the run may ask interactively.
	Answers() Answerer
}

// ToolRunner runs the tools a model calls.
type ToolRunner interface {
	// ContextDir is the directory file tools may read (--context DIR), or "".
	ContextDir() string
	// RunTool answers a tool call the model made in call key (a call key of
	// the node, as given to Complete) on behalf of agent: with the result
	// journaled for it by an earlier attempt of the run or the recording
	// being replayed, else by calling run and journaling what it gives, so
	// that resumes and replays never run a tool again. It returns the text
	// the model reads, or an error that fails the node: the tool could not
	// run (ToolResult.Err), or a budget's max_tool_calls is reached.
	RunTool(ctx context.Context, key, agent string, tc ToolCall, run func(context.Context) ToolResult) (string, error)
}

// Thread is an agent's chat in a thread: the user prompts it was sent and
// its replies, in order. A request built as system prompt, the thread's
// turns, then the new prompt starts with the exact messages of the
// thread's previous request, so providers' prompt caches can serve it.
// One call at a time uses a thread.
type Thread interface {
	// Turns are the thread's messages so far, user prompts and the agent's
	// replies alternating. The slice is shared: read it, never modify it.
	Turns() []ChatMessage
	// Prompt fixes the user prompt of the thread's next turn and journals
	// it: the rendered text, or the prompt the run's journal (a resumed
	// run) or the recording being replayed holds for this turn, so that
	// the thread is rebuilt as it was sent even when a template changed.
	Prompt(rendered string) (string, error)
	// Add appends a turn: the prompt Prompt returned and the reply.
	Add(prompt, reply string)
}

// ToolResult is what running a tool gave.
type ToolResult struct {
	// Text is what the model reads ("error: ..." for a failed call).
	Text string
	// Files are the context files the tool read.
	Files []FileRead
	// Err, when set, is why the tool could not run at all (its MCP server
	// died): nothing is journaled for the call, and RunTool returns Err,
	// which fails the node, so that a resume calls the tool again.
	Err error
}

// FileRead is a context file a tool read: its path relative to the context
// folder, the SHA-256 of the bytes read (hex) and the file's size.
type FileRead struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Answerer provides answers to clarifying questions.
type Answerer interface {
	// Answer returns the answer to q, or ok=false when none is known and the
	// run must wait for one.
	Answer(ctx context.Context, q value.Question) (answer string, ok bool, err error)
}

// ProgressEvent describes work in flight for progress displays.
type ProgressEvent struct {
	Node     string
	Agent    string
	Started  bool
	Finished bool
	Expected int // calls the node expects to make, when known
}

// Parallel runs f for every i in [0, n) in goroutines, as Host.Parallel
// asks: hosts that may start goroutines implement Parallel with it.
func Parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	// The cause tells the calls stopped why (a budget stop lets calls
	// already admitted finish: calls.Limited).
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One failure fails them all: stop the others early. One that
			// waits for a person (ErrWaiting) lets the others finish, so
			// their replies are journaled for the resume.
			if errs[i] = f(ctx, i); errs[i] != nil && !errors.Is(errs[i], ErrWaiting) {
				cancel(errs[i])
			}
		}()
	}
	wg.Wait()
	var first, waiting error
	for _, err := range errs {
		if err != nil && errors.Is(err, ErrWaiting) {
			waiting = cmp.Or(waiting, err)
			continue
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		if err != nil && first == nil {
			first = err
		}
	}
	if first == nil {
		return waiting
	}
	return first
}

// SystemPrompt renders the system prompt for an agent in a node: the node's
// system template, else the agent's, else none.
func SystemPrompt(h Prompter, nodeSystem string, agent *spec.AgentPlan, data any) (string, error) {
	name := nodeSystem
	if name == "" {
		name = agent.System
	}
	if name == "" {
		return "", nil
	}
	return h.Render(name, data)
}

// Messages builds a chat request from an optional system prompt and a user prompt.
func Messages(system, user string) []ChatMessage {
	var out []ChatMessage
	if system != "" {
		out = append(out, ChatMessage{Role: "system", Content: system})
	}
	return append(out, ChatMessage{Role: "user", Content: user})
}

// ErrCallFailed is matched (errors.Is) by the error of a model call that
// failed after its retries: the endpoint kept answering with errors, or
// not at all. A node may go on without such a call (ask's min_answers);
// any other error of Complete (a budget reached, a run cancelled, a
// journal that cannot be written) still stops it.
var ErrCallFailed = errors.New("model call failed after its retries")

// ErrWaiting is returned by a node that needs answers from a person that
// the run does not have; the run stops with status waiting.
var ErrWaiting = exitcode.New(exitcode.Waiting, "the run is waiting for answers to clarifying questions")
