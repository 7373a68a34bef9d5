// Package clarify is the node kind in which agents ask the user clarifying
// questions before a debate; answers come from a file, a terminal, or a
// suspended run that waits for them.
package clarify

import (
	_ "embed"

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

// Compile implements spec.Kind.
func (Kind) Compile(c *spec.NodeContext) any {
	var raw struct {
		Template      spec.Str `yaml:"template"`
		System        spec.Str `yaml:"system"`
		Model         spec.Str `yaml:"model"`
		MaxQuestions  int      `yaml:"max_questions"`
		MaxIterations int      `yaml:"max_iterations"`
		Repair        *int     `yaml:"repair"`
	}
	c.Decode(&raw)
	cfg := &Config{
		Template:      c.Template(raw.Template),
		System:        c.Template(raw.System),
		Model:         c.Model(raw.Model),
		MaxQuestions:  5,
		MaxIterations: 1,
		Repair:        2,
	}
	if raw.MaxQuestions > 0 {
		cfg.MaxQuestions = raw.MaxQuestions
	}
	if raw.MaxIterations > 0 {
		cfg.MaxIterations = raw.MaxIterations
	}
	if raw.Repair != nil {
		cfg.Repair = *raw.Repair
	}
	if len(c.Node.Agents) == 0 && c.Field("agents") == nil {
		c.Errorf(c.Decl.Pos, "has no agents: add agents: [ID, ...]")
	}
	return cfg
}
