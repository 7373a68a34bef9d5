package spec

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"unicode"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
)

// Expressions are compiled once every node has compiled, so that they are
// checked against the output types nodes declare (a node's output type is
// known only once its kind compiled it, and expressions may name nodes
// declared after them). compileExpr hands out the Program at once and fills
// it in finishExprs.

// pendingExpr is an expression waiting to be compiled.
type pendingExpr struct {
	prog  *Program
	e     syntax.Expr
	extra map[string]any
	want  ExprResult
	what  string
	// choices, for StringResult, are the values a constant result may take
	// (e.g. the participants a speaker expression may name).
	choices []string
	// site is where the expression is evaluated, for the check that the
	// nodes it reads can have run by then.
	site *site
	// refs are the nodes it reads (filled when compiled).
	refs []nodeRef
	// typedExtra, when set, gives extra names of the types they have
	// once node outputs are typed, for the type check (ExprTyped).
	typedExtra func() map[string]any
}

// withTypedExtra is env with p's typed extra names in place of its
// samples.
func (p *pendingExpr) withTypedExtra(env map[string]any) map[string]any {
	if p.typedExtra == nil {
		return env
	}
	for k, v := range p.typedExtra() {
		env[k] = v
	}
	return env
}

// nodeRef is a read of nodes.ID (or .Nodes.ID in a template).
type nodeRef struct {
	id  string
	pos syntax.Pos
	// guarded reads tolerate a node that has not run: nodes.X?.output,
	// nodes.X.output ?? fallback.
	guarded bool
	// conditional reads are evaluated only on some paths of the expression
	// (a branch of ?:, the right side of && or ||).
	conditional bool
	// what says where the read is, for diagnostics.
	what string
}

func (c *compiler) envSample(extra map[string]any) map[string]any {
	loop := map[string]any{}
	loops := map[string]int{}
	for _, n := range c.loopNames {
		loop[n] = 0
		loops[n] = 0
	}
	if extra == nil {
		extra = map[string]any{}
	}
	if _, ok := extra["goal_verdicts"]; !ok {
		extra["goal_verdicts"] = []value.GoalVerdicts{}
	}
	env := &Env{
		Inputs:   map[string]any{},
		Vars:     map[string]any{},
		Nodes:    map[string]value.NodeResult{},
		Verdicts: c.plan.Verdicts,
		Loop:     loop,
		Loops:    loops,
		Extra:    extra,
	}
	for _, v := range c.plan.Vars {
		env.Vars[v.Name] = v.Default
	}
	for _, in := range c.plan.Inputs {
		env.Inputs[in.Name] = ""
	}
	return env.Map()
}

// compileExpr registers an expression to compile against the environment
// plus extra names (their values fix their types) and returns its Program,
// filled in once every node has compiled. It is nil when no expression was
// written, or when it is empty (an error).
func (c *compiler) compileExpr(e syntax.Expr, extra map[string]any, want ExprResult, what string) *Program {
	return c.compileExprChoice(e, extra, want, what, nil)
}

func (c *compiler) compileExprChoice(e syntax.Expr, extra map[string]any, want ExprResult, what string, choices []string) *Program {
	if e.IsZero() {
		return nil
	}
	src := strings.TrimSpace(e.Source)
	if src == "" {
		c.r.Errorf(e.Pos, "%s: expression is empty", what)
		return nil
	}
	p := &pendingExpr{prog: &Program{Source: src, Pos: e.Pos}, e: e, extra: extra, want: want, what: what, choices: choices, site: c.site}
	c.pending = append(c.pending, p)
	return p.prog
}

// finishExprs compiles every registered expression.
func (c *compiler) finishExprs() {
	c.resolveOutputs()
	for _, p := range c.pending {
		c.compilePending(p)
	}
}

// outputBuilder builds a node's output type from its expressions' types.
type outputBuilder struct {
	node  *NodePlan
	build func(typeOf func(*Program) *Type) *Type
}

// resolveOutputs settles the output types that depend on expression types:
// a computed node may read another computed node's output, so the types
// are built again until none changes (or, for a cycle, for as many rounds
// as there are such nodes).
func (c *compiler) resolveOutputs() {
	if len(c.outputBuilders) == 0 {
		return
	}
	byProg := map[*Program]*pendingExpr{}
	for _, p := range c.pending {
		byProg[p.prog] = p
	}
	typeOf := func(prog *Program) *Type {
		p := byProg[prog]
		if p == nil {
			return TypeAny
		}
		typed := p.withTypedExtra(c.typedEnvSample(c.envSample(p.extra)))
		tp, err := CompileExpr(p.prog.Source, exprOptions(typed, p.want)...)
		if err != nil {
			return TypeAny
		}
		return TypeOfGo(tp.Node().Type())
	}
	for round := 0; round <= len(c.outputBuilders); round++ {
		changed := false
		for _, b := range c.outputBuilders {
			t := b.build(typeOf)
			if t.String() != b.node.Output.String() {
				b.node.Output = t
				changed = true
			}
		}
		// The typed environment holds node output types: build it anew.
		c.typedVars, c.typedInputs, c.typedNodes = nil, nil, nil
		if !changed {
			return
		}
	}
}

// compilePending compiles one expression: once against the environment the
// runtime gives (values of any type), for running; once more against the
// declared types of vars, inputs and node outputs, for checking. It also
// checks node, var, input and verdict names, which a map environment would
// accept whatever they are.
func (c *compiler) compilePending(p *pendingExpr) {
	src, e, what := p.prog.Source, p.e, p.what
	tree, err := parser.Parse(src)
	if err != nil {
		pos, msg := c.exprErrorAt(e, src, err)
		if msg == "unexpected token EOF" {
			msg = "the expression ends too early"
		}
		c.r.Errorf(pos, "%s: syntax error: %s", what, msg)
		return
	}
	env := c.envSample(p.extra)
	prog, err := CompileExpr(src, exprOptions(env, p.want)...)
	if err != nil {
		c.exprError(e, src, err, env, what)
		return
	}
	v := &refChecker{known: map[string][]string{
		"nodes":    c.file.Nodes.Names(),
		"vars":     c.file.Vars.Names(),
		"inputs":   c.file.Inputs.Names(),
		"verdicts": sortedKeys(c.plan.Verdicts),
		"loops":    c.loopNames,
	}}
	// A collection that is not a mapping (reported) has no known names.
	for name, invalid := range map[string]bool{"nodes": c.file.Nodes.Invalid, "vars": c.file.Vars.Invalid, "inputs": c.file.Inputs.Invalid, "verdicts": c.file.Verdicts.Invalid} {
		if invalid {
			delete(v.known, name)
		}
	}
	ast.Walk(&tree.Node, v)
	v.errs = append(v.errs, tieErrors(tree.Node)...)
	if len(v.errs) > 0 {
		for _, re := range v.errs {
			c.r.Errorf(c.offsetPos(e, src, re.offset), "%s: %s", what, re.msg)
		}
		return
	}
	p.prog.ReadsRun = v.readsRun
	p.refs = v.nodeRefs(func(offset int) syntax.Pos { return c.offsetPos(e, src, offset) }, what)
	if !c.checkOutputProperties(tree.Node, e, src, what) {
		return
	}
	// The environment above types vars, inputs and node outputs as values
	// of any type, so `if: vars.title` compiles whatever title holds.
	// Compiling once more with them as structs of the declared types
	// catches a string used as a condition before a run fails on it.
	typed := p.withTypedExtra(c.typedEnvSample(env))
	tprog, err := CompileExpr(src, exprOptions(typed, p.want)...)
	result := prog.Node().Type()
	if err != nil {
		if !strings.Contains(err.Error(), "struct {") {
			c.exprError(e, src, err, typed, what)
			return
		}
		// expr refuses it over the structs that stand for objects: once
		// more over the mappings a run holds (keys(x) takes those).
		mapped := c.mapViewEnv(env)
		mprog, err := CompileExpr(src, exprOptions(mapped, p.want)...)
		if err != nil && !strings.Contains(err.Error(), "struct {") {
			c.exprError(e, src, err, mapped, what)
			return
		}
		if err == nil && !c.checkBuiltinArgs(p, mprog.Node()) {
			return
		}
	} else if tp := tprog.Node(); !c.checkBuiltinArgs(p, tp) {
		return
	} else if !c.checkResult(p, tprog.Node().Type()) {
		return
	} else if t := tprog.Node().Type(); t != nil && t.Kind() != reflect.Interface {
		result = t
	}
	if errs := boolSlotErrors(tree.Node, p.want == BoolResult); len(errs) > 0 {
		for _, be := range errs {
			c.r.Errorf(c.offsetPos(e, src, be.offset), "%s: a boolean is wanted here, but %s", what, be.msg)
		}
		return
	}
	if errs := normaliserFieldErrors(tree.Node); len(errs) > 0 {
		for _, fe := range errs {
			c.r.Errorf(c.offsetPos(e, src, fe.offset), "%s: %s", what, fe.msg)
		}
		return
	}
	if !c.exprStatic(p, tree.Node, result) {
		return
	}
	if p.want == StringResult && len(p.choices) > 0 {
		for _, lit := range resultLiterals(tree.Node) {
			if !contains(p.choices, lit.value) {
				c.r.Errorf(c.offsetPos(e, src, lit.offset), "%s: %q is not one of %s%s", what, lit.value, strings.Join(p.choices, ", "), syntax.DidYouMean(lit.value, p.choices))
			}
		}
	}
	c.constantExpr(p, prog, tree.Node, env)
	p.prog.Program = prog
}

// exprErrorAt is the position and message of expr's error about src, the
// source of e as compiled: in a block scalar, its line and column in src
// are placed by offsetPos.
func (c *compiler) exprErrorAt(e syntax.Expr, src string, err error) (syntax.Pos, string) {
	pos, msg := exprErrorPos(e.TextPos(), err)
	var fe *file.Error
	if _, _, block := e.Block(); !block || !errors.As(err, &fe) {
		return pos, msg
	}
	offset, line := 0, 1
	for line < fe.Line {
		i := strings.IndexByte(src[offset:], '\n')
		if i < 0 {
			return pos, msg
		}
		offset += i + 1
		line++
	}
	return c.offsetPos(e, src, min(offset+fe.Column, len(src))), msg
}

// offsetPos is the position of a byte offset of an expression's source.
func (c *compiler) offsetPos(e syntax.Expr, src string, offset int) syntax.Pos {
	if text, prefix, ok := e.Block(); ok && c.r.Src != nil {
		// src is e.Source trimmed of space; Negated's prefix comes first.
		off := max(offset, 0) + len(e.Source) - len(strings.TrimLeftFunc(e.Source, unicode.IsSpace)) - prefix
		if p, ok := syntax.BlockOffsetPos(c.r.Src.Lines, e.Pos, text, max(off, 0)); ok {
			return p
		}
	}
	pos := e.TextPos()
	if offset < 0 {
		return pos
	}
	head := src[:min(offset, len(src))]
	if i := strings.LastIndexByte(head, '\n'); i >= 0 {
		pos.Line += strings.Count(head, "\n")
		pos.Col = offset - i
		return pos
	}
	pos.Col += offset
	return pos
}

// checkResult checks the type an expression gives where the type checker
// of expr cannot be asked for it (a list, a string).
func (c *compiler) checkResult(p *pendingExpr, t reflect.Type) bool {
	if t == nil || t.Kind() == reflect.Interface {
		return true
	}
	switch p.want {
	case IntResult:
		// expr accepts a float where an int is asked for, and drops
		// the fraction when it runs.
		if k := t.Kind(); k == reflect.Float32 || k == reflect.Float64 {
			c.r.Errorf(p.e.TextPos(), "%s: must be a whole number, but %q is a number that may have a fraction; write a whole number, or round it: int(%s)", p.what, p.prog.Source, p.prog.Source)
			return false
		}
	case ListResult:
		if k := t.Kind(); k != reflect.Slice && k != reflect.Array {
			c.r.Errorf(p.e.TextPos(), "%s: must be a list, but %q is %s", p.what, p.prog.Source, exprTypeWords(t.String()))
			return false
		}
	case StringResult:
		if t.Kind() != reflect.String {
			c.r.Errorf(p.e.TextPos(), "%s: must give text (an id), but %q is %s", p.what, p.prog.Source, exprTypeWords(t.String()))
			return false
		}
	}
	return true
}

// literal is a string constant an expression may give as its result.
type literal struct {
	value  string
	offset int
}

// resultLiterals are the string constants an expression may evaluate to:
// the expression itself, either branch of a ?: and either side of a ??.
func resultLiterals(n ast.Node) []literal {
	switch x := n.(type) {
	case *ast.StringNode:
		return []literal{{x.Value, x.Location().From}}
	case *ast.ConditionalNode:
		return append(resultLiterals(x.Exp1), resultLiterals(x.Exp2)...)
	case *ast.BinaryNode:
		if x.Operator == "??" {
			return append(resultLiterals(x.Left), resultLiterals(x.Right)...)
		}
	}
	return nil
}

// checkOutputProperties checks nodes.ID.output.P... reads against the
// output type the node declares, so a misspelt property of a JSON reply is
// a diagnostic with a suggestion rather than a nil at run time.
func (c *compiler) checkOutputProperties(root ast.Node, e syntax.Expr, src, what string) bool {
	ok := true
	guarded := guardedNodes(root)
	visit := func(n *ast.Node) {
		chain, base := memberChain(*n)
		if base != "nodes" || len(chain) < 3 {
			return
		}
		np := c.plan.Nodes[chain[0].name]
		if np == nil {
			return
		}
		if !guarded[*n] && !optionalChain(*n) && !c.checkFallbackRead(chain, e, src, what) {
			ok = false
			return
		}
		var t *Type
		var rest []member
		switch chain[1].name {
		case "output":
			t, rest = np.Output, chain[2:]
		case "outputs":
			// outputs.AGENT.P...: one agent's output.
			if t = np.Outputs; t == nil {
				t = np.Output
			}
			rest = chain[3:]
		default:
			return
		}
		for _, m := range rest {
			if t == nil || t.Kind != ObjectType || len(t.Fields) == 0 {
				return
			}
			ft, found := t.Field(m.name)
			if !found {
				names := make([]string, len(t.Fields))
				for i, f := range t.Fields {
					names[i] = f.Name
				}
				c.r.Errorf(c.offsetPos(e, src, m.offset), "%s: the output of node %q has no property %q (it has %s)%s",
					what, chain[0].name, m.name, strings.Join(names, ", "), syntax.DidYouMean(m.name, names))
				ok = false
				return
			}
			t = ft
		}
	}
	ast.Walk(&root, visitorFunc(visit))
	return ok
}

type visitorFunc func(n *ast.Node)

func (f visitorFunc) Visit(n *ast.Node) { f(n) }

type member struct {
	name   string
	offset int
}

// memberChain reads a.b.c (or a["b"].c) from its outermost member node:
// the names after the base identifier in order, and the base identifier.
// Only chains whose every property is a constant are read.
func memberChain(n ast.Node) ([]member, string) {
	var rev []member
	for {
		switch x := n.(type) {
		case *ast.MemberNode:
			prop, ok := x.Property.(*ast.StringNode)
			if !ok {
				return nil, ""
			}
			rev = append(rev, member{prop.Value, prop.Location().From})
			n = x.Node
			continue
		case *ast.IdentifierNode:
			out := make([]member, len(rev))
			for i := range rev {
				out[i] = rev[len(rev)-1-i]
			}
			return out, x.Value
		}
		return nil, ""
	}
}

func exprOptions(env map[string]any, want ExprResult) []expr.Option {
	opts := []expr.Option{expr.Env(env), expr.MaxNodes(2000), expr.Patch(tiePatch{})}
	opts = append(opts, exprFunctions...)
	switch want {
	case BoolResult:
		opts = append(opts, expr.AsBool())
	case IntResult:
		opts = append(opts, expr.AsInt())
	}
	return opts
}

// exprError reports a compile error of an expression in the spec's words.
func (c *compiler) exprError(e syntax.Expr, src string, err error, env map[string]any, what string) {
	pos, msg := c.exprErrorAt(e, src, err)
	if got, ok := strings.CutPrefix(msg, "expected bool, but got "); ok {
		msg = fmt.Sprintf("condition must be a boolean, but %q is %s", src, exprTypeWords(got))
	} else if got, ok := strings.CutPrefix(msg, "expected int, but got "); ok {
		msg = fmt.Sprintf("must be a number, but %q is %s", src, exprTypeWords(got))
	} else if name, ok := strings.CutPrefix(msg, "unknown name "); ok {
		names := make([]string, 0, len(env))
		for k := range env {
			if !strings.HasPrefix(k, "$") {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		msg = fmt.Sprintf("unknown name %q%s", name, syntax.DidYouMean(name, names))
	}
	c.r.Errorf(pos, "%s: %s", what, firstLine(msg))
}

// exprTypeWords names an expr type for a spec author.
func exprTypeWords(t string) string {
	switch {
	case t == "bool":
		return "a boolean"
	case t == "string":
		return "a string"
	case t == "nil":
		return "nil"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping"
	case strings.HasPrefix(t, "struct"):
		return "an object"
	case t == "value.Message":
		return "a message"
	case t == "value.GoalView":
		return "a goal"
	case t == "interface {}" || t == "interface{}":
		return "a value of any type"
	case strings.HasPrefix(t, "func("):
		return "a function"
	case strings.HasPrefix(t, "value."):
		return article(strings.TrimPrefix(t, "value."))
	}
	return "a value of type " + t
}

// typedEnvSample replaces the vars, inputs and nodes of env with structs
// whose fields have the types the spec declares, for type checking only:
// the runtime environment keeps maps.
func (c *compiler) typedEnvSample(env map[string]any) map[string]any {
	if c.typedVars == nil {
		var vars []reflect.StructField
		for i, v := range c.plan.Vars {
			t := anyType
			if v.Default != nil {
				t = exprDeclared(declaredType(v.Default))
			}
			vars = append(vars, reflect.StructField{Name: fmt.Sprintf("V%d", i), Type: t, Tag: reflect.StructTag(fmt.Sprintf("expr:%q", v.Name))})
		}
		var inputs []reflect.StructField
		for i, in := range c.plan.Inputs {
			t := inputType(in)
			if t == nil {
				t = anyType
			}
			inputs = append(inputs, reflect.StructField{Name: fmt.Sprintf("I%d", i), Type: t, Tag: reflect.StructTag(fmt.Sprintf("expr:%q", in.Name))})
		}
		var nodes []reflect.StructField
		for i, id := range c.plan.NodeOrder {
			nodes = append(nodes, reflect.StructField{Name: fmt.Sprintf("N%d", i), Type: nodeResultType(c.plan.Nodes[id]), Tag: reflect.StructTag(fmt.Sprintf("expr:%q", id))})
		}
		c.typedVars = reflect.New(reflect.StructOf(vars)).Elem().Interface()
		c.typedInputs = reflect.New(reflect.StructOf(inputs)).Elem().Interface()
		c.typedNodes = reflect.New(reflect.StructOf(nodes)).Elem().Interface()
	}
	typed := make(map[string]any, len(env))
	for k, v := range env {
		typed[k] = v
	}
	typed["vars"], typed["inputs"], typed["nodes"] = c.typedVars, c.typedInputs, c.typedNodes
	return typed
}

// mapViewEnv is the typed environment with node outputs typed as the
// mappings a run holds (ReflectMap): what an expression is checked against
// when expr refuses it over the structs standing for objects. (Errors that
// still name a struct, such as keys(vars), are left alone.)
func (c *compiler) mapViewEnv(env map[string]any) map[string]any {
	var nodes []reflect.StructField
	for i, id := range c.plan.NodeOrder {
		nodes = append(nodes, reflect.StructField{Name: fmt.Sprintf("N%d", i), Type: nodeResultTypeWith(c.plan.Nodes[id], (*Type).ReflectMap), Tag: reflect.StructTag(fmt.Sprintf("expr:%q", id))})
	}
	out := make(map[string]any, len(env))
	for k, v := range env {
		out[k] = v
	}
	out["nodes"] = reflect.New(reflect.StructOf(nodes)).Elem().Interface()
	out["vars"], out["inputs"] = c.typedVars, c.typedInputs
	return out
}

// exprDeclared is the Go type expressions are checked against for a
// declared value: a list whose items share a type is a list of that type
// (the run holds []any, whose items have it).
func exprDeclared(tt tmplType) reflect.Type {
	if tt.t == nil {
		return anyType
	}
	if tt.t.Kind() == reflect.Slice && tt.elem != nil && tt.elem.t != nil {
		return reflect.SliceOf(exprDeclared(*tt.elem))
	}
	return tt.t
}

// inputType is an input's type: text, or the type of a number or boolean
// default (runtime/args parses the input as that type); nil when unknown.
func inputType(in *InputPlan) reflect.Type {
	if !in.HasDefault {
		return reflect.TypeOf("")
	}
	switch in.Default.(type) {
	case string:
		return reflect.TypeOf("")
	case int, float64, bool:
		return reflect.TypeOf(in.Default)
	}
	return nil
}

// nodeResultType is NodeResult with the node's declared output types.
func nodeResultType(np *NodePlan) reflect.Type {
	return nodeResultTypeWith(np, (*Type).Reflect)
}

func nodeResultTypeWith(np *NodePlan, reflectOf func(*Type) reflect.Type) reflect.Type {
	out := reflectOf(np.Output)
	outs := reflect.MapOf(reflect.TypeOf(""), reflectOf(np.Outputs))
	if np.Outputs == nil {
		outs = reflect.MapOf(reflect.TypeOf(""), out)
	}
	return reflect.StructOf([]reflect.StructField{
		{Name: "Output", Type: out, Tag: `expr:"output"`},
		{Name: "Outputs", Type: outs, Tag: `expr:"outputs"`},
		{Name: "Text", Type: reflect.TypeOf(""), Tag: `expr:"text"`},
		{Name: "Messages", Type: reflect.TypeOf([]value.Message{}), Tag: `expr:"messages"`},
		{Name: "Calls", Type: reflect.TypeOf(0), Tag: `expr:"calls"`},
		{Name: "Absent", Type: reflect.TypeOf([]value.Absence{}), Tag: `expr:"absent"`},
	})
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// CompileExpr compiles an expression as expr.Compile does, except where
// expr's optimiser breaks its own compiler: it rewrites filter(xs, p)[0]
// into find(xs, p) and types the result without its struct's fields, so
// reading a field of it (filter(latest("a"), .content != "")[0].content)
// panics inside expr, which reports the panic as an error. Such an
// expression is compiled once more without the optimiser, which gives the
// same values; a panic left then is reported as its first line.
func CompileExpr(src string, opts ...expr.Option) (*vm.Program, error) {
	prog, err := expr.Compile(src, opts...)
	if err == nil || !internalPanic(err) {
		return prog, err
	}
	prog, err = expr.Compile(src, append(opts[:len(opts):len(opts)], expr.Optimize(false))...)
	if err != nil && internalPanic(err) {
		return nil, errors.New("expr cannot compile this expression: " + firstLine(err.Error()))
	}
	return prog, err
}

// internalPanic tells a panic inside expr's compiler, which expr returns
// as an error with its stack, from an error in the expression.
func internalPanic(err error) bool {
	var fe *file.Error
	return !errors.As(err, &fe) && strings.Contains(err.Error(), "\ngoroutine ")
}
