// Package ask is the node kind that asks each of its agents for a reply,
// optionally once per message of another record (each:), and parses it.
package ask

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

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

// Schema implements spec.Kind.
func (Kind) Schema() []byte { return schema }

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
	Pattern    *regexp.Regexp
	Fields     []string
	Repair     int
	// Fallback, when set, is used (with "text" set to the reply) after the
	// repairs are spent, instead of failing the node.
	Fallback map[string]any
}

// PromptData is the dot of an ask node's prompt and system templates.
type PromptData struct {
	spec.PromptBase
	// Target is the message being answered (each:).
	Target spec.Message
	// Own is this agent's latest message of the node's record, if any.
	Own spec.Message
	// Summary is the agent's history summary, when history.summarize
	// applied (else empty: the prompt shows the history).
	Summary string
}

// PromptData implements spec.Kind.
func (Kind) PromptData() any { return PromptData{} }

//go:embed example.yaml
var example string

// Example implements spec.Kind.
func (Kind) Example() string { return example }

// NewConfig implements spec.Kind.
func (Kind) NewConfig() any { return &rawConfig{} }

// rawConfig is an ask node as written in YAML.
type rawConfig struct {
	Template  spec.Str `yaml:"template"`
	System    spec.Str `yaml:"system"`
	Model     spec.Str `yaml:"model"`
	Record    spec.Str `yaml:"record"`
	CarryOver spec.Str `yaml:"carry_over"`
	Each      *struct {
		Record spec.Str `yaml:"record"`
		From   string   `yaml:"from"`
	} `yaml:"each"`
	Output *struct {
		Format    spec.Str       `yaml:"format"`
		Schema    yaml.Node      `yaml:"schema"`
		SchemaRef spec.Str       `yaml:"schema_ref"`
		Pattern   spec.Str       `yaml:"pattern"`
		Fields    []string       `yaml:"fields"`
		Repair    *int           `yaml:"repair"`
		Fallback  map[string]any `yaml:"fallback"`
	} `yaml:"output"`
	Tools        []string `yaml:"tools"`
	MaxToolCalls *int     `yaml:"max_tool_calls"`
	Summarize    *bool    `yaml:"summarize"`
}

// Compile implements spec.Kind.
func (Kind) Compile(c *spec.NodeContext, r any) any {
	raw := r.(*rawConfig)
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
	if raw.MaxToolCalls != nil {
		cfg.MaxToolCalls = *raw.MaxToolCalls
	}
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
		if o.Repair != nil {
			cfg.Output.Repair = *o.Repair
		}
		cfg.Output.Fields = o.Fields
		cfg.Output.Fallback = o.Fallback
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
			if cfg.Output.SchemaJSON != nil {
				var doc any
				if json.Unmarshal(cfg.Output.SchemaJSON, &doc) == nil {
					out = spec.TypeOfSchema(doc)
				}
			}
		case FormatRegex:
			if !o.Pattern.Set {
				c.Errorf(c.FieldPos("output"), "output format regex needs a pattern")
				break
			}
			re, err := regexp.Compile(o.Pattern.V)
			if err != nil {
				c.Errorf(o.Pattern.Pos, "output pattern: %v", err)
				break
			}
			cfg.Output.Pattern = re
			out = regexType(re)
		case FormatTags:
			out = spec.MapOf(spec.TypeString)
		}
		if cfg.Output.Format != FormatJSON && (hasSchema || o.SchemaRef.Set) {
			c.Errorf(c.FieldPos("output"), "output schema applies only to format json (format is %s)", cfg.Output.Format)
		}
		if cfg.Output.Format != FormatRegex && o.Pattern.Set {
			c.Errorf(o.Pattern.Pos, "output pattern applies only to format regex (format is %s)", cfg.Output.Format)
		}
		if cfg.Output.Format != FormatTags && len(o.Fields) > 0 {
			c.Errorf(c.FieldPos("output"), "output fields apply only to format tags (format is %s)", cfg.Output.Format)
		}
		if o.Fallback != nil {
			out = withFallback(out, o.Fallback)
		}
	}
	c.SetOutput(out, nil)
	return cfg
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

// withFallback widens an output type by a fallback output: an object gains
// the fallback's keys and "text" (the reply); anything else may now also be
// a mapping, so it is of any type.
func withFallback(t *spec.Type, fallback map[string]any) *spec.Type {
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

// Detail implements kit.Describer.
func (Kind) Detail(n *spec.NodePlan) string {
	cfg, ok := n.Config.(*Config)
	if !ok {
		return ""
	}
	parts := []string{plural(len(n.Agents), "agent")}
	if cfg.Each != nil {
		parts = append(parts, fmt.Sprintf("each %s message (%s)", cfg.Each.Record, cfg.Each.From))
	}
	if cfg.CarryOver != "" {
		parts = append(parts, "carry_over "+cfg.CarryOver+" from round 2")
	}
	if cfg.Output.Repair > 0 && cfg.Output.Format != FormatText && cfg.Output.Format != "" {
		parts = append(parts, fmt.Sprintf("repair %d", cfg.Output.Repair))
	}
	if cfg.MaxToolCalls > 0 && len(cfg.Tools) > 0 {
		parts = append(parts, fmt.Sprintf("up to %d tool calls", cfg.MaxToolCalls))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
