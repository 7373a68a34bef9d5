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
	"reflect"
	"slices"
	"strings"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
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
	// current is the output type as last built (entries read the types of
	// those before them).
	var current *spec.Type
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
		for i, k := range raw.Set.Keys {
			e := *raw.Set.Values[k.V]
			checkEntryReads(c, e, raw.Set.Keys[:i], raw.Set.Keys[i:], k.V)
			cfg.Names = append(cfg.Names, k.V)
			n := i
			cfg.Set = append(cfg.Set, c.ExprTyped(e, map[string]any{EntriesName: map[string]any{}},
				func() map[string]any { return map[string]any{EntriesName: entriesSample(current, n)} }, spec.AnyResult, "set."+k.V))
		}
	}
	c.SetOutputOf(func(typeOf func(*spec.Program) *spec.Type) *spec.Type {
		if cfg.Value != nil {
			return typeOf(cfg.Value)
		}
		t := spec.ObjectOf()
		for i, name := range cfg.Names {
			t.Fields = append(t.Fields, spec.Field{Name: name, Type: typeOf(cfg.Set[i])})
			// Entries after this one read its type as built so far.
			current = t
		}
		return t
	})
	return cfg
}

// EntriesName is the name under which an entry of set reads the entries
// before it: set.NAME.
const EntriesName = "set"

// entriesSample is a value of the type of the first n entries (an object
// of their fields), for the type check of entry n.
func entriesSample(t *spec.Type, n int) any {
	obj := spec.ObjectOf()
	if t != nil {
		obj.Fields = t.Fields[:min(n, len(t.Fields))]
	}
	if len(obj.Fields) == 0 {
		return map[string]any{}
	}
	return reflect.New(obj.Reflect()).Elem().Interface()
}

// checkEntryReads refuses set.NAME in an entry for a NAME that is not an
// entry before it: entries are evaluated in order, so one reading itself
// or a later one (a cycle, or a read of what is not computed yet) would
// read nothing.
func checkEntryReads(c *spec.NodeContext, e syntax.Expr, before, after []syntax.Str, self string) {
	src := strings.TrimSpace(e.Source)
	tree, err := parser.Parse(src)
	if err != nil {
		return // reported when the expression is compiled
	}
	names := make([]string, len(before))
	for i, k := range before {
		names[i] = k.V
	}
	ast.Walk(&tree.Node, visitor(func(n ast.Node) {
		m, ok := n.(*ast.MemberNode)
		if !ok {
			return
		}
		id, ok := m.Node.(*ast.IdentifierNode)
		prop, ok2 := m.Property.(*ast.StringNode)
		if !ok || !ok2 || id.Value != EntriesName {
			return
		}
		if slices.Contains(names, prop.Value) {
			return
		}
		pos := c.ExprPos(e, prop.Location().From)
		switch {
		case prop.Value == self:
			c.Errorf(pos, "set.%s: entry %q reads itself (set.%s): an entry reads only the entries before it", self, self, self)
		case slices.ContainsFunc(after, func(k syntax.Str) bool { return k.V == prop.Value }):
			c.Errorf(pos, "set.%s: reads set.%s, an entry after it: entries are evaluated in order and each reads only those before it (move %q above %q)", self, prop.Value, prop.Value, self)
		default:
			known := "it is the first entry"
			if len(names) > 0 {
				known = "entries before it: " + strings.Join(names, ", ")
			}
			c.Errorf(pos, "set.%s: reads set.%s, which is no entry of this node (%s)%s", self, prop.Value, known, syntax.DidYouMean(prop.Value, names))
		}
	}))
}

type visitor func(ast.Node)

func (v visitor) Visit(n *ast.Node) { v(*n) }

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
		// Each entry reads the entries before it as set.NAME.
		env[EntriesName] = m
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
