package spec

import (
	"fmt"
	"reflect"
	"strings"
	"text/template/parse"
)

// This file checks text/template's own functions (call, index, slice, len)
// with their full signatures, types the values they give, and folds the
// constants their arguments hold: {{call .Agent.Name}}, {{len .Round}},
// {{slice .Inputs.x 3 1}} and {{indent -1 .x}} fail when the prompt is
// rendered, after the calls before it were paid for.

// numberType is the type text/template gives a number constant where any
// value is taken (idealConstant): a decimal point or an exponent makes it a
// float64, a character constant or an integer an int.
func numberType(n *parse.NumberNode) tmplType {
	switch {
	case n.IsComplex && !n.IsFloat:
		return tmplType{t: reflect.TypeOf(complex128(0))}
	case n.IsFloat && !isHexInt(n.Text) && !isRune(n.Text) && strings.ContainsAny(n.Text, ".eEpP"):
		return tmplType{t: reflect.TypeOf(0.0), konst: n.Float64}
	case n.IsInt:
		return tmplType{t: reflect.TypeOf(0), konst: n.Int64}
	case n.IsUint:
		return tmplType{t: reflect.TypeOf(uint(0))}
	}
	return tmplType{}
}

func isHexInt(s string) bool {
	return len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && !strings.ContainsAny(s, "pP")
}

func isRune(s string) bool { return len(s) > 0 && s[0] == '\'' }

// itemType is the type of the items of a list (or the values of a map):
// the Go type's element, or the declared type when the Go type holds any.
func (tt tmplType) itemType() tmplType {
	t := deref(tt.t)
	if t == nil {
		return tmplType{}
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		if tt.elem != nil {
			return *tt.elem
		}
		if t.Kind() == reflect.Map && tt.vals != nil {
			list := make([]tmplType, 0, len(tt.vals))
			for _, k := range sortedKeys(tt.vals) {
				list = append(list, tt.vals[k])
			}
			return oneOf(list)
		}
		if t.Elem().Kind() == reflect.Interface {
			return tmplType{}
		}
		return tmplType{t: t.Elem()}
	case reflect.String:
		return tmplType{t: reflect.TypeOf(byte(0))}
	}
	return tmplType{}
}

// assignVar gives an existing variable ($x = ...) its new type, without
// constant. Assigned in the scope that declares it, the variable has the
// new value from there on; assigned inside an if, with or range, it has
// the old or the new one after it (and in the next round of a range).
func assignVar(vars []map[string]tmplType, name string, t tmplType) {
	t.konst, t.boxed = nil, false
	for i := len(vars) - 1; i >= 0; i-- {
		if old, ok := vars[i][name]; ok {
			if i == len(vars)-1 {
				vars[i][name] = t
				return
			}
			vars[i][name] = oneOf([]tmplType{old, t})
			return
		}
	}
}

// canBeNil says whether nil can be given where a value of t is wanted.
func canBeNil(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Chan, reflect.Func, reflect.Interface, reflect.Map, reflect.Pointer, reflect.Slice:
		return true
	}
	return false
}

// describeWhat names a value for a message: .Vars.x, or "the value".
func describeWhat(tt tmplType) string {
	if tt.what != "" {
		return "." + tt.what
	}
	return "the value"
}

// checkNonFunction refuses arguments given to a value that is no function
// ({{.Agent.Name "x"}}, {{.Round | .Agent.Name}}): text/template fails with
// "can't give argument to non-function".
func (c *templateChecker) checkNonFunction(tree *parse.Tree, cmd *parse.CommandNode, first tmplType, nargs int, piped bool) {
	if first.unknown() || first.method || first.t.Kind() == reflect.Func || first.t.Kind() == reflect.Interface {
		return
	}
	switch cmd.Args[0].(type) {
	case *parse.FieldNode, *parse.ChainNode, *parse.VariableNode, *parse.DotNode:
	default:
		return
	}
	if nargs == 0 && !piped {
		return
	}
	what := "arguments"
	if nargs == 0 {
		what = "a piped value"
	}
	c.errorf(tree, cmd, "%s is %s, not a function: it cannot be given %s, so rendering would fail", cmd.Args[0], kindWords(first.t), what)
}

// constInt is an argument's constant whole number, if it is one.
func constInt(tt tmplType) (int64, bool) {
	n, ok := tt.konst.(int64)
	return n, ok
}

// checkCallee refuses call of a value that is no function: no value of the
// prompt data is one.
func (c *templateChecker) checkCallee(tree *parse.Tree, cmd *parse.CommandNode, args []tmplType, nodes []parse.Node) {
	f := args[0]
	if f.isNil {
		c.errorf(tree, cmd, "call: nil is not a function, so rendering would fail")
		return
	}
	if f.unknown() || f.t.Kind() == reflect.Func || f.t.Kind() == reflect.Interface {
		return
	}
	c.errorf(tree, cmd, "call: %s is %s, not a function, so rendering would fail (call runs a function a value holds; no value of the prompt data is one)", describeArg(nodes, 0, f), kindWords(f.t))
}

// checkLen refuses len of a value that has no length.
func (c *templateChecker) checkLen(tree *parse.Tree, cmd *parse.CommandNode, args []tmplType, nodes []parse.Node) {
	a := args[0]
	if a.isNil {
		c.errorf(tree, cmd, "len: nil has no length, so rendering would fail")
		return
	}
	t := deref(a.t)
	if t == nil {
		return
	}
	switch t.Kind() {
	case reflect.Array, reflect.Chan, reflect.Map, reflect.Slice, reflect.String, reflect.Interface:
		return
	}
	c.errorf(tree, cmd, "len: %s is %s, which has no length (len takes a list, a mapping or text), so rendering would fail", describeArg(nodes, 0, a), kindWords(t))
}

// indexable says whether index or slice can take a value of t, and what it
// then wants as an index: "number" (a list, text) or "key" (a mapping).
func indexable(t reflect.Type) (string, bool) {
	switch t.Kind() {
	case reflect.Array, reflect.Slice, reflect.String:
		return "number", true
	case reflect.Map:
		return "key", true
	case reflect.Interface:
		return "", true
	}
	return "", false
}

// checkIndexKinds checks index x i j ...: x must be a list, a mapping or
// text at each step, a list's index a whole number not below 0, a
// mapping's key of the mapping's key type. It reports whether all is well.
func (c *templateChecker) checkIndexKinds(tree *parse.Tree, cmd *parse.CommandNode, args []tmplType, nodes []parse.Node, piped bool) bool {
	cur := args[0]
	if cur.isNil {
		c.errorf(tree, cmd, "index: nil cannot be indexed, so rendering would fail")
		return false
	}
	for i := 1; i < len(args); i++ {
		t := deref(cur.t)
		if t == nil {
			return true
		}
		how, ok := indexable(t)
		if !ok {
			what := describeArg(nodes, 0, args[0])
			if i > 1 {
				what = fmt.Sprintf("the value %s gives after %d indexes", what, i-1)
			}
			c.errorf(tree, cmd, "index: %s is %s, which cannot be indexed (index takes a list, a mapping or text), so rendering would fail", what, kindWords(t))
			return false
		}
		ix := args[i]
		switch how {
		case "number":
			if ix.isNil {
				c.errorf(tree, cmd, "index: %s is nil, but a whole number is wanted to index %s", argWhich(i, piped, len(args)), kindWords(t))
				return false
			}
			if !ix.unknown() && ix.t.Kind() != reflect.Interface && !isIntKind(ix.t) {
				c.errorf(tree, cmd, "index: %s is %s, but a whole number is wanted to index %s, so rendering would fail", argWhich(i, piped, len(args)), kindWords(ix.t), kindWords(t))
				return false
			}
			if n, ok := constInt(ix); ok && n < 0 {
				c.errorf(tree, cmd, "index: %s is %d, but an index is never below 0, so rendering would fail", argWhich(i, piped, len(args)), n)
				return false
			}
		case "key":
			key := t.Key()
			if ix.isNil && !canBeNil(key) {
				c.errorf(tree, cmd, "index: %s is nil, but %s is wanted as the mapping's key", argWhich(i, piped, len(args)), kindWords(key))
				return false
			}
			if !ix.unknown() && ix.t.Kind() != reflect.Interface && key.Kind() != reflect.Interface && !ix.t.AssignableTo(key) {
				c.errorf(tree, cmd, "index: %s is %s, but the mapping's keys are %s, so rendering would fail", argWhich(i, piped, len(args)), kindWords(ix.t), plainKind(key))
				return false
			}
		}
		cur = indexResult(cur, ix, c.keyType)
	}
	return true
}

// plainKind is kindWords for a plural: the mapping's keys are text.
func plainKind(t reflect.Type) string {
	if t.Kind() == reflect.String {
		return "text"
	}
	return strings.TrimPrefix(strings.TrimPrefix(kindWords(t), "a "), "an ") + "s"
}

// indexResult is the type index gives for one index into cur.
func indexResult(cur, ix tmplType, keyType keyTypeFunc) tmplType {
	t := deref(cur.t)
	if t == nil {
		return tmplType{}
	}
	if t.Kind() == reflect.Map {
		if k, ok := ix.konst.(string); ok {
			if v, ok := cur.vals[k]; ok {
				return v
			}
			if cur.keys != nil && keyType != nil {
				if kt, ok := keyType(cur.what, k); ok {
					return kt
				}
			}
		}
		if cur.keys != nil {
			// inputs, vars, nodes: their values differ by key.
			if t.Elem().Kind() == reflect.Interface {
				return tmplType{}
			}
		}
	}
	return cur.itemType()
}

// checkSlice checks slice x i j k: x a list or text (text takes at most two
// indexes), every index a whole number not below 0, constant ones in order.
func (c *templateChecker) checkSlice(tree *parse.Tree, cmd *parse.CommandNode, args []tmplType, nodes []parse.Node, piped bool) {
	x := args[0]
	if x.isNil {
		c.errorf(tree, cmd, "slice: nil cannot be sliced, so rendering would fail")
		return
	}
	if t := deref(x.t); t != nil {
		switch t.Kind() {
		case reflect.String:
			if len(args) == 4 {
				c.errorf(tree, cmd, "slice: text takes at most two indexes (slice TEXT FROM TO), but three are given, so rendering would fail")
				return
			}
		case reflect.Slice, reflect.Array, reflect.Interface:
		default:
			c.errorf(tree, cmd, "slice: %s is %s, which cannot be sliced (slice takes a list or text), so rendering would fail", describeArg(nodes, 0, x), kindWords(t))
			return
		}
	}
	prev, prevAt := int64(-1), 0
	for i := 1; i < len(args); i++ {
		ix := args[i]
		if ix.isNil {
			c.errorf(tree, cmd, "slice: %s is nil, but a whole number is wanted", argWhich(i, piped, len(args)))
			return
		}
		if !ix.unknown() && ix.t.Kind() != reflect.Interface && !isIntKind(ix.t) {
			c.errorf(tree, cmd, "slice: %s is %s, but a whole number is wanted, so rendering would fail", argWhich(i, piped, len(args)), kindWords(ix.t))
			return
		}
		if ix.boxed {
			// text/template's slice does not unwrap an index read from a
			// mapping of any values (index does).
			what := describeArg(nodes, i, ix)
			c.errorf(tree, cmd, "slice: %s is read from a mapping of any values, which slice cannot take as an index (\"cannot index slice/array with type interface {}\"); write it in parentheses, (%s), which unwraps it", what, what)
			return
		}
		n, ok := constInt(ix)
		if !ok {
			continue
		}
		if n < 0 {
			c.errorf(tree, cmd, "slice: %s is %d, but an index is never below 0, so rendering would fail", argWhich(i, piped, len(args)), n)
			return
		}
		if prev >= 0 && n < prev {
			c.errorf(tree, cmd, "slice: index %d (%d) is below index %d (%d), so rendering would fail", i, n, prevAt, prev)
			return
		}
		prev, prevAt = n, i
	}
}

// checkDomains refuses constant arguments outside a helper's domain:
// indent repeats a space N times, and a negative N panics.
func (c *templateChecker) checkDomains(tree *parse.Tree, cmd *parse.CommandNode, name string, args []tmplType, nodes []parse.Node, piped bool) {
	switch name {
	case "indent":
		if n, ok := constInt(args[0]); ok && n < 0 {
			c.errorf(tree, cmd, "indent: %s is %d, but a count of spaces is never below 0, so rendering would fail", argWhich(0, piped, len(args)), n)
		}
	}
}

// callResult is the type a function's call gives, with its constant when
// add and sub are given constants.
func (c *templateChecker) callResult(name string, args []tmplType, nodes []parse.Node) tmplType {
	fn, ok := c.funcs[name]
	if !ok {
		switch name {
		case "len":
			return tmplType{t: reflect.TypeOf(0)}
		case "print", "printf", "println", "html", "js", "urlquery":
			return tmplType{t: reflect.TypeOf("")}
		case "not", "eq", "ne", "lt", "le", "gt", "ge":
			return tmplType{t: reflect.TypeOf(true)}
		case "index":
			if len(args) == 0 {
				return tmplType{}
			}
			cur := args[0]
			for _, ix := range args[1:] {
				boxed := false
				if t := deref(cur.t); t != nil {
					switch t.Kind() {
					case reflect.Slice, reflect.Array, reflect.Map:
						boxed = t.Elem().Kind() == reflect.Interface
					}
				}
				cur = indexResult(cur, ix, c.keyType)
				cur.boxed = boxed
				if cur.unknown() {
					return cur
				}
			}
			cur.konst, cur.what = nil, ""
			return cur
		case "slice":
			if len(args) == 0 {
				return tmplType{}
			}
			out := args[0]
			out.konst, out.what, out.keys = nil, "", nil
			return out
		case "and", "or":
			return oneOf(shortCircuit(name, args))
		}
		return tmplType{}
	}
	switch name {
	case "add", "sub":
		if len(args) == 2 {
			a, aok := constInt(args[0])
			b, bok := constInt(args[1])
			if aok && bok {
				if name == "sub" {
					b = -b
				}
				return tmplType{t: reflect.TypeOf(0), konst: a + b}
			}
		}
	case "default":
		// default D V gives D or V: D when V is nil, "" or 0.
		if len(args) == 2 {
			if v, known := truth(args[1]); known && (v || args[1].t != nil && args[1].t.Kind() == reflect.Struct) {
				return oneOf(args[1:])
			}
			if args[1].isNil {
				return oneOf(args[:1])
			}
			return oneOf(args)
		}
		return tmplType{}
	}
	ft := reflect.TypeOf(fn)
	if ft.NumOut() == 0 || ft.Out(0).Kind() == reflect.Interface {
		return tmplType{}
	}
	return tmplType{t: ft.Out(0)}
}

// truth is what text/template's if makes of a value, when a type or a
// constant decides it: a struct is always true, nil always false.
func truth(tt tmplType) (val, known bool) {
	switch k := tt.konst.(type) {
	case bool:
		return k, true
	case int64:
		return k != 0, true
	case float64:
		return k != 0, true
	case string:
		return k != "", true
	}
	if tt.isNil {
		return false, true
	}
	if tt.t != nil && tt.t.Kind() == reflect.Struct {
		return true, true
	}
	return false, false
}

// shortCircuit lists the arguments and (or) may give: the first false
// (true) one, else the last; arguments a constant or a type decides are
// left out where they cannot be the result.
func shortCircuit(name string, args []tmplType) []tmplType {
	var out []tmplType
	for i, a := range args {
		if i == len(args)-1 {
			return append(out, a)
		}
		v, known := truth(a)
		stop := name == "and" && !v || name == "or" && v
		if known && !stop {
			continue
		}
		out = append(out, a)
		if known {
			return out
		}
	}
	return out
}

// oneOf is the type of a value that is one of these: their type when they
// agree, alternatives when they are all known, unknown otherwise.
func oneOf(list []tmplType) tmplType {
	if len(list) == 0 {
		return tmplType{}
	}
	var flat []tmplType
	for _, a := range list {
		a.konst, a.what, a.keys, a.boxed = nil, "", nil, false
		if len(a.alts) > 0 {
			flat = append(flat, a.alts...)
			continue
		}
		if a.unknown() && !a.isNil {
			return tmplType{}
		}
		flat = append(flat, a)
	}
	var uniq []tmplType
	for _, a := range flat {
		dup := false
		for _, u := range uniq {
			if a.isNil && u.isNil || !a.isNil && !u.isNil && sameDeclared(a, u) {
				dup = true
				break
			}
		}
		if !dup {
			uniq = append(uniq, a)
		}
	}
	if len(uniq) == 1 {
		return uniq[0]
	}
	return tmplType{alts: uniq}
}
