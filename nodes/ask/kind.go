// Package ask is the node kind that asks each of its agents for a reply,
// optionally once per message of another record (each:), and parses it.
package ask

import (
	_ "embed"
	"encoding/json"
	"regexp"

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
func (Kind) Compile(c *spec.NodeContext) any {
	var raw rawConfig
	c.Decode(&raw)
	cfg := &Config{
		Template:     c.Template(raw.Template),
		System:       c.Template(raw.System),
		Model:        c.Model(raw.Model),
		Record:       raw.Record.V,
		CarryOver:    raw.CarryOver.V,
		Tools:        raw.Tools,
		MaxToolCalls: 4,
		Summarize:    true,
		Output:       Output{Format: FormatText, Repair: 2},
	}
	if len(c.Node.Agents) == 0 && c.Field("agents") == nil {
		c.Errorf(c.Decl.Pos, "has no agents: add agents: [ID, ...]")
	}
	if raw.MaxToolCalls != nil {
		cfg.MaxToolCalls = *raw.MaxToolCalls
	}
	if raw.Summarize != nil {
		cfg.Summarize = *raw.Summarize
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
			switch {
			case hasSchema && o.SchemaRef.Set:
				c.Errorf(o.SchemaRef.Pos, "output has both schema and schema_ref; keep one")
			case hasSchema:
				cfg.Output.Schema = c.JSONSchema(&o.Schema)
				var doc any
				if o.Schema.Decode(&doc) == nil {
					cfg.Output.SchemaJSON, _ = json.Marshal(doc)
				}
			case o.SchemaRef.Set:
				cfg.Output.Schema = c.SchemaRef(o.SchemaRef)
				cfg.Output.SchemaJSON = c.Plan().SchemaSources[o.SchemaRef.V]
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
	}
	return cfg
}
