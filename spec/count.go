package spec

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
)

// A count of a node (a conversation's max_turns, a repair count, how many
// questions a clarifying node asks) is a whole number, or an expression
// over vars and inputs: `max_turns: vars.turns * 2`. Its value is fixed
// before the run starts, so it is evaluated as the spec compiles, with the
// run's values (the defaults when validating); a run that sets a var or an
// input a count reads compiles the spec again (Specialize), and every part
// of the runner that counts (the dry run, the path check, the budget's
// evaluation bound, a conversation's extrapolation) sees a plain number.
//
// The expression must have a declared maximum: the largest value the
// domains of what it reads allow (a var's `maximum:`, the largest of its
// `enum:`), carried through + - * / % min max abs int and conditionals, or
// a cap written in it (min(vars.turns * 2, 40)). A field with a cap of its
// own below 2^31-1 (repair: at most 10, samples: 1000) takes that cap when
// the domains give none. Validating a spec whose
// input a count reads has no value yet takes that maximum, so what a
// validated spec is planned for is the most any run of it makes.

// countRange is what a count expression may give: lo and hi are the
// bounds its inputs' domains allow (±Inf when they allow any).
type countRange struct{ lo, hi float64 }

var anyCount = countRange{math.Inf(-1), math.Inf(1)}

func (r countRange) union(o countRange) countRange {
	return countRange{math.Min(r.lo, o.lo), math.Max(r.hi, o.hi)}
}

// fixNaN widens a range whose arithmetic met ∞-∞ or 0·∞ to every value.
func (r countRange) fixNaN() countRange {
	if math.IsNaN(r.lo) {
		r.lo = math.Inf(-1)
	}
	if math.IsNaN(r.hi) {
		r.hi = math.Inf(1)
	}
	return r
}

// domainRange is the range of values a domain admits.
func domainRange(d *Domain) countRange {
	if d == nil {
		return anyCount
	}
	r := anyCount
	if len(d.Enum) > 0 {
		r = countRange{math.Inf(1), math.Inf(-1)}
		for _, e := range d.Enum {
			f, ok := domainNumber(e)
			if !ok {
				return anyCount
			}
			r = r.union(countRange{f, f})
		}
	}
	if d.Minimum != nil {
		r.lo = math.Max(r.lo, *d.Minimum)
	}
	if d.Maximum != nil {
		r.hi = math.Min(r.hi, *d.Maximum)
	}
	return r
}

// countRangeOf is the range of values an expression's tree can give, from
// the domains of the vars and inputs it reads.
func (c *compiler) countRangeOf(n ast.Node) countRange {
	switch x := n.(type) {
	case *ast.IntegerNode:
		return countRange{float64(x.Value), float64(x.Value)}
	case *ast.FloatNode:
		return countRange{x.Value, x.Value}
	case *ast.ChainNode:
		return c.countRangeOf(x.Node)
	case *ast.MemberNode:
		id, ok := x.Node.(*ast.IdentifierNode)
		prop, ok2 := x.Property.(*ast.StringNode)
		if !ok || !ok2 {
			return anyCount
		}
		switch id.Value {
		case "vars":
			for _, v := range c.plan.Vars {
				if v.Name == prop.Value {
					return domainRange(v.Domain)
				}
			}
		case "inputs":
			for _, in := range c.plan.Inputs {
				if in.Name == prop.Value {
					return domainRange(in.Domain)
				}
			}
		}
		return anyCount
	case *ast.UnaryNode:
		r := c.countRangeOf(x.Node)
		switch x.Operator {
		case "-":
			return countRange{-r.hi, -r.lo}
		case "+":
			return r
		}
		return anyCount
	case *ast.ConditionalNode:
		return c.countRangeOf(x.Exp1).union(c.countRangeOf(x.Exp2))
	case *ast.BinaryNode:
		a, b := c.countRangeOf(x.Left), c.countRangeOf(x.Right)
		switch x.Operator {
		case "+":
			return countRange{a.lo + b.lo, a.hi + b.hi}.fixNaN()
		case "-":
			return countRange{a.lo - b.hi, a.hi - b.lo}.fixNaN()
		case "*":
			ps := []float64{a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi}
			if slices.ContainsFunc(ps, math.IsNaN) {
				return anyCount
			}
			return countRange{slices.Min(ps), slices.Max(ps)}
		case "/":
			if b.lo > 0 || b.hi < 0 {
				ps := []float64{a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi}
				if slices.ContainsFunc(ps, math.IsNaN) {
					return anyCount
				}
				return countRange{slices.Min(ps), slices.Max(ps)}
			}
			return anyCount
		case "%":
			m := math.Max(math.Abs(b.lo), math.Abs(b.hi)) - 1
			if a.lo >= 0 {
				return countRange{0, math.Min(m, a.hi)}
			}
			return countRange{-m, m}
		case "??":
			return a.union(b)
		}
		return anyCount
	case *ast.BuiltinNode:
		return c.countCall(x.Name, x.Arguments)
	case *ast.CallNode:
		if id, ok := x.Callee.(*ast.IdentifierNode); ok {
			return c.countCall(id.Value, x.Arguments)
		}
	}
	return anyCount
}

func (c *compiler) countCall(name string, args []ast.Node) countRange {
	rs := make([]countRange, len(args))
	for i, a := range args {
		rs[i] = c.countRangeOf(a)
	}
	switch {
	case (name == "min" || name == "max") && len(rs) > 0:
		out := rs[0]
		for _, r := range rs[1:] {
			if name == "min" {
				out = countRange{math.Min(out.lo, r.lo), math.Min(out.hi, r.hi)}
			} else {
				out = countRange{math.Max(out.lo, r.lo), math.Max(out.hi, r.hi)}
			}
		}
		return out
	case name == "abs" && len(rs) == 1:
		r := rs[0]
		hi := math.Max(math.Abs(r.lo), math.Abs(r.hi))
		if r.lo >= 0 {
			return r
		}
		if r.hi <= 0 {
			return countRange{-r.hi, -r.lo}
		}
		return countRange{0, hi}
	case (name == "int" || name == "float") && len(rs) == 1:
		if name == "int" {
			return countRange{math.Trunc(rs[0].lo), math.Trunc(rs[0].hi)}
		}
		return rs[0]
	case (name == "ceil" || name == "floor" || name == "round") && len(rs) == 1:
		return countRange{math.Floor(rs[0].lo), math.Ceil(rs[0].hi)}
	}
	return anyCount
}

// countNames are the names a count expression reads: vars and inputs
// (with the one each reads), and the first other name, "" when none.
func countNames(tree ast.Node) (vars, inputs []string, other string) {
	callees := map[ast.Node]bool{}
	ast.Walk(&tree, visitorFunc(func(n *ast.Node) {
		if call, ok := (*n).(*ast.CallNode); ok {
			callees[call.Callee] = true
		}
	}))
	ast.Walk(&tree, visitorFunc(func(n *ast.Node) {
		switch x := (*n).(type) {
		case *ast.MemberNode:
			id, ok := x.Node.(*ast.IdentifierNode)
			prop, ok2 := x.Property.(*ast.StringNode)
			if ok && ok2 {
				switch id.Value {
				case "vars":
					vars = appendUnique(vars, prop.Value)
				case "inputs":
					inputs = appendUnique(inputs, prop.Value)
				}
			}
		case *ast.IdentifierNode:
			if x.Value != "vars" && x.Value != "inputs" && !callees[*n] && other == "" {
				other = x.Value
			}
		case *ast.PointerNode:
			if other == "" {
				other = "#" + x.Name
			}
		}
	}))
	return vars, inputs, other
}

// Count is a node's count (what names its key: "max_turns"): def when the
// spec leaves it out, else the whole number written or the value of the
// expression, which must lie from lo to hi, and whose declared maximum
// (see above) must be at most hi. Problems are reported at the value.
func (n *NodeContext) Count(e syntax.Expr, what string, lo, hi, def int) int {
	v, bad := n.c.count(e, fmt.Sprintf("node %q: %s", n.Node.ID, what), lo, hi, def)
	if bad != "" && n.Node.CountError == "" {
		n.Node.CountError = bad
	}
	return v
}

// count is a count's value, and why the value the run's values give is out
// of its range ("" when it is not): the node fails when it runs.
func (c *compiler) count(e syntax.Expr, what string, lo, hi, def int) (int, string) {
	src := strings.TrimSpace(e.Source)
	if src == "" {
		return def, ""
	}
	if !e.Quoted() && syntax.YAMLIntSyntax.MatchString(src) {
		n, err := strconv.ParseInt(src, 0, 64)
		if err != nil || n < int64(lo) || n > int64(hi) {
			c.r.Errorf(e.Pos, "%s is %s; it must be a whole number from %d to %d", what, src, lo, hi)
			return def, ""
		}
		return int(n), ""
	}
	tree, err := parser.Parse(src)
	if err != nil {
		c.exprError(e, src, err, nil, what)
		return def, ""
	}
	vars, inputs, other := countNames(tree.Node)
	if other != "" {
		if _, known := c.envSample(nil)[other]; known {
			c.r.Errorf(e.Pos, "%s (%s) reads %s: a count is fixed before the run starts, so it may read only vars and inputs", what, src, other)
		} else {
			c.compileExpr(e, nil, IntResult, what) // says what the name is not
		}
		return def, ""
	}
	// Typed as every expression is (a text var is refused by its type);
	// evaluated below with the run's values.
	c.compileExpr(e, nil, IntResult, what)
	// The values: the run's, else the spec's defaults; an input with
	// neither makes the count its maximum.
	env, known := c.countEnv()
	var v any
	evaluated := true
	for _, in := range inputs {
		evaluated = evaluated && known[in]
	}
	if evaluated {
		prog, err := CompileExpr(src, exprOptions(env, AnyResult)...)
		if err != nil {
			return def, "" // the type check says why
		}
		if v, err = expr.Run(prog, env); err != nil {
			c.r.Errorf(e.Pos, "%s (%s): %s", what, src, firstLine(err.Error()))
			return def, ""
		}
		switch v.(type) {
		case string, bool, float64, nil:
			if _, ok := wholeNumber(v); !ok {
				return def, "" // the type check says so
			}
		}
	}
	r := c.countRangeOf(tree.Node)
	if math.IsInf(r.hi, 1) && hi < math.MaxInt32 {
		// A field with a cap of its own (repair: at most 10) is bounded
		// by it.
		r.hi = float64(hi)
	}
	if math.IsInf(r.hi, 1) {
		hint := "cap it: min(" + src + ", N)"
		if len(vars) > 0 {
			hint = fmt.Sprintf("declare a maximum: on var %q, or %s", vars[0], hint)
		} else if len(inputs) > 0 {
			hint = fmt.Sprintf("declare a maximum: on input %q, or %s", inputs[0], hint)
		}
		c.r.Errorf(e.Pos, "%s (%s) has no declared maximum, which the dry run, the path check and the budget need: %s", what, src, hint)
		return def, ""
	}
	bound := math.Floor(r.hi)
	if bound > float64(hi) {
		c.r.Errorf(e.Pos, "%s (%s) may reach %s by the domains it reads, more than it may be (%d): lower a maximum, or cap it: min(%s, %d)", what, src, strconv.FormatFloat(bound, 'f', -1, 64), hi, src, hi)
		return def, ""
	}
	if bound < float64(lo) {
		c.r.Errorf(e.Pos, "%s (%s) is at most %s by the domains it reads, less than %d", what, src, strconv.FormatFloat(bound, 'f', -1, 64), lo)
		return def, ""
	}
	for _, v := range vars {
		if !slices.Contains(c.plan.ReplicaVars, v) {
			c.plan.ReplicaVars = append(c.plan.ReplicaVars, v)
		}
	}
	for _, in := range inputs {
		if !slices.Contains(c.plan.CountInputs, in) {
			c.plan.CountInputs = append(c.plan.CountInputs, in)
		}
	}
	c.plan.CountExprs++
	if !evaluated || c.overrides.CountsAtMaximum {
		return int(bound), ""
	}
	got, ok := wholeNumber(v)
	if !ok {
		if _, typed := v.(string); typed {
			return def, "" // the type check says so
		}
		if _, typed := v.(float64); typed {
			return def, ""
		}
		c.r.Errorf(e.Pos, "%s (%s) gave %v (%s), not a whole number", what, src, v, reflect.TypeOf(v))
		return def, ""
	}
	if got < lo || float64(got) > bound {
		return max(lo, 1), fmt.Sprintf("%s:%d:%d: %s (%s) is %d with these values; it must be from %d to its maximum, %d", c.plan.Path, e.Pos.Line, e.Pos.Col, what, src, got, lo, int(bound))
	}
	return got, ""
}

// countEnv is what count expressions read: vars and inputs with the run's
// values (the defaults when validating), and which inputs have one.
func (c *compiler) countEnv() (map[string]any, map[string]bool) {
	vars, inputs, known := map[string]any{}, map[string]any{}, map[string]bool{}
	for _, v := range c.plan.Vars {
		vars[v.Name] = v.Default
	}
	for k, v := range c.overrides.Vars {
		vars[k] = v
	}
	for _, in := range c.plan.Inputs {
		inputs[in.Name] = ""
		if t := inputType(in); t != nil && in.HasDefault {
			inputs[in.Name] = in.Default
			known[in.Name] = true
		}
	}
	for k, v := range c.overrides.Inputs {
		if _, ok := inputs[k]; ok {
			inputs[k] = v
			known[k] = true
		}
	}
	return map[string]any{"vars": vars, "inputs": inputs}, known
}

// IsCount reports whether e is written as a count: a whole number, or an
// expression that reads no name but vars and inputs (a kind whose field
// may also read the run, as samples may, evaluates the others itself).
func (n *NodeContext) IsCount(e syntax.Expr) bool {
	src := strings.TrimSpace(e.Source)
	if src == "" {
		return false
	}
	tree, err := parser.Parse(src)
	if err != nil {
		return false
	}
	_, _, other := countNames(tree.Node)
	return other == ""
}

// wholeNumber is v as an int when it is a whole number.
func wholeNumber(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int64:
		return int(x), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) <= math.MaxInt32 {
			return int(x), true
		}
	}
	return 0, false
}
