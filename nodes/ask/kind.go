// Package ask is the node kind that asks each of its agents for a reply,
// optionally once per message of another record (each:), and parses it.
package ask

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/nodes/chat"
	"github.com/debate-runner/runner/nodes/parse"
	"github.com/debate-runner/runner/spec"
	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"
)

//go:embed schema.json
var schema []byte

// Kind is the ask node kind.
type Kind struct{}

// Name implements spec.Kind.
func (Kind) Name() string { return "ask" }

// Description implements spec.Kind.
func (Kind) Description() string {
	return "One model call per agent (or per agent and message with each:), run concurrently, replies recorded and parsed."
}

// Schema implements spec.Kind: the kind's keys and the chat keys (thread,
// history, examples).
func (Kind) Schema() []byte { return fullSchema() }

// fullSchema is built on first use, not at every start of the binary.
var fullSchema = sync.OnceValue(func() []byte { return chat.Schema(schema) })

// From says whose messages an each: node answers.
type From string

// Values of From.
const (
	FromOthers From = "others"
	FromAll    From = "all"
	FromSelf   From = "self"
)

// Config is a compiled ask node.
type Config struct {
	Template string
	System   string
	Model    *spec.ModelPlan
	Record   string
	// CarryOver names the record whose latest message replaces the call from
	// the second round on.
	CarryOver    string
	Each         *Each
	Output       Output
	Tools        []string
	MaxToolCalls int
	Summarize    bool
	// Chat says how requests send earlier turns (nil: system and prompt).
	Chat *chat.Config
	// Sequential calls the agents one at a time, recording each reply
	// before the next call, so later agents see earlier replies.
	Sequential bool
	// Samples is how many independent calls each agent gets (SamplesExpr
	// when it is an expression).
	Samples     int
	SamplesExpr *spec.Program
	// Choices are options shown to the agents (labelled A, B, ...),
	// shuffled per call when asked.
	Choices *Choices
	// MinAnswers, when above 0, lets the node complete without the calls
	// that failed after their retries or whose replies stayed unusable
	// after their repairs (with no fallback), as long as at least this
	// many calls answered; their agents are absent (NodeResult.Absent),
	// each with a warning and an "absent" event. 0: every call must
	// answer. A resume (or a replay of the run) leaves a failed call of a
	// node that completed without it out again, without asking: the
	// "absent" event says so; an unusable reply is in the journal and is
	// judged again (a fixed spec may accept it).
	MinAnswers int
	// When, per agent and before its call, says whether the agent is asked
	// (Skip is its negation, what the host checks: a dry run's worst case
	// asks everyone). An agent not asked keeps its latest message of the
	// node's record, recorded again as carried.
	When, Skip *spec.Program
}

// Choices are a node's answer options.
type Choices struct {
	From    *spec.Program
	Shuffle bool
}

// Choice is an option as a prompt shows it.
type Choice struct {
	// Label is the letter shown (A, B, ...), Text the option, Original the
	// letter it has in the unshuffled list.
	Label, Text, Original string
}

// Each makes one call per message of a record.
type Each struct {
	Record string
	From   From
}

// Format is how a reply is parsed.
type Format string

// Output formats.
const (
	FormatText  Format = "text"
	FormatJSON  Format = "json"
	FormatTags  Format = "tags"
	FormatRegex Format = "regex"
)

// Output says how to parse and check replies.
type Output struct {
	Format Format
	Schema *jsonschema.Schema
	// SchemaJSON is the schema's text, sent to endpoints that take
	// response_format json_schema.
	SchemaJSON json.RawMessage
	// Patterns are tried in order; the first that matches gives the output.
	Patterns []*regexp.Regexp
	Fields   []string
	Repair   int
	// Resend re-asks an invalid reply with the identical request (no
	// feedback) instead of showing the reply and what is wrong with it.
	Resend bool
	// Fallback, when set, is used after the repairs are spent, instead of
	// failing the node: a mapping (with "text" set to the reply) or a
	// scalar such as "-1".
	Fallback any
}

// Repair modes.
const (
	RepairFeedback = "feedback"
	RepairResend   = "resend"
)

// PromptData is the dot of an ask node's prompt and system templates.
type PromptData struct {
	value.PromptBase
	// Target is the message being answered (each:).
	Target value.Message
	// Own is this agent's latest message of the node's record, if any.
	Own value.Message
	// Summary is the agent's history summary, when history.summarize
	// applied (else empty: the prompt shows the history).
	Summary string
	// Choices are the node's answer options in the order this call shows
	// them (shuffled with choices.shuffle).
	Choices []Choice
	// Sample is the call's sample number (1-based) with samples:, else 1.
	Sample int
}

// PromptData implements spec.Kind.
func (Kind) PromptData() any { return PromptData{} }

//go:embed example.yaml
var example string

// Example implements spec.Kind.
func (Kind) Example() string { return example }

// rawConfig is an ask node as written in YAML.
type rawConfig struct {
	chat.Raw `yaml:",inline"`
	Order    string      `yaml:"order"`
	Samples  syntax.Expr `yaml:"samples"`
	Choices  *struct {
		From    syntax.Expr `yaml:"from"`
		Shuffle bool        `yaml:"shuffle"`
	} `yaml:"choices"`
	Template  syntax.Str  `yaml:"template"`
	System    syntax.Str  `yaml:"system"`
	Model     syntax.Str  `yaml:"model"`
	Record    syntax.Str  `yaml:"record"`
	CarryOver syntax.Str  `yaml:"carry_over"`
	When      syntax.Expr `yaml:"when"`
	Each      *struct {
		Record syntax.Str `yaml:"record"`
		From   string     `yaml:"from"`
	} `yaml:"each"`
	Output *struct {
		Format     syntax.Str   `yaml:"format"`
		Schema     yaml.Node    `yaml:"schema"`
		SchemaRef  syntax.Str   `yaml:"schema_ref"`
		Pattern    syntax.Str   `yaml:"pattern"`
		Patterns   []syntax.Str `yaml:"patterns"`
		Fields     []string     `yaml:"fields"`
		Repair     syntax.Expr  `yaml:"repair"`
		RepairMode string       `yaml:"repair_mode"`
		Fallback   any          `yaml:"fallback"`
	} `yaml:"output"`
	Tools        []string    `yaml:"tools"`
	MaxToolCalls syntax.Expr `yaml:"max_tool_calls"`
	Summarize    *bool       `yaml:"summarize"`
	MinAnswers   syntax.Expr `yaml:"min_answers"`
}

// Compile implements kit.Def.
func (Kind) Compile(c *spec.NodeContext, raw *rawConfig) *Config {
	cfg := &Config{
		Template:     c.Template(raw.Template),
		Model:        c.Model(raw.Model),
		Record:       raw.Record.V,
		CarryOver:    raw.CarryOver.V,
		Tools:        raw.Tools,
		MaxToolCalls: 4,
		Summarize:    true,
		Output:       Output{Format: FormatText, Repair: 2},
	}
	if raw.System.Set {
		cfg.System = c.Template(raw.System)
	} else {
		for _, a := range c.Node.Agents {
			c.AgentSystem(a)
		}
	}
	if len(c.Node.Agents) == 0 && c.Field("agents") == nil {
		c.Errorf(c.Decl.Pos, "has no agents: add agents: [ID, ...]")
	}
	for _, a := range c.Node.Agents {
		c.AgentModel(a, cfg.Model)
	}
	cfg.MaxToolCalls = c.Count(raw.MaxToolCalls, "max_tool_calls", 0, math.MaxInt32, cfg.MaxToolCalls)
	if raw.Summarize != nil {
		cfg.Summarize = *raw.Summarize
	}
	if cfg.Summarize {
		c.UseSummaries()
	}
	if cfg.Record != "" {
		c.DeclareRecord(cfg.Record)
	}
	if raw.CarryOver.Set {
		c.RequireRecord(raw.CarryOver)
	}
	if !raw.When.IsZero() {
		compileWhen(c, raw, cfg)
	}
	cfg.Chat = chat.Compile(c, &raw.Raw)
	cfg.Sequential = raw.Order == "sequential"
	cfg.Samples = 1
	if src := strings.TrimSpace(raw.Samples.Source); src != "" {
		if n, err := strconv.Atoi(src); err == nil {
			if n < 1 || n > maxSamples {
				c.Errorf(raw.Samples.Pos, "samples is %d; it must be from 1 to %d", n, maxSamples)
			}
			cfg.Samples = n
		} else if c.IsCount(raw.Samples) {
			// Over vars and inputs only: fixed before the run (see
			// spec.Count), so that every part of the runner sees a number.
			cfg.Samples = c.Count(raw.Samples, "samples", 1, maxSamples, 1)
		} else {
			cfg.SamplesExpr = c.Expr(raw.Samples, nil, spec.IntResult, "samples")
		}
	}
	if !raw.MinAnswers.IsZero() {
		cfg.MinAnswers = c.Count(raw.MinAnswers, "min_answers", 1, math.MaxInt32, 1)
		calls := len(c.Node.Agents) * cfg.Samples
		switch {
		case cfg.MinAnswers < 1:
			c.Errorf(c.FieldPos("min_answers"), "min_answers is %d; it must be at least 1 (leave it out to require every answer)", cfg.MinAnswers)
		case raw.Each == nil && cfg.SamplesExpr == nil && len(c.Node.Agents) > 0 && cfg.MinAnswers > calls:
			c.Errorf(c.FieldPos("min_answers"), "min_answers is %d but the node makes %d call(s): it could never go on without one", cfg.MinAnswers, calls)
		}
	}
	if ch := raw.Choices; ch != nil {
		cfg.Choices = &Choices{From: c.Expr(ch.From, nil, spec.AnyResult, "choices.from"), Shuffle: ch.Shuffle}
		if ch.From.IsZero() {
			c.Errorf(c.FieldPos("choices"), "choices needs from: an expression giving the options (a list, or text with one option per line)")
		}
	}
	if cfg.Chat != nil && cfg.Chat.Thread != "" {
		switch {
		case raw.Each != nil:
			c.Errorf(c.FieldPos("thread"), "a thread takes one call per agent and node: it cannot be combined with each:")
		case cfg.Samples > 1 || cfg.SamplesExpr != nil:
			c.Errorf(c.FieldPos("thread"), "a thread takes one call per agent and node: it cannot be combined with samples:")
		}
	}
	if raw.Each != nil {
		cfg.Each = &Each{Record: raw.Each.Record.V, From: From(raw.Each.From)}
		if cfg.Each.From == "" {
			cfg.Each.From = FromOthers
		}
		c.RequireRecord(raw.Each.Record)
		if cfg.Each.From == FromOthers && len(c.Node.Agents) == 1 {
			c.Warnf(c.FieldPos("each"), "each: {from: others} with a single agent makes no calls")
		}
	}
	out := spec.TypeString
	if o := raw.Output; o != nil {
		if o.Format.Set {
			cfg.Output.Format = Format(o.Format.V)
		}
		cfg.Output.Repair = c.Count(o.Repair, "output.repair", 0, 10, cfg.Output.Repair)
		cfg.Output.Fields = o.Fields
		cfg.Output.Fallback = o.Fallback
		cfg.Output.Resend = o.RepairMode == RepairResend
		if _, isMap := o.Fallback.(map[string]any); o.Fallback != nil && !isMap && !scalar(o.Fallback) {
			c.Errorf(c.FieldPos("output"), "output fallback must be a mapping or a single value (text, number, boolean), not a list")
		}
		hasSchema := o.Schema.Kind != 0
		switch cfg.Output.Format {
		case FormatJSON:
			out = spec.TypeAny
			switch {
			case hasSchema && o.SchemaRef.Set:
				c.Errorf(o.SchemaRef.Pos, "output has both schema and schema_ref; keep one")
			case hasSchema:
				cfg.Output.Schema, cfg.Output.SchemaJSON = c.JSONSchema(&o.Schema)
			case o.SchemaRef.Set:
				cfg.Output.Schema, cfg.Output.SchemaJSON = c.SchemaRef(o.SchemaRef)
			}
			if cfg.Output.Schema != nil {
				var at *yaml.Node
				if hasSchema {
					at = &o.Schema
				}
				if inst, ok := c.SatisfiableSchema(at, o.SchemaRef, cfg.Output.SchemaJSON, cfg.Output.Schema); ok {
					exerciseJSON(c, cfg.Output.Schema, inst)
				}
			}
			if cfg.Output.SchemaJSON != nil {
				var doc any
				if json.Unmarshal(cfg.Output.SchemaJSON, &doc) == nil {
					out = spec.TypeOfSchema(doc)
				}
			}
		case FormatRegex:
			patterns := o.Patterns
			if o.Pattern.Set {
				patterns = append([]syntax.Str{o.Pattern}, patterns...)
			}
			if len(patterns) == 0 {
				c.Errorf(c.FieldPos("output"), "output format regex needs a pattern (or patterns, tried in order)")
				break
			}
			var types []*spec.Type
			for _, p := range patterns {
				re, err := regexp.Compile(p.V)
				if err != nil {
					c.Errorf(p.Pos, "output pattern: %v", err)
					continue
				}
				cfg.Output.Patterns = append(cfg.Output.Patterns, re)
				types = append(types, regexType(re))
				exerciseRegex(c, p.Pos, re)
			}
			out = sameType(types)
		case FormatTags:
			out = spec.MapOf(spec.TypeString)
		}
		if cfg.Output.Format != FormatJSON && (hasSchema || o.SchemaRef.Set) {
			c.Errorf(c.FieldPos("output"), "output schema applies only to format json (format is %s)", cfg.Output.Format)
		}
		if cfg.Output.Format != FormatRegex && o.Pattern.Set {
			c.Errorf(o.Pattern.Pos, "output pattern applies only to format regex (format is %s)", cfg.Output.Format)
		}
		if cfg.Output.Format != FormatRegex && len(o.Patterns) > 0 {
			c.Errorf(o.Patterns[0].Pos, "output patterns apply only to format regex (format is %s)", cfg.Output.Format)
		}
		if cfg.Output.Format != FormatTags && len(o.Fields) > 0 {
			c.Errorf(c.FieldPos("output"), "output fields apply only to format tags (format is %s)", cfg.Output.Format)
		}
		if o.Fallback != nil {
			checkFallback(c, &cfg.Output, o.Fallback)
			out = withFallback(out, o.Fallback)
		}
	}
	c.SetOutput(out, nil)
	return cfg
}

// checkFallback refuses a fallback the node's own replies could never
// give: one that fails the JSON schema, or lacks a tag or a named group
// that expressions read as the output's fields. Otherwise the run fails
// only when a reply is unreadable, in whatever reads the output next.
func checkFallback(c *spec.NodeContext, o *Output, fb any) {
	at := c.FieldIn("output", "fallback")
	pos := c.FieldPos("output")
	if at != nil {
		pos = syntax.Pos{Line: at.Line, Col: at.Column}
	}
	var keys []string
	switch o.Format {
	case FormatJSON:
		c.CheckFallback(at, o.Schema)
		return
	case FormatTags:
		for _, f := range o.Fields {
			keys = append(keys, strings.ToLower(f))
		}
	case FormatRegex:
		for _, re := range o.Patterns {
			for _, n := range re.SubexpNames() {
				if n != "" && !slices.Contains(keys, n) {
					keys = append(keys, n)
				}
			}
		}
	}
	if len(keys) == 0 {
		return
	}
	m, isMap := fb.(map[string]any)
	if !isMap {
		c.Errorf(pos, "output fallback must be a mapping with %s, like the %s output it stands in for", strings.Join(keys, ", "), o.Format)
		return
	}
	var lacks []string
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			lacks = append(lacks, k)
		}
	}
	c.FallbackLacks(pos, lacks...)
}

// exerciseJSON runs a reply holding inst, an instance the output schema
// accepts, through the reply parser: a schema no reply can pass as parsed
// (the parser finds other JSON in it, say) is an error.
func exerciseJSON(c *spec.NodeContext, sch *jsonschema.Schema, inst any) {
	data, err := json.Marshal(inst)
	if err != nil {
		return
	}
	if _, err := (parse.Spec{Format: string(FormatJSON), Schema: sch}).Parse(string(data)); err != nil {
		c.Errorf(c.FieldPos("output"), "a reply holding %s, which the output schema accepts, does not parse: %v", data, err)
	}
}

// exerciseRegex checks that some reply gives a non-empty output under the
// pattern: one that matches only empty text is an error, one for which no
// such reply was found a warning.
func exerciseRegex(c *spec.NodeContext, pos syntax.Pos, re *regexp.Regexp) {
	if spec.RegexMatchesOnlyEmpty(re) {
		c.Errorf(pos, "output pattern %s matches only empty text; no reply can give an output", re)
		return
	}
	p := parse.Spec{Format: string(FormatRegex), Patterns: []*regexp.Regexp{re}}
	for _, ex := range spec.RegexExamples(re) {
		out, err := p.Parse(ex)
		if err == nil && !emptyOutput(out.Value) {
			return
		}
	}
	c.Warnf(pos, "validate found no reply for which output pattern %s gives a non-empty output; check that one exists", re)
}

// emptyOutput reports a regex output with no text: "" or named groups
// that are all "".
func emptyOutput(v any) bool {
	switch x := v.(type) {
	case string:
		return x == ""
	case map[string]any:
		for _, g := range x {
			if s, _ := g.(string); s != "" {
				return false
			}
		}
		return true
	}
	return false
}

// regexType is the output of a regex format: the named groups, else the
// first group or the whole match, as text.
func regexType(re *regexp.Regexp) *spec.Type {
	var fields []spec.Field
	for _, n := range re.SubexpNames() {
		if n != "" {
			fields = append(fields, spec.Field{Name: n, Type: spec.TypeString})
		}
	}
	if len(fields) > 0 {
		return spec.ObjectOf(fields...)
	}
	return spec.TypeString
}

// maxSamples bounds samples: per agent and call of a node.
const maxSamples = 1000

// scalar reports whether a YAML value is a single value.
func scalar(v any) bool {
	switch v.(type) {
	case string, int, int64, uint64, float64, bool:
		return true
	}
	return false
}

// sameType is the output type of several patterns: theirs when they agree,
// else any.
func sameType(types []*spec.Type) *spec.Type {
	if len(types) == 0 {
		return spec.TypeString
	}
	for _, t := range types[1:] {
		if t.String() != types[0].String() {
			return spec.TypeAny
		}
	}
	return types[0]
}

// withFallback widens an output type by a fallback output: an object gains
// the fallback's keys and "text" (the reply); a text output stays text
// with a text fallback; anything else may now also be the fallback, so it
// is of any type.
func withFallback(t *spec.Type, fb any) *spec.Type {
	fallback, isMap := fb.(map[string]any)
	if !isMap {
		if _, isText := fb.(string); isText && t.Kind == spec.StringType {
			return t
		}
		return spec.TypeAny
	}
	if t.Kind != spec.ObjectType {
		return spec.TypeAny
	}
	out := spec.ObjectOf(t.Fields...)
	add := func(name string, ft *spec.Type) {
		if _, ok := out.Field(name); !ok {
			out.Fields = append(out.Fields, spec.Field{Name: name, Type: ft})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(fallback)) {
		add(k, spec.TypeAny)
	}
	add("text", spec.TypeString)
	return out
}

// Detail implements kit.DetailOf.
func (Kind) Detail(n *spec.NodePlan, cfg *Config) string {
	parts := []string{plural(len(n.Agents), "agent")}
	if cfg.Each != nil {
		parts = append(parts, fmt.Sprintf("each %s message (%s)", cfg.Each.Record, cfg.Each.From))
	}
	if cfg.CarryOver != "" {
		parts = append(parts, "carry_over "+cfg.CarryOver+" from round 2")
	}
	if cfg.Samples > 1 {
		parts = append(parts, fmt.Sprintf("%d samples each", cfg.Samples))
	} else if cfg.SamplesExpr != nil {
		parts = append(parts, "samples "+cfg.SamplesExpr.Source)
	}
	if cfg.Sequential {
		parts = append(parts, "one after another")
	}
	if cfg.Chat != nil && cfg.Chat.Thread != "" {
		parts = append(parts, "thread "+cfg.Chat.Thread)
	}
	if cfg.Output.Repair > 0 && cfg.Output.Format != FormatText && cfg.Output.Format != "" {
		mode := ""
		if cfg.Output.Resend {
			mode = " (resend)"
		}
		parts = append(parts, fmt.Sprintf("repair %d%s", cfg.Output.Repair, mode))
	}
	if cfg.MaxToolCalls > 0 && len(cfg.Tools) > 0 {
		parts = append(parts, fmt.Sprintf("up to %d tool calls", cfg.MaxToolCalls))
	}
	if cfg.MinAnswers > 0 {
		parts = append(parts, fmt.Sprintf("goes on with %d answer(s) or more", cfg.MinAnswers))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// WhenSample is the environment a per-agent when adds: the agent about to
// be asked, and its earlier messages of the node's record in the goal
// (oldest first).
func WhenSample() map[string]any {
	return map[string]any{"agent": value.AgentView{}, "own": []value.Message{}}
}

// compileWhen checks a per-agent when: it needs a record (an agent not
// asked keeps its latest message of it) and one call per agent.
func compileWhen(c *spec.NodeContext, raw *rawConfig, cfg *Config) {
	pos := c.FieldPos("when")
	switch {
	case !raw.Record.Set:
		c.Errorf(pos, "when needs record: an agent not asked keeps its latest message of the node's record")
	case raw.Each != nil || raw.CarryOver.Set || strings.TrimSpace(raw.Samples.Source) != "":
		c.Errorf(pos, "when decides one call per agent: it cannot be combined with each, carry_over or samples")
	}
	cfg.When = c.Expr(raw.When, WhenSample(), spec.BoolResult, "when")
	if cfg.When != nil {
		cfg.Skip = c.Expr(raw.When.Negated(), WhenSample(), spec.BoolResult, "when")
	}
}
