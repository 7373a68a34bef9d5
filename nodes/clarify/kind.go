// Package clarify is the node kind in which agents ask the user clarifying
// questions before a debate; answers come from a file, a terminal, or a
// suspended run that waits for them.
package clarify

import (
	_ "embed"
	"fmt"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/spec"
)

//go:embed schema.json
var schema []byte

// Kind is the clarify node kind.
type Kind struct{}

// Name implements spec.Kind.
func (Kind) Name() string { return "clarify" }

// Description implements spec.Kind.
func (Kind) Description() string {
	return "Agents ask the user clarifying questions (JSON); answers come from --answers, a terminal, or the run waits."
}

// Schema implements spec.Kind.
func (Kind) Schema() []byte { return schema }

// Config is a compiled clarify node.
type Config struct {
	Template      string
	System        string
	Model         *spec.ModelPlan
	MaxQuestions  int
	MaxIterations int
	Repair        int
}

// PromptData is the dot of a clarify node's prompt and system templates.
type PromptData struct {
	value.PromptBase
	// Questions are the questions asked so far, with their answers.
	Questions []value.Question
	// MaxQuestions is how many questions the agent may ask now.
	MaxQuestions int
}

// PromptData implements spec.Kind.
func (Kind) PromptData() any { return PromptData{} }

//go:embed example.yaml
var example string

// Example implements spec.Kind.
func (Kind) Example() string { return example }

// rawConfig is a clarify node as written in YAML.
type rawConfig struct {
	Template      syntax.Str  `yaml:"template"`
	System        syntax.Str  `yaml:"system"`
	Model         syntax.Str  `yaml:"model"`
	MaxQuestions  syntax.Expr `yaml:"max_questions"`
	MaxIterations syntax.Expr `yaml:"max_iterations"`
	Repair        syntax.Expr `yaml:"repair"`
}

// OutputType is the type of a clarify node's output: every question asked,
// with its answer.
var OutputType = spec.ListOf(spec.ObjectOf(
	spec.Field{Name: "id", Type: spec.TypeString},
	spec.Field{Name: "agent", Type: spec.TypeString},
	spec.Field{Name: "question", Type: spec.TypeString},
	spec.Field{Name: "answer", Type: spec.TypeString},
))

// Compile implements kit.Def.
func (Kind) Compile(c *spec.NodeContext, raw *rawConfig) *Config {
	cfg := &Config{
		Template:      c.Template(raw.Template),
		Model:         c.Model(raw.Model),
		MaxQuestions:  5,
		MaxIterations: 1,
		Repair:        2,
	}
	if raw.System.Set {
		cfg.System = c.Template(raw.System)
	} else {
		for _, a := range c.Node.Agents {
			c.AgentSystem(a)
		}
	}
	for _, a := range c.Node.Agents {
		c.AgentModel(a, cfg.Model)
		if a.Human {
			// Its questions are a JSON reply; a person at a seat asks hers
			// in the conversation instead.
			c.Errorf(c.FieldPos("agents"), "agent %q is played by a person (human: true): a clarify node's agents are models that ask the user; leave it out of agents", a.ID)
		}
	}
	cfg.MaxQuestions = c.Count(raw.MaxQuestions, "max_questions", 1, 50, cfg.MaxQuestions)
	cfg.MaxIterations = c.Count(raw.MaxIterations, "max_iterations", 1, 10, cfg.MaxIterations)
	cfg.Repair = c.Count(raw.Repair, "repair", 0, 10, cfg.Repair)
	if len(c.Node.Agents) == 0 && c.Field("agents") == nil {
		c.Errorf(c.Decl.Pos, "has no agents: add agents: [ID, ...]")
	}
	c.SetOutput(OutputType, spec.TypeAny)
	return cfg
}

// Detail implements kit.DetailOf.
func (Kind) Detail(n *spec.NodePlan, cfg *Config) string {
	agents := fmt.Sprintf("%d agents", len(n.Agents))
	if len(n.Agents) == 1 {
		agents = "1 agent"
	}
	return fmt.Sprintf("%s x up to %d iterations", agents, cfg.MaxIterations)
}
