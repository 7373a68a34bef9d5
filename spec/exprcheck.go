package spec

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/expr-lang/expr/ast"
)

// This file checks what an expression's types and constants decide beyond
// expr's own type checker: a record latest() names that no node records, a
// constant index past the spec's goals, a divisor that is always 0 (n-n),
// a number read from text that is not one, and a few-shot examples list
// whose items cannot be pairs. (A value the journal could not write as JSON,
// a mapping groupBy or fromPairs keys by any value, is given text keys by
// JSONValue where a run keeps it.) Each of these fails
// at the same place in every run, after the calls before it were paid for.

// exprStatic reports those problems; it returns false when it reported an
// error.
func (c *compiler) exprStatic(p *pendingExpr, root ast.Node, result reflect.Type) bool {
	e, src, what := p.e, p.prog.Source, p.what
	ok := true
	// An expression that reads nothing is evaluated whole (constantExpr).
	readsNames := false
	ast.Walk(&root, visitorFunc(func(n *ast.Node) {
		switch (*n).(type) {
		case *ast.IdentifierNode, *ast.MemberNode, *ast.CallNode, *ast.PointerNode:
			readsNames = true
		}
	}))
	fail := func(offset int, format string, args ...any) {
		c.r.Errorf(c.offsetPos(e, src, offset), "%s: %s", what, fmt.Sprintf(format, args...))
		ok = false
	}
	warn := func(offset int, format string, args ...any) {
		c.r.Warnf(c.offsetPos(e, src, offset), "%s: %s", what, fmt.Sprintf(format, args...))
	}
	ast.Walk(&root, visitorFunc(func(n *ast.Node) {
		switch x := (*n).(type) {
		case *ast.CallNode:
			c.checkLatestRecord(x, warn)
			c.checkRegexCall(x, fail, warn)
		case *ast.MemberNode:
			c.checkGoalIndex(x, fail)
			checkLiteralKey(x, fail)
		case *ast.BinaryNode:
			if readsNames && (x.Operator == "/" || x.Operator == "%") && isZeroExpr(x.Right) {
				if x.Operator == "%" {
					fail(x.Right.Location().From, "%s is always 0, and %% by 0 always fails (integer divide by zero)", x.Right.String())
				} else if onArithmeticPath(root, x) {
					fail(x.Right.Location().From, "%s is always 0, so the result is always infinite or NaN, which no result can hold", x.Right.String())
				}
			}
		case *ast.BuiltinNode:
			c.checkNumberOfText(p, x, fail)
		}
	}))
	if !ok {
		return false
	}
	if result == nil {
		return true
	}
	switch p.want {
	case BoolResult, IntResult:
		return true
	case PairsResult:
		if !pairsType(result) {
			c.r.Errorf(e.TextPos(), "%s: must be a list of {user: ..., assistant: ...} pairs (or JSON text of one), but %q is %s", what, src, typeWithItems(result))
			return false
		}
	}
	return true
}

// checkLatestRecord warns of latest("NAME") when no node records NAME:
// latest gives an empty list, most likely a misspelt record name. Over the
// empty list map(...) or len(...) still run, so it is a warning; what does
// fail on it, latest("asked")[0], the path check refuses (runtime.Load).
func (c *compiler) checkLatestRecord(x *ast.CallNode, warn func(int, string, ...any)) {
	id, ok := x.Callee.(*ast.IdentifierNode)
	if !ok || id.Value != "latest" || len(x.Arguments) != 1 {
		return
	}
	s, ok := x.Arguments[0].(*ast.StringNode)
	if !ok {
		return
	}
	names := c.recordNames()
	for _, n := range names {
		if n == s.Value {
			return
		}
	}
	known := "no node records messages"
	if len(names) > 0 {
		known = "records: " + strings.Join(names, ", ")
	}
	warn(s.Location().From, "latest(%q): no node records %q (%s)%s, so latest gives an empty list", s.Value, s.Value, known, syntax.DidYouMean(s.Value, names))
}

// recordNames are the records a run's messages may have: those the nodes
// declare, plus the clarifications of clarify nodes and the summaries of
// history.summarize.
func (c *compiler) recordNames() []string {
	set := map[string]bool{}
	for r := range c.records {
		set[r] = true
	}
	for _, np := range c.plan.Nodes {
		if np.Kind == "clarify" {
			set["clarification"] = true
		}
	}
	if c.plan.Summarize != nil {
		set["summary"] = true
	}
	out := make([]string, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// checkGoalIndex refuses goals[K] for a constant K past the spec's goals.
func (c *compiler) checkGoalIndex(m *ast.MemberNode, fail func(int, string, ...any)) {
	id, ok := m.Node.(*ast.IdentifierNode)
	if !ok || id.Value != "goals" || m.Optional {
		return
	}
	k, ok := m.Property.(*ast.IntegerNode)
	if !ok {
		return
	}
	n := len(c.plan.Goals)
	if k.Value < n && k.Value >= -n {
		return
	}
	fail(m.Property.Location().From, "goals[%d] is out of range: the spec declares %d goals", k.Value, n)
}

// checkNumberOfText refuses int(X) and float(X) of a var or input whose
// default is text that is not a number (every run with the default fails),
// and for an input of free text with no default: a run fails when it is not
// a number, and declaring the input a number moves that check to --input,
// before any call. An input whose text default is a number is warned of.
func (c *compiler) checkNumberOfText(p *pendingExpr, b *ast.BuiltinNode, fail func(int, string, ...any)) {
	if (b.Name != "int" && b.Name != "float") || len(b.Arguments) != 1 {
		return
	}
	m, ok := b.Arguments[0].(*ast.MemberNode)
	if !ok {
		return
	}
	id, ok := m.Node.(*ast.IdentifierNode)
	prop, ok2 := m.Property.(*ast.StringNode)
	if !ok || !ok2 {
		return
	}
	parses := func(s string) bool {
		s = strings.TrimSpace(s)
		if b.Name == "int" {
			_, err := strconv.Atoi(s)
			return err == nil
		}
		_, err := strconv.ParseFloat(s, 64)
		return err == nil
	}
	switch id.Value {
	case "vars":
		for _, v := range c.plan.Vars {
			if s, text := v.Default.(string); v.Name == prop.Value && text && !parses(s) {
				fail(b.Location().From, "%s(vars.%s) fails: the var's default %q is not a number (give it a number default, which makes it a number)", b.Name, prop.Value, s)
			}
		}
	case "inputs":
		for _, in := range c.plan.Inputs {
			if in.Name != prop.Value {
				continue
			}
			s, text := in.Default.(string)
			switch {
			case in.HasDefault && !text:
				// A number default makes the input a number.
			case in.HasDefault && !parses(s):
				fail(b.Location().From, "%s(inputs.%s) fails: the input's default %q is not a number", b.Name, prop.Value, s)
			case in.HasDefault:
				// Text that is a number: the default runs; another value
				// given with --input may not.
				c.r.Warnf(c.offsetPos(p.e, p.prog.Source, b.Location().From), "%s: %s(inputs.%s) reads a number from text: a run whose input %q is not a number fails here; give the input a number default (default: %s, unquoted), which makes it a number that --input checks", p.what, b.Name, prop.Value, prop.Value, strings.TrimSpace(s))
			default:
				fail(b.Location().From, "%s(inputs.%s) reads a number from free text: a run whose input %q is not a number would fail here, after the calls before it; declare the input with a number default (default: 0), which makes it a number that --input checks", b.Name, prop.Value, prop.Value)
			}
		}
	}
}

// isZeroExpr says whether an expression is 0 whatever its names hold: a
// zero constant, X-X, 0*X.
func isZeroExpr(n ast.Node) bool {
	switch x := n.(type) {
	case *ast.IntegerNode:
		return x.Value == 0
	case *ast.FloatNode:
		return x.Value == 0
	case *ast.UnaryNode:
		return (x.Operator == "-" || x.Operator == "+") && isZeroExpr(x.Node)
	case *ast.BinaryNode:
		switch x.Operator {
		case "-":
			return x.Left.String() == x.Right.String() && pureExpr(x.Left)
		case "*":
			return isZeroExpr(x.Left) || isZeroExpr(x.Right)
		}
	}
	return false
}

// pureExpr says whether an expression gives the same value each time it is
// evaluated in one environment (now() does not).
func pureExpr(n ast.Node) bool {
	pure := true
	ast.Walk(&n, visitorFunc(func(x *ast.Node) {
		if b, ok := (*x).(*ast.BuiltinNode); ok && (b.Name == "now" || b.Name == "date") {
			pure = false
		}
	}))
	return pure
}

// onArithmeticPath says whether target's value reaches the root of the
// expression through arithmetic only: then the expression's result is
// target's infinity or NaN.
func onArithmeticPath(root, target ast.Node) bool {
	if root == target {
		return true
	}
	switch x := root.(type) {
	case *ast.BinaryNode:
		switch x.Operator {
		case "+", "-", "*", "/", "**", "^":
			return onArithmeticPath(x.Left, target) || onArithmeticPath(x.Right, target)
		}
	case *ast.UnaryNode:
		if x.Operator == "-" || x.Operator == "+" {
			return onArithmeticPath(x.Node, target)
		}
	}
	return false
}

// pairsType says whether a value of type t can be few-shot pairs: text
// (JSON), a value of any type, or a list whose items can be mappings or
// two-item lists (a list of text, split(...), cannot).
func pairsType(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Interface:
		return true
	case reflect.Slice, reflect.Array:
		switch t.Elem().Kind() {
		case reflect.Interface, reflect.Map, reflect.Struct, reflect.Slice, reflect.Array:
			return true
		}
	}
	return false
}

// typeWithItems names a type for a message, with a list's items.
func typeWithItems(t reflect.Type) string {
	if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		item := exprTypeWords(t.Elem().String())
		if rest, ok := strings.CutPrefix(item, "a value of "); ok {
			return "a list of values of " + rest
		}
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(item, "a "), "an ") + "s"
	}
	return exprTypeWords(t.String())
}

// predicateBuiltins take a predicate that must give a boolean.
var predicateBuiltins = map[string]bool{
	"all": true, "any": true, "none": true, "one": true, "filter": true, "count": true,
	"find": true, "findIndex": true, "findLast": true, "findLastIndex": true,
}

// numberBuiltins take numbers or lists of numbers.
var numberBuiltins = map[string]bool{"max": true, "min": true, "sum": true, "mean": true, "median": true}

// checkBuiltinArgs checks, over the typed tree expr's checker left, what
// it lets through and the run refuses: a predicate (all, any, filter,
// count...) that gives no boolean, max, min, sum, mean or median of text.
func (c *compiler) checkBuiltinArgs(p *pendingExpr, root ast.Node) bool {
	ok := true
	ast.Walk(&root, visitorFunc(func(n *ast.Node) {
		if in, isIn := (*n).(*ast.BinaryNode); isIn && ok && (in.Operator == "in" || in.Operator == "not in") {
			rt, lt := in.Right.Type(), in.Left.Type()
			if rt != nil && rt.Kind() == reflect.Map && rt.Key().Kind() == reflect.String && lt != nil &&
				lt.Kind() != reflect.String && lt.Kind() != reflect.Interface {
				c.r.Errorf(c.offsetPos(p.e, p.prog.Source, in.Left.Location().From), "%s: %s looks up a key of a mapping, whose keys are text, but %s is %s, so evaluating it fails", p.what, in.Operator, in.Left.String(), exprTypeWords(lt.String()))
				ok = false
			}
			return
		}
		b, isB := (*n).(*ast.BuiltinNode)
		if !isB || !ok {
			return
		}
		switch {
		case (b.Name == "sortBy" || b.Name == "sort") && len(b.Arguments) >= 1:
			// sort orders numbers or text: a list of goals, messages or
			// mappings fails on its second item.
			var t reflect.Type
			if cl, isCl := lastPredicate(b); isCl {
				t = cl.Node.Type()
				if _, bare := cl.Node.(*ast.PointerNode); bare && (t == nil || t.Kind() == reflect.Interface) {
					t = literalItems(b.Arguments[0])
				}
			} else if b.Name == "sort" {
				t = literalItems(b.Arguments[0])
			}
			if t == nil {
				return
			}
			switch t.Kind() {
			case reflect.Struct, reflect.Map, reflect.Slice, reflect.Bool, reflect.Pointer:
				c.r.Errorf(c.offsetPos(p.e, p.prog.Source, b.Location().From), "%s: %s orders numbers or text, but it is given %s, so evaluating it fails on a list of two or more", p.what, b.Name, typeWithItems(reflect.SliceOf(t)))
				ok = false
			}
		case predicateBuiltins[b.Name] && len(b.Arguments) == 2:
			cl, isCl := b.Arguments[1].(*ast.PredicateNode)
			if !isCl || cl.Node == nil {
				return
			}
			t := cl.Node.Type()
			items := literalItems(b.Arguments[0])
			if _, bare := cl.Node.(*ast.PointerNode); bare && (t == nil || t.Kind() == reflect.Interface) {
				// {#} over a list expr types as any items: its literal's.
				t = items
			}
			if items != nil && !itemArithmetic(p, c, b.Name, cl.Node, items) {
				ok = false
				return
			}
			if t != nil && t.Kind() != reflect.Bool && t.Kind() != reflect.Interface {
				c.r.Errorf(c.offsetPos(p.e, p.prog.Source, b.Arguments[1].Location().From), "%s: %s's predicate %s gives %s, but a boolean is wanted, so evaluating it fails", p.what, b.Name, cl.Node.String(), exprTypeWords(t.String()))
				ok = false
			}
		case numberBuiltins[b.Name]:
			if b.Map != nil {
				return // sum(map(list, {...})), fused: the mapping gives the numbers
			}
			for _, a := range b.Arguments {
				if _, pred := a.(*ast.PredicateNode); pred {
					// sum(list, {...}) (expr makes sum(map(...)) one): the
					// predicate gives the numbers, not the list.
					return
				}
			}
			for _, a := range b.Arguments {
				if _, pred := a.(*ast.PredicateNode); pred {
					continue // sum(list, {...}): the mapping of each item
				}
				t := a.Type()
				if t != nil && t.Kind() == reflect.Func {
					continue
				}
				for t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
					t = t.Elem()
				}
				if t != nil && t.Kind() == reflect.Interface {
					if lt := literalItems(a); lt != nil {
						t = lt
					}
				}
				if t == nil || t.Kind() == reflect.Interface {
					continue
				}
				switch t.Kind() {
				case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
					reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
					reflect.Float32, reflect.Float64:
					continue
				}
				c.r.Errorf(c.offsetPos(p.e, p.prog.Source, a.Location().From), "%s: %s takes numbers (or lists of numbers), but %s holds %s, so evaluating it fails", p.what, b.Name, a.String(), exprTypeWords(t.String()))
				ok = false
				return
			}
		}
	}))
	return ok
}

// checkLiteralKey refuses {"a": 1}.b: a mapping written in the expression
// has only its keys, and the read gives nil.
func checkLiteralKey(m *ast.MemberNode, fail func(int, string, ...any)) {
	lit, ok := m.Node.(*ast.MapNode)
	prop, ok2 := m.Property.(*ast.StringNode)
	if !ok || !ok2 || m.Optional {
		return
	}
	var keys []string
	for _, p := range lit.Pairs {
		pair, ok := p.(*ast.PairNode)
		if !ok {
			return
		}
		k, ok := pair.Key.(*ast.StringNode)
		if !ok {
			return
		}
		if k.Value == prop.Value {
			return
		}
		keys = append(keys, k.Value)
	}
	fail(m.Property.Location().From, "the mapping written here has no key %q (its keys: %s), so the read gives nil", prop.Value, strings.Join(keys, ", "))
}

// literalItems is the type of the items of a list written in the
// expression ([1, 2], sort(["a", "b"])), which expr types as any; nil when
// the items differ or the list is not written out.
func literalItems(n ast.Node) reflect.Type {
	switch x := n.(type) {
	case *ast.ArrayNode:
		var t reflect.Type
		for _, item := range x.Nodes {
			var it reflect.Type
			switch item.(type) {
			case *ast.StringNode:
				it = reflect.TypeOf("")
			case *ast.IntegerNode:
				it = reflect.TypeOf(0)
			case *ast.FloatNode:
				it = reflect.TypeOf(0.0)
			case *ast.BoolNode:
				it = reflect.TypeOf(false)
			default:
				return nil
			}
			if t != nil && t != it {
				return nil
			}
			t = it
		}
		return t
	case *ast.ConstantNode:
		// expr folds a written list into a constant.
		list, ok := x.Value.([]any)
		if !ok || len(list) == 0 {
			return nil
		}
		var t reflect.Type
		for _, item := range list {
			it := reflect.TypeOf(item)
			if it == nil || t != nil && t != it {
				return nil
			}
			t = it
		}
		return t
	case *ast.BuiltinNode:
		if x.Map != nil {
			return nil // filter(map(...)) fused: the mapping's values
		}
		switch x.Name {
		case "sort", "reverse", "filter", "sortBy", "uniq", "take":
			if len(x.Arguments) > 0 {
				return literalItems(x.Arguments[0])
			}
		}
	}
	// A list whose type says its items' (latest(...) is a list of messages).
	if t := n.Type(); t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t.Elem().Kind() != reflect.Interface {
		return t.Elem()
	}
	return nil
}

// itemArithmetic refuses arithmetic on the item (#) of a predicate whose
// items are known not to be numbers: expr types # as any after reverse,
// sort and the like, and the run fails on the first item.
func itemArithmetic(p *pendingExpr, c *compiler, fn string, body ast.Node, item reflect.Type) bool {
	switch item.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.Interface:
		return true
	}
	ok := true
	ast.Walk(&body, visitorFunc(func(n *ast.Node) {
		bin, isBin := (*n).(*ast.BinaryNode)
		if !isBin || !ok {
			return
		}
		switch bin.Operator {
		case "+", "-", "*", "/", "%", "**", "^":
		default:
			return
		}
		_, l := bin.Left.(*ast.PointerNode)
		_, r := bin.Right.(*ast.PointerNode)
		if !l && !r {
			return
		}
		if bin.Operator == "+" && item.Kind() == reflect.String {
			return // text joins
		}
		c.r.Errorf(c.offsetPos(p.e, p.prog.Source, bin.Location().From), "%s: %s's predicate computes %s, but its items are %s, which %s cannot take, so evaluating it fails", p.what, fn, bin.String(), typeWithItems(reflect.SliceOf(item))[len("a list of "):], bin.Operator)
		ok = false
	}))
	return ok
}

// lastPredicate is a builtin's predicate argument, if it has one.
func lastPredicate(b *ast.BuiltinNode) (*ast.PredicateNode, bool) {
	for _, a := range b.Arguments {
		if p, ok := a.(*ast.PredicateNode); ok && p.Node != nil {
			return p, true
		}
	}
	return nil, false
}
