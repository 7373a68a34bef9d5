package syntax

import (
	"errors"

	"github.com/debate-runner/runner/spec/value"

	"gopkg.in/yaml.v3"
)

// Value is a decoded YAML value that remembers where it was written.
type Value[T any] struct {
	V   T
	Pos Pos
	Set bool
}

// UnmarshalYAML decodes the value and keeps its position.
func (v *Value[T]) UnmarshalYAML(n *yaml.Node) error {
	v.Pos = NodePos(n)
	v.Set = true
	return n.Decode(&v.V)
}

// Str is a string with its position.
type Str = Value[string]

// StrList is a list of strings; a single string is accepted as a list of one.
type StrList []Str

// UnmarshalYAML accepts a scalar or a sequence of scalars.
func (l *StrList) UnmarshalYAML(n *yaml.Node) error {
	n = ResolveAlias(n)
	if n.Kind == yaml.ScalarNode {
		if n.ShortTag() == "!!null" {
			return nil
		}
		*l = StrList{{V: n.Value, Pos: NodePos(n), Set: true}}
		return nil
	}
	var items []Str
	if err := n.Decode(&items); err != nil {
		return err
	}
	*l = items
	return nil
}

// Values returns the plain strings.
func (l StrList) Values() []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = s.V
	}
	return out
}

// Expr is an expr-lang expression as written in the spec. Plain numbers and
// booleans are expressions too (max: 3).
type Expr struct {
	Source string
	Pos    Pos
	// quoted is set when Source was written in quotes, so its first
	// character sits one column after Pos.
	quoted bool
	// block is the text of a block scalar (| or >), whose indicator is
	// at Pos: its characters are placed by BlockOffsetPos; prefix is what
	// Negated wrote before it in Source.
	block  *string
	prefix int
}

// UnmarshalYAML accepts any scalar.
func (e *Expr) UnmarshalYAML(n *yaml.Node) error {
	n = ResolveAlias(n)
	e.Pos = NodePos(n)
	if n.Kind != yaml.ScalarNode {
		return typeErrorf(n, "an expression is text, a number or a boolean, found %s", KindName(n))
	}
	e.Source = n.Value
	e.quoted = n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		text := n.Value
		e.block = &text
	}
	return nil
}

// Block is the text of an expression written as a block scalar (| or >)
// and the length of what Source adds before it (Negated's "!("); ok is
// false for other scalars.
func (e Expr) Block() (text string, prefix int, ok bool) {
	if e.block == nil {
		return "", 0, false
	}
	return *e.block, e.prefix, true
}

// Negated is the expression !(e), placed so that a diagnostic about a
// part of e points where the same diagnostic of e does (and so is not
// reported twice when a kind compiles both).
func (e Expr) Negated() Expr {
	if e.block != nil {
		return Expr{Source: "!(" + e.Source + ")", Pos: e.Pos, block: e.block, prefix: e.prefix + 2}
	}
	p := e.TextPos()
	return Expr{Source: "!(" + e.Source + ")", Pos: Pos{Line: p.Line, Col: p.Col - 2}}
}

// TextPos is the position of the expression's first character.
func (e Expr) TextPos() Pos {
	if e.quoted {
		return Pos{Line: e.Pos.Line, Col: e.Pos.Col + 1}
	}
	return e.Pos
}

// Quoted reports whether the expression was written in quotes.
func (e Expr) Quoted() bool { return e.quoted }

// IsZero reports whether no expression was written.
func (e Expr) IsZero() bool { return e.Source == "" && e.Pos.Line == 0 }

// Score is the spec's score: an expression over outputs and expected, or
// a judge (models grading the run against a rubric).
type Score struct {
	Expr
	Judge *Judge
}

// UnmarshalYAML takes an expression (a scalar) or {judge: ...}.
func (s *Score) UnmarshalYAML(n *yaml.Node) error {
	n = ResolveAlias(n)
	if n.Kind != yaml.MappingNode {
		return s.Expr.UnmarshalYAML(n)
	}
	var w struct {
		Judge *Judge `yaml:"judge"`
	}
	if err := n.Decode(&w); err != nil {
		return err
	}
	s.Judge = w.Judge
	if s.Judge != nil {
		s.Judge.Pos = NodePos(n)
	}
	return nil
}

// IsZero reports whether the spec has no score.
func (s Score) IsZero() bool { return s.Expr.IsZero() && s.Judge == nil }

// Judge is a judged score: each model grades the run against the rubric
// (a criterion and levels, lowest first), with the template's prompt.
type Judge struct {
	Pos       Pos         `yaml:"-"`
	Models    StrList     `yaml:"models"`
	Template  Str         `yaml:"template"`
	Criterion string      `yaml:"criterion"`
	Levels    Map[string] `yaml:"levels"`
}

// Map is a YAML mapping decoded in declaration order, which matters: agents
// are called and recorded in the order they are declared.
type Map[T any] struct {
	Keys   []Str
	Values map[string]*T
	// Invalid is set when the value is not a mapping (an error already
	// reported): its names are unknown, so references to them are not
	// checked.
	Invalid bool
}

// UnmarshalYAML decodes each entry, keeping key order and positions.
func (m *Map[T]) UnmarshalYAML(n *yaml.Node) error {
	n = ResolveAlias(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		m.Invalid = true
		return typeErrorf(n, "expected a mapping, found %s", KindName(n))
	}
	m.Values = map[string]*T{}
	var errs []string
	for _, p := range MappingPairs(n) {
		k, v := ResolveAlias(p.K), p.V
		if k.Kind != yaml.ScalarNode {
			continue
		}
		if _, dup := m.Values[k.Value]; dup {
			continue
		}
		var t T
		if err := v.Decode(&t); err != nil {
			var te *yaml.TypeError
			if !errors.As(err, &te) {
				return err
			}
			errs = append(errs, te.Errors...)
		}
		m.Keys = append(m.Keys, Str{V: k.Value, Pos: NodePos(k), Set: true})
		m.Values[k.Value] = &t
	}
	if len(errs) > 0 {
		return &yaml.TypeError{Errors: errs}
	}
	return nil
}

// Names returns the keys in declaration order.
func (m Map[T]) Names() []string {
	out := make([]string, len(m.Keys))
	for i, k := range m.Keys {
		out[i] = k.V
	}
	return out
}

// Has reports whether a key is present.
func (m Map[T]) Has(name string) bool {
	_, ok := m.Values[name]
	return ok
}

// Len is the number of entries.
func (m Map[T]) Len() int { return len(m.Keys) }

// File is a decoded spec: the typed form of what the user wrote, with
// positions. Node kinds decode their own fields from Node.Raw.
type File struct {
	Path        string
	Version     Value[int]     `yaml:"version"`
	Name        Str            `yaml:"name"`
	Description string         `yaml:"description"`
	Inputs      Map[Input]     `yaml:"inputs"`
	Vars        Map[Var]       `yaml:"vars"`
	Endpoints   Map[Endpoint]  `yaml:"endpoints"`
	Models      Map[Model]     `yaml:"models"`
	Templates   Templates      `yaml:"templates"`
	Agents      Map[Agent]     `yaml:"agents"`
	Verdicts    Map[StrList]   `yaml:"verdicts"`
	Goals       []Goal         `yaml:"goals"`
	History     History        `yaml:"history"`
	Nodes       Map[NodeDecl]  `yaml:"nodes"`
	Flow        []Step         `yaml:"flow"`
	Outputs     Map[Expr]      `yaml:"outputs"`
	Score       Score          `yaml:"score"`
	Concluded   Expr           `yaml:"concluded"`
	Defaults    Defaults       `yaml:"defaults"`
	Budget      Budget         `yaml:"budget"`
	MCPServers  Map[MCPServer] `yaml:"mcp_servers"`
	Root        *yaml.Node     `yaml:"-"`
}

// Defaults are run-wide settings a spec may fix.
type Defaults struct {
	Seed       *int64 `yaml:"seed"`
	MaxRetries *int   `yaml:"max_retries"`
	Timeout    string `yaml:"timeout"`
}

// BudgetLimits are limits on what calls may spend; nil means no limit.
// The same limits are read from the spec (YAML), kept in run.json (JSON)
// and checked before each call.
type BudgetLimits struct {
	MaxCost   *float64 `yaml:"max_cost" json:"max_cost,omitempty"`
	MaxCalls  *int     `yaml:"max_calls" json:"max_calls,omitempty"`
	MaxTokens *int64   `yaml:"max_tokens" json:"max_tokens,omitempty"`
	// MaxToolCalls limits the tools agents run (built-in and MCP).
	MaxToolCalls *int `yaml:"max_tool_calls" json:"max_tool_calls,omitempty"`
}

// Empty reports whether no limit is set.
func (l BudgetLimits) Empty() bool {
	return l.MaxCost == nil && l.MaxCalls == nil && l.MaxTokens == nil && l.MaxToolCalls == nil
}

// Budget is what a run may spend, in all and per node.
type Budget struct {
	BudgetLimits `yaml:",inline"`
	Nodes        Map[BudgetLimits] `yaml:"nodes"`
	// MaxEvaluations bounds the node executions of a run (see
	// DefaultMaxEvaluations).
	MaxEvaluations *int `yaml:"max_evaluations"`
}

// Input is a value the user gives on the command line.
type Input struct {
	Required    bool   `yaml:"required"`
	Description string `yaml:"description"`
	Default     *any   `yaml:"default"`
	MaxChars    int    `yaml:"max_chars"`
	// Kind is "" or text, or image (a file or URL sent as an image part).
	Kind     Str `yaml:"kind"`
	MaxBytes int `yaml:"max_bytes"`
	Domain   `yaml:",inline"`
	// DefaultPos is where the default is written.
	DefaultPos Pos `yaml:"-"`
}

// UnmarshalYAML decodes the input and keeps where its default is.
func (in *Input) UnmarshalYAML(n *yaml.Node) error {
	type plain Input
	if err := n.Decode((*plain)(in)); err != nil {
		return err
	}
	in.DefaultPos = NodePos(n)
	if n = ResolveAlias(n); n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "default" {
				in.DefaultPos = NodePos(n.Content[i+1])
			}
		}
	}
	return nil
}

// Domain is what values a var or an input may take, in JSON Schema's
// words: one of a list (enum), numbers within bounds (minimum, maximum),
// text a regular expression matches (pattern). Unset keywords are zero.
type Domain struct {
	Enum    Value[[]any]   `yaml:"enum"`
	Minimum Value[float64] `yaml:"minimum"`
	Maximum Value[float64] `yaml:"maximum"`
	Pattern Str            `yaml:"pattern"`
}

// HasDomain reports whether any keyword of the domain is set.
func (d Domain) HasDomain() bool {
	return d.Enum.Set || d.Minimum.Set || d.Maximum.Set || d.Pattern.Set
}

// Var is a declared var: its default alone (rounds: 3), or its default
// with a description and the domain of its values
// (rounds: {default: 3, minimum: 1, maximum: 10}). A mapping is read as
// the second form when it has a default and no key but default,
// description, enum, minimum, maximum and pattern; a var whose default is
// such a mapping is written {default: {default: ...}}.
type Var struct {
	V   any
	Pos Pos
	// Declared is set for the second form.
	Declared    bool
	Description string
	Domain
}

// varKeys are the keys of a var written with its domain.
var varKeys = map[string]bool{"default": true, "description": true, "enum": true, "minimum": true, "maximum": true, "pattern": true}

// IsVarDeclaration says whether a var's YAML value is its default with
// a domain ({default: ..., minimum: ...}) rather than a default.
func IsVarDeclaration(n *yaml.Node) bool {
	n = ResolveAlias(n)
	if n.Kind != yaml.MappingNode {
		return false
	}
	hasDefault := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if !varKeys[k] {
			return false
		}
		hasDefault = hasDefault || k == "default"
	}
	return hasDefault
}

// UnmarshalYAML decodes either form.
func (v *Var) UnmarshalYAML(n *yaml.Node) error {
	if !IsVarDeclaration(n) {
		v.Pos = NodePos(n)
		return n.Decode(&v.V)
	}
	var d struct {
		Default     Value[any] `yaml:"default"`
		Description string     `yaml:"description"`
		Domain      `yaml:",inline"`
	}
	if err := n.Decode(&d); err != nil {
		return err
	}
	v.V, v.Pos, v.Declared, v.Description, v.Domain = d.Default.V, d.Default.Pos, true, d.Description, d.Domain
	return nil
}

// Endpoint is an OpenAI-compatible API.
type Endpoint struct {
	Kind              Str               `yaml:"kind"`
	BaseURL           Str               `yaml:"base_url"`
	APIKeyEnv         string            `yaml:"api_key_env"`
	APIKeyHeader      Str               `yaml:"api_key_header"`
	MaxConcurrency    int               `yaml:"max_concurrency"`
	RequestsPerMinute int               `yaml:"requests_per_minute"`
	TokensPerMinute   int               `yaml:"tokens_per_minute"`
	Timeout           Str               `yaml:"timeout"`
	MaxRetries        *int              `yaml:"max_retries"`
	MaxRetryWait      Str               `yaml:"max_retry_wait"`
	Headers           Map[Str]          `yaml:"headers"`
	JSONMode          Str               `yaml:"json_mode"`
	MaxTokensField    Str               `yaml:"max_tokens_field"`
	StreamUsage       *bool             `yaml:"stream_usage"`
	Extra             Map[RequestField] `yaml:"extra"`
	// Settings are the settings only the endpoint's provider kind takes
	// (api_version for azure), by name; the schema says which.
	Settings map[string]Str `yaml:",inline"`
}

// Model is a named model configuration. A plain string is shorthand for
// {model: NAME}.
type Model struct {
	Model           string            `yaml:"model"`
	Endpoint        Str               `yaml:"endpoint"`
	Deployment      Str               `yaml:"deployment"`
	Temperature     *float64          `yaml:"temperature"`
	TopP            *float64          `yaml:"top_p"`
	MaxTokens       int               `yaml:"max_tokens"`
	MaxTokensField  Str               `yaml:"max_tokens_field"`
	Seed            *int              `yaml:"seed"`
	ReasoningEffort Str               `yaml:"reasoning_effort"`
	Stream          bool              `yaml:"stream"`
	JSONMode        Str               `yaml:"json_mode"`
	Omit            StrList           `yaml:"omit"`
	Extra           Map[RequestField] `yaml:"extra"`
	Price           *Price            `yaml:"price"`
	PromptCache     Str               `yaml:"prompt_cache"`
}

// RequestField is a value of extra: any YAML, sent as JSON.
type RequestField struct {
	Node *yaml.Node
}

// UnmarshalYAML keeps the node, to be converted (and checked) when the spec
// is compiled.
func (f *RequestField) UnmarshalYAML(n *yaml.Node) error {
	f.Node = n
	return nil
}

// Price is what a model costs, in currency units per million tokens.
type Price struct {
	Prompt     float64 `yaml:"prompt"`
	Completion float64 `yaml:"completion"`
	// CachedPrompt is the price of prompt tokens the provider served from
	// its prompt cache; nil means the prompt price.
	CachedPrompt *float64 `yaml:"cached_prompt"`
	// CacheWrite is the price of prompt tokens the provider wrote to its
	// prompt cache (Anthropic's cache writes, 1.25x the prompt price for
	// its five-minute cache); nil means the prompt price.
	CacheWrite *float64 `yaml:"cache_write"`
	// Builtin is BuiltinPricesDate when the price is the built-in list
	// price of a model the spec gives no price (see BuiltinPrice).
	Builtin string `yaml:"-"`
}

// Cost is what a call with these token counts costs; cached are the prompt
// tokens the provider served from its cache (a part of prompt).
func (p *Price) Cost(prompt, cached, completion int) float64 {
	return p.CostWritten(prompt, cached, 0, completion)
}

// CostWritten is Cost with written, the prompt tokens the provider wrote to
// its cache (a part of prompt, apart from cached), at the cache_write price.
func (p *Price) CostWritten(prompt, cached, written, completion int) float64 {
	cachedPrice, writePrice := p.Prompt, p.Prompt
	if p.CachedPrompt != nil {
		cachedPrice = *p.CachedPrompt
	}
	if p.CacheWrite != nil {
		writePrice = *p.CacheWrite
	}
	cached = min(max(cached, 0), prompt)
	written = min(max(written, 0), prompt-cached)
	return (float64(prompt-cached-written)*p.Prompt + float64(cached)*cachedPrice + float64(written)*writePrice + float64(completion)*p.Completion) / 1e6
}

// UnmarshalYAML accepts the string shorthand.
func (m *Model) UnmarshalYAML(n *yaml.Node) error {
	n = ResolveAlias(n)
	if n.Kind == yaml.ScalarNode {
		m.Model = n.Value
		return nil
	}
	type plain Model
	return n.Decode((*plain)(m))
}

// Templates says which template libraries a spec uses and which templates it
// defines itself.
type Templates struct {
	Use    StrList  `yaml:"use"`
	Define Map[Str] `yaml:"define"`
}

// Agent is a participant of the debate.
type Agent struct {
	Name    string         `yaml:"name"`
	Role    string         `yaml:"role"`
	Model   Str            `yaml:"model"`
	System  Str            `yaml:"system"`
	Persona *value.Persona `yaml:"persona"`
	Tools   StrList        `yaml:"tools"`
	// Human makes the agent a seat a person plays: its turns wait for the
	// person's message instead of calling its model.
	Human Value[bool]    `yaml:"human"`
	Vars  map[string]any `yaml:"vars"`
	// Replicas, when set, makes the declaration N agents (a number, or an
	// expression over vars such as vars.n), or one agent per element of a
	// list ({from: vars.panel}).
	Replicas Replicas `yaml:"replicas"`
	// Topology, on a replicated declaration, says which of its agents
	// hear which: complete, ring, star, tree, or a mapping of agent id to
	// the ids it hears.
	Topology Topology `yaml:"topology"`
	// Recruit, when set, makes the declaration a group of up to Max
	// agents whose names, personas and models a recruit node gives at
	// run time from a list.
	Recruit *Recruit `yaml:"recruit"`
}

// Recruit is an agent's recruit: as written.
type Recruit struct {
	// Max is the most agents the group has: a whole number or an
	// expression over vars.
	Max Expr `yaml:"max"`
	// Models are the models a member may name (default: the
	// declaration's model).
	Models StrList `yaml:"models"`
	Pos    Pos     `yaml:"-"`
}

// UnmarshalYAML keeps where recruit: is.
func (r *Recruit) UnmarshalYAML(n *yaml.Node) error {
	n = ResolveAlias(n)
	r.Pos = NodePos(n)
	type plain Recruit
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	p.Pos = r.Pos
	*r = Recruit(p)
	return nil
}

// Replicas is an agent's replicas: as written: a count (Count), or a list
// of panel members (From) whose elements are a model, or a mapping with
// model, name, role, persona and vars.
type Replicas struct {
	Count Expr
	From  Expr
}

// IsZero says replicas: is absent.
func (r Replicas) IsZero() bool { return r.Count.Source == "" && r.From.Source == "" }

// UnmarshalYAML accepts a scalar (the count) or {from: EXPR}.
func (r *Replicas) UnmarshalYAML(n *yaml.Node) error {
	n = ResolveAlias(n)
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&r.Count)
	}
	if n.Kind != yaml.MappingNode {
		return typeErrorf(n, "replicas is a number, an expression over vars, or {from: EXPR} giving a list, found %s", KindName(n))
	}
	var m struct {
		From Expr `yaml:"from"`
	}
	if err := n.Decode(&m); err != nil {
		return err
	}
	r.From = m.From
	return nil
}

// Topology is an agent's topology: as written.
type Topology struct {
	// Shape is complete, ring, star or tree ("" when absent or custom).
	Shape Str
	// Edges is a custom adjacency list: agent id to the ids it hears.
	Edges Map[StrList]
	// From, when set, is an expression over vars giving the shape or the
	// adjacency list ({from: vars.shape}).
	From Expr
	Pos  Pos
	Set  bool
}

// UnmarshalYAML accepts a shape's name or an adjacency mapping.
func (t *Topology) UnmarshalYAML(n *yaml.Node) error {
	n = ResolveAlias(n)
	t.Pos, t.Set = NodePos(n), true
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&t.Shape)
	}
	if n.Kind != yaml.MappingNode {
		return typeErrorf(n, "topology is complete, ring, star, tree or a mapping of agent id to the ids it hears, found %s", KindName(n))
	}
	if len(n.Content) == 2 && n.Content[0].Value == "from" {
		// (no replica id is "from": they end in _N)
		return n.Content[1].Decode(&t.From)
	}
	return n.Decode(&t.Edges)
}

// Goal is one topic of a goal-chained debate.
type Goal struct {
	ID          Str            `yaml:"id"`
	Description string         `yaml:"description"`
	Vars        map[string]any `yaml:"vars"`
	// Concluded says when the goal reached a conclusion (see
	// Plan.GoalConcluded).
	Concluded Expr `yaml:"concluded"`
}

// History configures how earlier messages reach prompts.
type History struct {
	Summarize *Summarize `yaml:"summarize"`
}

// Summarize turns a long history into a model-written summary.
type Summarize struct {
	OverChars int `yaml:"over_chars"`
	// OverTokens is the threshold in tokens (of the summary model's
	// tokenizer), instead of OverChars.
	OverTokens int `yaml:"over_tokens"`
	// Keep is, for a conversation's own summaries (a converse node's
	// summarize: mapping), how many of the latest messages stay verbatim
	// when a summary is made.
	Keep     *int    `yaml:"keep"`
	MaxChars int     `yaml:"max_chars"`
	Template Str     `yaml:"template"`
	Model    Str     `yaml:"model"`
	Records  StrList `yaml:"records"`
	When     Expr    `yaml:"when"`
	Measure  Str     `yaml:"measure"`
	// Pos is where the mapping starts.
	Pos Pos `yaml:"-"`
}

// UnmarshalYAML keeps the mapping's position.
func (s *Summarize) UnmarshalYAML(n *yaml.Node) error {
	type plain Summarize
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*s = Summarize(p)
	s.Pos = NodePos(n)
	return nil
}

// NodeDecl is a node as declared. The fields every kind shares are decoded
// here; the kind decodes the rest from Raw.
type NodeDecl struct {
	Kind        Str
	Agents      StrList
	Description string
	Raw         *yaml.Node
	Pos         Pos
}

// UnmarshalYAML keeps the raw mapping for the kind's decoder.
func (d *NodeDecl) UnmarshalYAML(n *yaml.Node) error {
	n = ResolveAlias(n)
	d.Raw = n
	d.Pos = NodePos(n)
	var common struct {
		Kind        Str     `yaml:"kind"`
		Agents      StrList `yaml:"agents"`
		Description string  `yaml:"description"`
	}
	err := n.Decode(&common)
	d.Kind, d.Agents, d.Description = common.Kind, common.Agents, common.Description
	return err
}

// Step is one entry of a flow: a node to run, a loop, a foreach or an if.
type Step struct {
	Pos     Pos
	Node    Str
	Loop    *LoopStep
	Foreach *ForeachStep
	If      *IfStep
}

// LoopStep repeats its body until a condition holds or a bound is reached.
type LoopStep struct {
	As    Str  `yaml:"as"`
	Max   Expr `yaml:"max"`
	Until Expr `yaml:"until"`
	// Break ends the loop after any step of its body at which it holds.
	Break Expr   `yaml:"break"`
	Do    []Step `yaml:"do"`
}

// ForeachStep runs its body once per element of a list.
type ForeachStep struct {
	In Expr   `yaml:"in"`
	As Str    `yaml:"as"`
	Do []Step `yaml:"do"`
	// Concurrency is how many iterations may run at once (default 1).
	Concurrency Value[int] `yaml:"concurrency"`
}

// IfStep runs one branch or the other.
type IfStep struct {
	Cond Expr
	Then []Step
	Else []Step
}

// UnmarshalYAML accepts a node name, {loop: ...}, {foreach: ...} or
// {if: COND, then: [...], else: [...]}.
func (s *Step) UnmarshalYAML(n *yaml.Node) error {
	n = ResolveAlias(n)
	s.Pos = NodePos(n)
	switch n.Kind {
	case yaml.ScalarNode:
		s.Node = Str{V: n.Value, Pos: NodePos(n), Set: true}
		return nil
	case yaml.MappingNode:
		var raw struct {
			Loop    *LoopStep    `yaml:"loop"`
			Foreach *ForeachStep `yaml:"foreach"`
			If      *Expr        `yaml:"if"`
			Then    []Step       `yaml:"then"`
			Else    []Step       `yaml:"else"`
		}
		err := n.Decode(&raw)
		s.Loop, s.Foreach = raw.Loop, raw.Foreach
		if raw.If != nil {
			s.If = &IfStep{Cond: *raw.If, Then: raw.Then, Else: raw.Else}
		}
		return err
	}
	return typeErrorf(n, "a flow step is a node id or a mapping with loop, foreach or if, found %s", KindName(n))
}

// MCPServer declares a Model Context Protocol server whose tools agents may
// call: a command the run starts (stdio), or a streamable HTTP URL.
type MCPServer struct {
	Command Str      `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     Map[Str] `yaml:"env"`
	URL     Str      `yaml:"url"`
	Headers Map[Str] `yaml:"headers"`
	Tools   StrList  `yaml:"tools"`
	Timeout Str      `yaml:"timeout"`
}
