// Package compute is the node kind that evaluates expressions into its
// output without calling a model: a majority vote each round that a loop's
// until reads, a running tally, a score.
package compute

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"
	"github.com/expr-lang/expr/vm"
)

//go:embed schema.json
var schema []byte

//go:embed example.yaml
var example string

// Kind is the compute node kind.
type Kind struct{}

// Name implements spec.Kind.
func (Kind) Name() string { return "compute" }

// Description implements spec.Kind.
func (Kind) Description() string {
	return "Evaluates expressions into the node's output, without a model call (a vote, a tally, a score)."
}

// Schema implements spec.Kind.
func (Kind) Schema() []byte { return schema }

// Example implements spec.Kind.
func (Kind) Example() string { return example }

// PromptData implements spec.Kind: a compute node renders no prompt.
func (Kind) PromptData() any { return nil }

// rawConfig is a compute node as written in YAML.
type rawConfig struct {
	Value syntax.Expr             `yaml:"value"`
	Set   syntax.Map[syntax.Expr] `yaml:"set"`
}

// Config is a compiled compute node: either one expression (Value) or
// named ones (Names, Set).
type Config struct {
	Value *spec.Program
	Names []string
	Set   []*spec.Program
}

// Compile implements kit.Def.
func (Kind) Compile(c *spec.NodeContext, raw *rawConfig) *Config {
	cfg := &Config{}
	if f := c.Field("agents"); f != nil {
		c.Errorf(c.FieldPos("agents"), "a compute node calls no model and has no agents; remove agents")
	}
	switch {
	case !raw.Value.IsZero() && raw.Set.Len() > 0:
		c.Errorf(c.FieldPos("set"), "give value or set, not both")
	case raw.Value.IsZero() && raw.Set.Len() == 0:
		c.Errorf(c.Decl.Pos, "needs value: EXPRESSION or set: {NAME: EXPRESSION, ...}")
	case !raw.Value.IsZero():
		cfg.Value = c.Expr(raw.Value, nil, spec.AnyResult, "value")
	default:
		for _, k := range raw.Set.Keys {
			cfg.Names = append(cfg.Names, k.V)
			cfg.Set = append(cfg.Set, c.Expr(*raw.Set.Values[k.V], nil, spec.AnyResult, "set."+k.V))
		}
	}
	c.SetOutputOf(func(typeOf func(*spec.Program) *spec.Type) *spec.Type {
		if cfg.Value != nil {
			return typeOf(cfg.Value)
		}
		t := spec.ObjectOf()
		for i, name := range cfg.Names {
			t.Fields = append(t.Fields, spec.Field{Name: name, Type: typeOf(cfg.Set[i])})
		}
		return t
	})
	return cfg
}

// Execute implements kit.Def: it evaluates the expressions in the flow's
// environment at this point of the run.
func (Kind) Execute(_ context.Context, h kit.Host, node *spec.NodePlan, cfg *Config) (value.NodeResult, error) {
	env := h.Env().Map()
	eval := func(p *spec.Program, what string) (any, error) {
		v, err := vm.Run(p.Program, env)
		if err != nil {
			return nil, fmt.Errorf("node %q: %s (%s): %w", node.ID, what, p.Source, errors.New(strings.SplitN(err.Error(), "\n", 2)[0]))
		}
		// A NaN or an infinity cannot be journaled: the node fails here,
		// naming the expression, rather than the journal later.
		if err := spec.CheckFinite(p, fmt.Sprintf("node %q: %s", node.ID, what), v); err != nil {
			return nil, err
		}
		// groupBy and fromPairs key by any value: the journal writes text keys.
		return spec.JSONValue(v), nil
	}
	var out any
	if cfg.Value != nil {
		v, err := eval(cfg.Value, "value")
		if err != nil {
			return value.NodeResult{}, err
		}
		out = v
	} else {
		m := make(map[string]any, len(cfg.Names))
		for i, name := range cfg.Names {
			v, err := eval(cfg.Set[i], "set."+name)
			if err != nil {
				return value.NodeResult{}, err
			}
			m[name] = v
		}
		out = m
	}
	return value.NodeResult{Output: out, Outputs: map[string]any{}, Text: text(out)}, nil
}

// text is the output as nodes.ID.text shows it: text as it is, anything
// else as JSON.
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if b, err := json.Marshal(v); err == nil {
		return string(b)
	}
	return fmt.Sprint(v)
}
