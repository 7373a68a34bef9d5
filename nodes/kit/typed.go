package kit

import (
	"context"
	"fmt"

	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/value"
)

// Def is a node kind written with its own types: R is its YAML form (the
// loader decodes a node into a new R) and C its compiled configuration
// (what Compile returns and Execute is handed). Typed adapts it to the
// untyped Kind the registry keeps, so no kind asserts a type.
type Def[R, C any] interface {
	Name() string
	Description() string
	Schema() []byte
	Example() string
	PromptData() any
	// Compile checks the decoded node as spec.Kind.Compile does; nil
	// means the node did not compile.
	Compile(c *spec.NodeContext, raw *R) *C
	// Execute runs one node with its compiled configuration.
	Execute(ctx context.Context, h Host, node *spec.NodePlan, cfg *C) (value.NodeResult, error)
}

// DetailOf is a Def that can say in a few words what one run of a node
// does (Describer, typed).
type DetailOf[C any] interface {
	Detail(node *spec.NodePlan, cfg *C) string
}

// Typed adapts a kind written with its own types to Kind; the registry
// line of a kind is nodes.Kinds' kit.Typed(pkg.Kind{}). A Def that is also
// a Reporter reports through it, a DetailOf describes its nodes.
func Typed[R, C any](d Def[R, C]) Kind {
	t := typed[R, C]{def: d}
	if dd, ok := d.(DetailOf[C]); ok {
		return described[R, C]{typed: t, detail: dd}
	}
	return t
}

type typed[R, C any] struct{ def Def[R, C] }

func (t typed[R, C]) Name() string        { return t.def.Name() }
func (t typed[R, C]) Description() string { return t.def.Description() }
func (t typed[R, C]) Schema() []byte      { return t.def.Schema() }
func (t typed[R, C]) Example() string     { return t.def.Example() }
func (t typed[R, C]) PromptData() any     { return t.def.PromptData() }
func (t typed[R, C]) NewConfig() any      { return new(R) }

// Compile implements spec.Kind. The loader always hands back what
// NewConfig made.
func (t typed[R, C]) Compile(c *spec.NodeContext, raw any) any {
	r, ok := raw.(*R)
	if !ok {
		panic(fmt.Sprintf("kind %s: compile given %T, not the %T its NewConfig makes", t.def.Name(), raw, r))
	}
	if cfg := t.def.Compile(c, r); cfg != nil {
		return cfg
	}
	return nil
}

// Execute implements Kind.
func (t typed[R, C]) Execute(ctx context.Context, h Host, node *spec.NodePlan) (value.NodeResult, error) {
	cfg, ok := node.Config.(*C)
	if !ok || cfg == nil {
		return value.NodeResult{}, fmt.Errorf("node %q: its configuration is not one a %s node compiles to", node.ID, t.def.Name())
	}
	return t.def.Execute(ctx, h, node, cfg)
}

// ReportSections implements Reporter for a Def that reports.
func (t typed[R, C]) ReportSections(plan *spec.Plan, msgs []value.Message) []ReportSection {
	if r, ok := t.def.(Reporter); ok {
		return r.ReportSections(plan, msgs)
	}
	return nil
}

type described[R, C any] struct {
	typed[R, C]
	detail DetailOf[C]
}

// Detail implements Describer.
func (d described[R, C]) Detail(node *spec.NodePlan) string {
	cfg, ok := node.Config.(*C)
	if !ok || cfg == nil {
		return ""
	}
	return d.detail.Detail(node, cfg)
}
