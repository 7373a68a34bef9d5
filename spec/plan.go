package spec

import (
	"encoding/json"
	"io/fs"
	"slices"
	"text/template"
	"time"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"

	"github.com/expr-lang/expr/vm"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Plan is a compiled spec: every reference resolved, every template parsed and
// every expression compiled. The runtime executes a Plan and never looks at
// YAML again.
type Plan struct {
	// templateAt places a template's line and column (see TemplateErrorAt).
	templateAt func(name string, line, col int) (string, syntax.Pos, bool)

	File   *syntax.File
	Path   string
	Source []byte
	// Digest is the SHA-256 of the spec file, hex encoded.
	Digest string
	Name   string

	Inputs    []*InputPlan
	Vars      []*VarPlan
	Endpoints map[string]*EndpointPlan
	Models    map[string]*ModelPlan
	Agents    []*AgentPlan
	AgentByID map[string]*AgentPlan
	// Groups are the agents of each replicated declaration (replicas:), by
	// the declaration's id, which nodes name to mean all of them.
	Groups map[string][]*AgentPlan
	// Recruits are the declarations whose agents a recruit node makes at
	// run time (recruit:), by id; each is also a group of Groups, of its
	// Max slots.
	Recruits map[string]*RecruitPlan
	// ReplicaVars are the vars replicas read: a run that sets one compiles
	// the spec again (see Specialize).
	ReplicaVars []string
	// CountInputs are the inputs counts read (max_turns: inputs.turns): a
	// run given one compiles the spec again (see Specialize).
	CountInputs []string
	// CountExprs counts the counts written as expressions (see Count).
	CountExprs int
	// Overridden are the models a run put in place of the spec's (see
	// Overrides.Models), nil when none.
	Overridden map[string]string
	Verdicts   map[string][]string
	Goals      []value.GoalView

	// Templates holds every template the spec can use, by full name.
	Templates *template.Template
	// TemplateSources says where each template came from and its digest.
	TemplateSources map[string]TemplateSource
	// Libraries are the template libraries the spec used, with their files.
	Libraries []*Library
	// BuiltIns are the versions of built-in template libraries the spec
	// resolved to, in the order it uses them.
	BuiltIns []BuiltIn
	// Budget is what a run may spend (budget:).
	Budget BudgetPlan
	// MCPServers are the MCP servers of mcp_servers:, by name, and
	// MCPToolRefs the tools of theirs that agents and nodes name.
	MCPServers  map[string]*MCPServerPlan
	MCPToolRefs []MCPToolRef
	// Schemas are the named JSON Schemas of template libraries (schema_ref).
	Schemas map[string]*jsonschema.Schema
	// SchemaDocs are the same schemas as JSON.
	SchemaDocs map[string]json.RawMessage

	Summarize *SummarizePlan

	Nodes     map[string]*NodePlan
	NodeOrder []string
	Flow      []*FlowStep
	Outputs   []*OutputPlan
	Score     *Program
	// Judge, when set, scores a run by models grading it against a
	// rubric (score: {judge: ...}); Score is then nil.
	Judge *JudgePlan
	// Concluded is the spec's condition for a run that reached its
	// purpose (concluded:), over outputs, fallback_outputs and
	// inconclusive_goals; nil means the default: no goal inconclusive and
	// no output from a fallback or a forced verdict.
	Concluded *Program
	// GoalConcluded are the goals' own conditions (goals[].concluded:),
	// over final_verdicts and consensus, by goal id; a goal without one
	// is concluded when its most common final verdict was given freely
	// (not forced) by at least one agent.
	GoalConcluded map[string]*Program
	// UsedModels are the models some node calls, in the order nodes
	// declare them: a run connects to their endpoints, and only theirs.
	UsedModels []*ModelPlan
	// Registry is the set of node kinds the plan was compiled with; each
	// node's Impl is one of them.
	Registry *Registry
	// libraries are the saved template libraries the plan was compiled
	// with (CompileOptions.Libraries), used again by Specialize.
	libraries map[string]fs.FS
}

// Scored reports whether the spec scores its runs: by an expression or a
// judge.
func (p *Plan) Scored() bool { return p.Score != nil || p.Judge != nil }

// JudgePlan is a judged score: each judge (a model) grades a completed
// run against the rubric, with the template's prompt.
type JudgePlan struct {
	// Names are the judges' model names as the spec gives them, Models
	// their models.
	Names     []string
	Models    []*ModelPlan
	Template  string
	Criterion string
	// Levels are the rubric's levels, lowest first.
	Levels []value.JudgeLevel
}

// InputPlan is a declared input.
type InputPlan struct {
	Name        string
	Required    bool
	Description string
	Default     any
	HasDefault  bool
	MaxChars    int
	// Image says the input is an image (kind: image): its value is a file
	// or URL the run reads and sends as an image part; MaxBytes bounds a
	// file (0: the default).
	Image    bool
	MaxBytes int
	// Domain is what values it may take (nil: any); runtime/args checks
	// what a run is given against it.
	Domain *Domain
}

// VarPlan is a declared variable; its default fixes its type.
type VarPlan struct {
	Name        string
	Default     any
	Description string
	// Domain is what values it may take (nil: any).
	Domain *Domain
}

// EndpointPlan is a resolved endpoint.
type EndpointPlan struct {
	Name string
	// Kind is the endpoint's provider kind (see Provider): "openai" when
	// the spec names none.
	Kind string
	// Provider is that kind, from the registry the plan was compiled
	// with (nil when it has none of that name, which is reported).
	Provider Provider `json:"-"`
	// BaseURL is as written, without a trailing slash; ${NAME} references
	// are expanded from the environment when a run connects.
	BaseURL string
	// Settings are the settings only the endpoint's kind takes (azure's
	// api_version), as written.
	Settings  map[string]string
	APIKeyEnv string
	// APIKeyHeader is the header the key goes in; "" is the kind's own
	// (Authorization: Bearer, or api-key for azure).
	APIKeyHeader string
	// FromEnv is set for the implicit default endpoint, whose base URL comes
	// from OPENAI_BASE_URL when set.
	FromEnv           bool
	MaxConcurrency    int
	RequestsPerMinute int
	TokensPerMinute   int
	Timeout           time.Duration
	MaxRetries        int
	// MaxRetryWait bounds the time one call waits between its retries; 0
	// is the client's default.
	MaxRetryWait time.Duration
	// Headers are as written: ${NAME} references are expanded when a run
	// connects, and the expanded values are treated as secrets.
	Headers map[string]string
	// JSONMode is where requests for JSON start: "auto" (json_schema when
	// the reply has a schema, else json_object), "schema", "object" or
	// "none"; "" means auto.
	JSONMode string
	// MaxTokensField is the field max_tokens is sent in ("max_tokens" or
	// "max_completion_tokens"); "" picks by model name.
	MaxTokensField string
	// NoStreamUsage leaves stream_options out of streamed requests.
	NoStreamUsage bool
	// Extra are request fields sent with every call to the endpoint.
	Extra []RequestParam
}

// ModelPlan is a resolved model configuration.
type ModelPlan struct {
	Name     string
	Model    string
	Endpoint *EndpointPlan
	// Deployment is the Azure deployment; "" means Model.
	Deployment  string
	Temperature *float64
	TopP        *float64
	MaxTokens   int
	Seed        *int
	Stream      bool
	// ReasoningEffort is sent as reasoning_effort when not "".
	ReasoningEffort string
	// JSONMode and MaxTokensField override the endpoint's when not "".
	JSONMode       string
	MaxTokensField string
	// Omit are parameters never sent to this model, even when set
	// ("temperature", "top_p", "seed", "max_tokens").
	Omit []string
	// Extra are request fields sent with every call of the model, after
	// (and over) the endpoint's.
	Extra []RequestParam
	Price *syntax.Price
	// CacheBreakpoints marks where the model's provider may cache a
	// request (prompt_cache: breakpoints; see llm.Request).
	CacheBreakpoints bool
}

// RequestParam is a request field the spec passes through: a name and its
// value as JSON.
type RequestParam struct {
	Name  string
	Value json.RawMessage
}

// JSONModeFor is where the model's requests for JSON start.
func (m *ModelPlan) JSONModeFor() string {
	if m.JSONMode != "" {
		return m.JSONMode
	}
	if m.Endpoint != nil && m.Endpoint.JSONMode != "" {
		return m.Endpoint.JSONMode
	}
	return "auto"
}

// TokenField is the field the model's max_tokens is sent in; "" lets the
// client pick by model name.
func (m *ModelPlan) TokenField() string {
	if m.MaxTokensField != "" {
		return m.MaxTokensField
	}
	if m.Endpoint != nil {
		return m.Endpoint.MaxTokensField
	}
	return ""
}

// Omits reports whether a parameter is never sent to the model.
func (m *ModelPlan) Omits(param string) bool {
	return slices.Contains(m.Omit, param)
}

// RequestExtra is what the model's requests carry beyond the fields runner
// sets: the endpoint's extra fields, then the model's, a model's field
// replacing the endpoint's of the same name in place.
func (m *ModelPlan) RequestExtra() []RequestParam {
	var out []RequestParam
	if m.Endpoint != nil {
		out = append(out, m.Endpoint.Extra...)
	}
	for _, p := range m.Extra {
		i := slices.IndexFunc(out, func(q RequestParam) bool { return q.Name == p.Name })
		if i >= 0 {
			out[i] = p
			continue
		}
		out = append(out, p)
	}
	return out
}

// AgentPlan is a resolved agent.
type AgentPlan struct {
	ID      string
	Name    string
	Role    string
	Model   *ModelPlan
	System  string // template name, or ""
	Persona value.Persona
	Tools   []string
	Vars    map[string]any
	// Human says a person plays the agent (a seat): its turns wait for
	// the person's message instead of calling Model, which is kept only
	// to count the prompt's tokens and to name the model templates see.
	Human bool
	// Index is the agent's place (1-based) in its replicated declaration,
	// Group the declaration's id (0 and "" for an agent not replicated).
	Index int
	Group string
	// Neighbours are the ids of the agents of its group it hears, by the
	// declaration's topology (nil without one).
	Neighbours []string
	// systemPos is where the system template is named, for diagnostics.
	systemPos syntax.Pos
}

// View is what templates and expressions see of the agent.
func (a *AgentPlan) View() value.AgentView {
	v := value.AgentView{ID: a.ID, Name: a.Name, Role: a.Role, Persona: a.Persona, Vars: a.Vars, Index: a.Index, Group: a.Group, Neighbours: a.Neighbours}
	if a.Model != nil {
		v.Model = a.Model.Model
	}
	return v
}

// SummarizePlan configures history summaries.
type SummarizePlan struct {
	OverChars int
	MaxChars  int
	Template  string
	Model     *ModelPlan
	// Records, when set, are what a summary measures and condenses: the
	// agent's own messages of these records to everyone (for an agent with
	// none, the latest round's messages of these records), instead of
	// everything it wrote or was sent.
	Records []string
	// When, if set, is a condition (e.g. vars.summaries) checked before
	// each summary: false leaves the history whole.
	When *Program
	// Measure is how a history's size is taken: MeasureChars (characters
	// of the messages' contents; a summary once the size reaches
	// OverChars) or MeasureBytes (UTF-8 bytes of the history as the
	// summary prompt shows it, headers included; a summary once it passes
	// OverChars), the default.
	Measure string
	// OverTokens, when not 0, is the threshold in tokens (MeasureTokens)
	// instead of OverChars.
	OverTokens int
	// Thread marks a conversation's own summaries (a converse node's
	// summarize: mapping): made again whenever the messages after the
	// latest one pass the threshold, each covering the one before and the
	// messages since but the last Keep; a speaker's prompts see its latest
	// summary and only the conversation's messages after it.
	Thread bool
	Keep   int
}

// Summary measures (history.summarize.measure).
const (
	MeasureChars = "chars"
	MeasureBytes = "bytes"
	// MeasureTokens is the measure of over_tokens: the tokens of the
	// history as the summary prompt shows it, by the summary model's
	// tokenizer.
	MeasureTokens = "tokens"
)

// TemplateSource records where a template was defined.
type TemplateSource struct {
	// Origin is "library:NAME", a file path, or "spec" for define:.
	Origin string `json:"origin"`
	Digest string `json:"digest"`
}

// NodePlan is a compiled node.
type NodePlan struct {
	ID          string
	Kind        string
	Description string
	// CountError says why a count of the node (see Count) is out of its
	// range with the values the plan was compiled with: the node fails
	// when it runs, and a spec whose flow never runs it with those values
	// runs (samples: vars.m where an if skips the node when m is 0).
	CountError string
	Agents     []*AgentPlan
	// Impl is the kind (from the plan's registry) that compiled the node
	// and runs it.
	Impl Kind
	// Config is what the kind's Compile returned.
	Config any
	Pos    syntax.Pos
	// Output is the type of the node's output, Outputs the type of each
	// agent's output (nil: the same as Output); nil is any.
	Output  *Type
	Outputs *Type
	// Models are the models the node calls.
	Models []*ModelPlan
	// Runs are the nodes this node runs itself (watchers).
	Runs []string
}

// StepKind distinguishes flow steps.
type StepKind int

// The flow step kinds.
const (
	StepNode StepKind = iota
	StepLoop
	StepForeach
	StepIf
)

// FlowStep is a compiled flow step.
type FlowStep struct {
	Kind StepKind
	Pos  syntax.Pos
	Node *NodePlan // StepNode
	// As is the loop or foreach variable name.
	As string
	// Max bounds a loop: MaxConst when the spec wrote a number, else MaxExpr.
	MaxConst int
	MaxExpr  *Program
	// MaxBound is MaxExpr's declared maximum: the largest value the
	// domains of the vars and inputs it reads allow, or the cap written in
	// it (min(nodes.plan.output.steps, 10)); 0 when they give none, which
	// only an expression fixed before the run (MaxExpr.ReadsRun false) may
	// leave. The dry run and the path check plan a loop whose max reads
	// the run to it, and a run refuses a value above it.
	MaxBound int
	Until    *Program // StepLoop, optional
	// Break, for a loop, is checked after each step of its body and ends
	// the loop there when it holds (optional).
	Break *Program
	// LeastEvaluations, when set, is the node executions and iterations a
	// loop with no until makes at the least, known to pass the run's
	// bound on evaluations: a run stops on its budget as the loop starts
	// rather than after the work below it (see checkEvaluationBound).
	LeastEvaluations int
	In               *Program // StepForeach
	Cond             *Program // StepIf
	Do               []*FlowStep
	Else             []*FlowStep
	// Path is a stable id of the step, e.g. "flow[1].loop", used in journals.
	Path string

	// Concurrency is how many iterations of a foreach run at once (1: one
	// after the other).
	Concurrency int
}

// OutputPlan is a compiled output expression.
type OutputPlan struct {
	Name    string
	Program *Program
}

// Program is a compiled expression with its source and position.
type Program struct {
	Source  string
	Pos     syntax.Pos
	Program *vm.Program
	// ReadsRun is set when the expression reads what the run has recorded
	// (nodes, messages, latest, goal_verdicts): its value depends on the
	// replies, which a dry run does not know.
	ReadsRun bool
}
