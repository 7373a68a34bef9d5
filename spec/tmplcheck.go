package spec

import (
	"fmt"
	"path"
	"reflect"
	"sort"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"
)

// tmplType is the static type of a value inside a template. keys, when set,
// is the set of keys a map may be indexed with (inputs, vars, nodes), so that
// .Inputs.probelm is caught before a run.
type tmplType struct {
	t    reflect.Type
	keys []string
	what string
	// replyKeys: a map whose keys a model's reply decides (Message.Fields).
	replyKeys bool
	// elem is the declared type of the items of a list, or of the values of
	// a map, whose Go type holds any (a var's default [1, 2] is a []any of
	// whole numbers); nil when the items differ or are not known.
	elem *tmplType
	// vals are the declared types of a map's values by key (a var whose
	// default is a mapping).
	vals map[string]tmplType
	// konst is the value of a constant (int64, float64, string, bool), folded
	// through variables and add/sub, so that argument domains and bounds
	// can be checked; nil when not constant.
	konst any
	// isNil: the nil constant.
	isNil bool
	// method: the value comes from a method, which may take arguments.
	method bool
	// boxed: the value is read from a list or mapping of any values, and
	// text/template hands it on as such (slice refuses it as an index;
	// a pipeline's end, as in (.Vars.n), unwraps it).
	boxed bool
	// alts are the types a value may have when it is one of several (and,
	// or and default give one of their arguments); t is nil then.
	alts []tmplType
}

func (tt tmplType) unknown() bool { return tt.t == nil }

// templateChecker walks parsed templates and reports fields that cannot
// exist on the data they are given.
type templateChecker struct {
	set     *template.Template
	funcs   template.FuncMap
	domains map[string][]string // tmplkeys tag -> allowed keys
	// keyType gives the declared type of a key of a domain (nil: unknown).
	keyType keyTypeFunc
	errs    []string
	seen    map[string]bool
	stack   []string
	reads   []tmplNodeRead
	// cycles are the template cycles already reported, by their members.
	cycles map[string]bool
}

// tmplNodeRead is a read of .Nodes.ID in a template.
type tmplNodeRead struct {
	id  string
	loc string // NAME:LINE:COL of the read
	// loop: a read of .Loop.ID (a loop or foreach variable), not of a node.
	loop bool
	// scoped: a read whose value only some scopes hold (see scopedRead):
	// "item" (.Item), "agentvar" (.Agent.Vars.ID), "goalvar" (.Goal.Vars.ID).
	scoped string
}

// check checks the named template with dot of type root. It returns
// messages for fields that do not exist, functions called wrongly,
// templates that are not defined or call themselves, and the nodes the
// template reads through .Nodes.ID.
func (c *templateChecker) check(name string, root reflect.Type) ([]string, []tmplNodeRead) {
	c.errs, c.reads = nil, nil
	c.seen = map[string]bool{}
	c.walkTemplate(name, tmplType{t: root})
	c.checkCacheBreaks(name)
	return c.errs, c.reads
}

func (c *templateChecker) walkTemplate(name string, dot tmplType) {
	key := name + "|" + fmt.Sprint(dot.t)
	if c.seen[key] {
		return
	}
	c.seen[key] = true
	t := c.set.Lookup(name)
	if t == nil || t.Tree == nil {
		c.errs = append(c.errs, fmt.Sprintf("template %q is not defined", name))
		return
	}
	c.stack = append(c.stack, name)
	defer func() { c.stack = c.stack[:len(c.stack)-1] }()
	vars := []map[string]tmplType{{"$": dot}}
	c.walk(t.Tree, t.Tree.Root, dot, &vars)
}

func (c *templateChecker) errorf(tree *parse.Tree, n parse.Node, format string, args ...any) {
	loc := c.stack[len(c.stack)-1]
	if tree != nil && n != nil {
		loc, _ = tree.ErrorContext(n)
	}
	c.errs = append(c.errs, fmt.Sprintf("%s: %s", loc, fmt.Sprintf(format, args...)))
}

func (c *templateChecker) walk(tree *parse.Tree, n parse.Node, dot tmplType, vars *[]map[string]tmplType) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, x := range n.Nodes {
			c.walk(tree, x, dot, vars)
		}
	case *parse.ActionNode:
		c.pipe(tree, n.Pipe, dot, vars)
	case *parse.IfNode:
		c.branch(tree, &n.BranchNode, dot, vars, false)
	case *parse.WithNode:
		c.branch(tree, &n.BranchNode, dot, vars, true)
	case *parse.RangeNode:
		*vars = append(*vars, map[string]tmplType{})
		pt := c.pipeNoDecl(tree, n.Pipe, dot, vars)
		if k, ok := rangeCount(n.Pipe); ok && k > MaxTemplateRange {
			c.errorf(tree, n, "range over %d: a template ranges over at most %d", k, MaxTemplateRange)
		}
		for _, alt := range append([]tmplType{pt}, pt.alts...) {
			if t := deref(alt.t); t != nil && !rangeable(t) {
				what := "the value"
				if pt.what != "" {
					what = "." + pt.what
				}
				may := "it is"
				if len(pt.alts) > 0 {
					may = "it may be (and, or and default give one of their arguments)"
				}
				c.errorf(tree, n, "cannot range over %s: %s %s, not a list or a mapping", what, may, kindWords(t))
				break
			}
		}
		if t := deref(pt.t); t != nil && len(n.Pipe.Decl) == 2 && (isIntKind(t)) {
			c.errorf(tree, n, "range over a number gives one variable, but two are declared, so rendering would fail")
		}
		elem, key := rangeTypes(pt)
		if len(n.Pipe.Decl) == 1 {
			(*vars)[len(*vars)-1][n.Pipe.Decl[0].Ident[0]] = elem
		} else if len(n.Pipe.Decl) == 2 {
			(*vars)[len(*vars)-1][n.Pipe.Decl[0].Ident[0]] = key
			(*vars)[len(*vars)-1][n.Pipe.Decl[1].Ident[0]] = elem
		}
		c.walk(tree, n.List, elem, vars)
		*vars = (*vars)[:len(*vars)-1]
		if n.ElseList != nil {
			c.walk(tree, n.ElseList, dot, vars)
		}
	case *parse.TemplateNode:
		arg := tmplType{}
		if n.Pipe != nil {
			arg = c.pipe(tree, n.Pipe, dot, vars)
		}
		if c.set.Lookup(n.Name) == nil {
			var names []string
			for _, t := range c.set.Templates() {
				names = append(names, t.Name())
			}
			c.errorf(tree, n, "template %q is not defined%s", n.Name, syntax.DidYouMean(n.Name, names))
			return
		}
		if i := stackIndex(c.stack, n.Name); i >= 0 {
			cycle := append(append([]string(nil), c.stack[i:]...), n.Name)
			key := strings.Join(sortedCopy(c.stack[i:]), ",")
			if c.cycles == nil {
				c.cycles = map[string]bool{}
			}
			if !c.cycles[key] {
				c.cycles[key] = true
				c.errorf(tree, n, "templates call each other in a cycle (%s): rendering would never end", strings.Join(cycle, " -> "))
			}
			return
		}
		if !arg.unknown() {
			c.walkTemplate(n.Name, arg)
		} else {
			// The dot passed is of no known type: still follow the call,
			// for cycles and undefined templates, without field checks.
			c.walkTemplate(n.Name, tmplType{t: anyType})
		}
	}
}

func stackIndex(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func sortedCopy(list []string) []string {
	out := append([]string(nil), list...)
	sort.Strings(out)
	return out
}

func (c *templateChecker) branch(tree *parse.Tree, b *parse.BranchNode, dot tmplType, vars *[]map[string]tmplType, with bool) {
	*vars = append(*vars, map[string]tmplType{})
	pt := c.pipe(tree, b.Pipe, dot, vars)
	inner := dot
	if with {
		inner = pt
	}
	c.walk(tree, b.List, inner, vars)
	*vars = (*vars)[:len(*vars)-1]
	if b.ElseList != nil {
		c.walk(tree, b.ElseList, dot, vars)
	}
}

// rangeable reports whether text/template can range over values of t.
func rangeable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map, reflect.Chan, reflect.Interface,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Func:
		return true
	}
	return false
}

func rangeTypes(pt tmplType) (elem, key tmplType) {
	t := deref(pt.t)
	if len(pt.alts) > 0 {
		var elems, keys []tmplType
		for _, a := range pt.alts {
			e, k := rangeTypes(a)
			elems, keys = append(elems, e), append(keys, k)
		}
		return oneOf(elems), oneOf(keys)
	}
	if t == nil {
		return tmplType{}, tmplType{}
	}
	elem = pt.itemType()
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		elem.boxed = t.Elem().Kind() == reflect.Interface
		return elem, tmplType{t: reflect.TypeOf(0)}
	case reflect.Map:
		elem.boxed = t.Elem().Kind() == reflect.Interface
		return elem, tmplType{t: t.Key()}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return tmplType{t: t}, tmplType{}
	}
	return tmplType{}, tmplType{}
}

// pipe types a pipeline and declares its variables.
func (c *templateChecker) pipe(tree *parse.Tree, p *parse.PipeNode, dot tmplType, vars *[]map[string]tmplType) tmplType {
	t := c.pipeNoDecl(tree, p, dot, vars)
	if p != nil {
		t.boxed = t.boxed && len(p.Decl) == 0 // a variable holds the unwrapped value
		for _, d := range p.Decl {
			if p.IsAssign {
				// $x = ...: the variable of an outer scope changes, maybe
				// only on some paths; its old constant no longer holds.
				if _, ok := lookupVar(*vars, d.Ident[0]); !ok {
					c.errorf(tree, d, "variable %s is not declared here, so it cannot be assigned (a variable lives until the end of the if, range or with that declares it)", d.Ident[0])
					continue
				}
				assignVar(*vars, d.Ident[0], t)
				continue
			}
			(*vars)[len(*vars)-1][d.Ident[0]] = t
		}
	}
	return t
}

func (c *templateChecker) pipeNoDecl(tree *parse.Tree, p *parse.PipeNode, dot tmplType, vars *[]map[string]tmplType) tmplType {
	if p == nil {
		return tmplType{}
	}
	var last tmplType
	for i, cmd := range p.Cmds {
		var piped *tmplType
		if i > 0 {
			prev := last
			piped = &prev
		}
		last = c.command(tree, cmd, dot, vars, piped)
	}
	return last
}

// command types one command of a pipeline; piped is the value the previous
// command hands on (nil for the first), which a function gets as its last
// argument.
func (c *templateChecker) command(tree *parse.Tree, cmd *parse.CommandNode, dot tmplType, vars *[]map[string]tmplType, piped *tmplType) tmplType {
	var result tmplType
	args := make([]tmplType, 0, len(cmd.Args))
	for i, arg := range cmd.Args {
		t := c.arg(tree, arg, dot, vars)
		if i == 0 {
			result = t
		} else {
			args = append(args, t)
		}
	}
	if len(cmd.Args) > 0 {
		if id, ok := cmd.Args[0].(*parse.IdentifierNode); ok {
			nodes := cmd.Args[1:]
			if piped != nil {
				args = append(args, *piped)
			}
			if !c.checkCall(tree, cmd, id.Ident, args, nodes, piped != nil) {
				return tmplType{}
			}
			return c.callResult(id.Ident, args, nodes)
		}
		if _, ok := cmd.Args[0].(*parse.NilNode); ok {
			c.errorf(tree, cmd, "nil is not a command: an action cannot start with nil, so rendering would fail")
			return tmplType{}
		}
		c.checkNonFunction(tree, cmd, result, len(cmd.Args)-1, piped != nil)
	}
	return result
}

// builtinArity is how many arguments text/template's own functions take:
// at least min, at most max (-1: any number).
var builtinArity = map[string][2]int{
	"and": {1, -1}, "or": {1, -1}, "not": {1, 1}, "len": {1, 1}, "index": {1, -1},
	"slice": {1, 4}, "print": {0, -1}, "printf": {1, -1}, "println": {0, -1},
	"html": {0, -1}, "js": {0, -1}, "urlquery": {0, -1}, "call": {1, -1},
	"eq": {2, -1}, "ne": {2, 2}, "lt": {2, 2}, "le": {2, 2}, "gt": {2, 2}, "ge": {2, 2},
}

// valueArgs are the builtins that fail on the nil constant in any place
// (index, slice, len and call check their own; eq and and or take it).
var valueArgs = map[string]bool{"lt": true, "le": true, "gt": true, "ge": true}

// checkCall checks a function call's number of arguments and, where both
// are known, their types: a wrong call fails when the prompt is rendered,
// which may be after many paid calls.
func (c *templateChecker) checkCall(tree *parse.Tree, cmd *parse.CommandNode, name string, args []tmplType, nodes []parse.Node, piped bool) bool {
	before := len(c.errs)
	combos := expandAlts(args)
	for _, combo := range combos {
		c.checkCallArgs(tree, cmd, name, combo, nodes, piped)
		if len(c.errs) > before {
			if len(combos) > 1 {
				c.errs[len(c.errs)-1] += " (the value may be of several kinds, and each must fit: and, or and default give one of their arguments, and a list's items or a map's values may mix kinds)"
			}
			break
		}
	}
	return len(c.errs) == before
}

// expandAlts lists the argument lists a call may be given when arguments
// are one of several values (at most 32 of them; beyond, those arguments
// count as unknown).
func expandAlts(args []tmplType) [][]tmplType {
	out := [][]tmplType{nil}
	for _, a := range args {
		choices := []tmplType{a}
		if len(a.alts) > 0 && len(out)*len(a.alts) <= 32 {
			choices = a.alts
		}
		var next [][]tmplType
		for _, prefix := range out {
			for _, ch := range choices {
				next = append(next, append(append([]tmplType(nil), prefix...), ch))
			}
		}
		out = next
	}
	return out
}

func (c *templateChecker) checkCallArgs(tree *parse.Tree, cmd *parse.CommandNode, name string, args []tmplType, nodes []parse.Node, piped bool) {
	got := len(args)
	plural := func(n int) string {
		if n == 1 {
			return "1 argument"
		}
		return fmt.Sprintf("%d arguments", n)
	}
	pipedNote := ""
	if piped {
		pipedNote = " (counting the value piped into it)"
	}
	fn, ok := c.funcs[name]
	if !ok {
		if valueArgs[name] {
			for i, n := range nodes {
				if _, ok := n.(*parse.NilNode); ok {
					c.errorf(tree, n, "%s: argument %d is nil, which %s cannot take, so rendering would fail", name, i+1, name)
					return
				}
			}
		}
		if a, ok := builtinArity[name]; ok {
			switch {
			case got < a[0]:
				c.errorf(tree, cmd, "%s takes at least %s, but is given %d%s", name, plural(a[0]), got, pipedNote)
				return
			case a[1] >= 0 && got > a[1]:
				c.errorf(tree, cmd, "%s takes at most %s, but is given %d%s", name, plural(a[1]), got, pipedNote)
				return
			}
		}
		switch name {
		case "eq", "ne", "lt", "le", "gt", "ge":
			c.checkCompare(tree, cmd, name, args, nodes)
		case "printf":
			c.checkPrintf(tree, cmd, args, nodes)
		case "index":
			if !c.checkIndexKinds(tree, cmd, args, nodes, piped) {
				return
			}
			c.checkIndex(tree, cmd, args, nodes)
		case "slice":
			c.checkSlice(tree, cmd, args, nodes, piped)
		case "len":
			c.checkLen(tree, cmd, args, nodes)
		case "call":
			c.checkCallee(tree, cmd, args, nodes)
		}
		return
	}
	ft := reflect.TypeOf(fn)
	in := ft.NumIn()
	switch {
	case ft.IsVariadic() && got < in-1:
		c.errorf(tree, cmd, "%s takes at least %s, but is given %d%s", name, plural(in-1), got, pipedNote)
		return
	case !ft.IsVariadic() && got != in:
		c.errorf(tree, cmd, "%s takes %s, but is given %d%s", name, plural(in), got, pipedNote)
		return
	}
	for i, at := range args {
		var want reflect.Type
		switch {
		case ft.IsVariadic() && i >= in-1:
			want = ft.In(in - 1).Elem()
		default:
			want = ft.In(i)
		}
		if want == messageListType {
			if !at.unknown() && !isMessageList(at.t) {
				c.errorf(tree, cmd, "%s: %s is %s, but a list of messages is wanted (.History, .Inbox, a node's .Messages or another helper's result)", name, argWhich(i, piped, len(args)), kindWords(deref(at.t)))
			}
			continue
		}
		if at.isNil {
			if !canBeNil(want) {
				c.errorf(tree, cmd, "%s: %s is nil, but %s is wanted", name, argWhich(i, piped, len(args)), kindWords(want))
			}
			continue
		}
		if at.unknown() || want.Kind() == reflect.Interface || at.t.AssignableTo(want) {
			continue
		}
		if i < len(nodes) {
			if num, ok := nodes[i].(*parse.NumberNode); ok && (num.IsInt && isIntKind(want) || num.IsFloat && (want.Kind() == reflect.Float32 || want.Kind() == reflect.Float64)) {
				continue // an untyped constant converts
			}
		}
		which := fmt.Sprintf("argument %d", i+1)
		if piped && i == len(args)-1 {
			which = "the value piped into it"
		}
		c.errorf(tree, cmd, "%s: %s is %s, but %s is wanted", name, which, kindWords(deref(at.t)), kindWords(want))
		return
	}
	c.checkDomains(tree, cmd, name, args, nodes, piped)
}

// messageListType is the parameter type of the message helpers.
var messageListType = reflect.TypeOf((*value.MessageList)(nil)).Elem()

// isMessageList says whether t is a list the message helpers take.
func isMessageList(t reflect.Type) bool {
	t = deref(t)
	if t.Kind() != reflect.Slice {
		return false
	}
	e := t.Elem()
	return e == reflect.TypeOf(value.Message{}) || e == reflect.TypeOf(&value.Message{})
}

func argWhich(i int, piped bool, n int) string {
	if piped && i == n-1 {
		return "the value piped into it"
	}
	return fmt.Sprintf("argument %d", i+1)
}

func isIntKind(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

func (c *templateChecker) arg(tree *parse.Tree, arg parse.Node, dot tmplType, vars *[]map[string]tmplType) tmplType {
	switch a := arg.(type) {
	case *parse.DotNode:
		return dot
	case *parse.FieldNode:
		return c.fields(tree, a, dot, a.Ident)
	case *parse.VariableNode:
		v, ok := lookupVar(*vars, a.Ident[0])
		if !ok {
			// The parser lets a variable declared in one branch of an if
			// be read in its else; rendering then fails.
			c.errorf(tree, a, "variable %s is not declared here (a variable lives until the end of the if, range or with that declares it, and not in its else)", a.Ident[0])
			return tmplType{}
		}
		return c.fields(tree, a, v, a.Ident[1:])
	case *parse.ChainNode:
		base := c.arg(tree, a.Node, dot, vars)
		if p, ok := a.Node.(*parse.PipeNode); ok {
			base = c.pipe(tree, p, dot, vars)
		}
		return c.fields(tree, a, base, a.Field)
	case *parse.PipeNode:
		*vars = append(*vars, map[string]tmplType{})
		t := c.pipe(tree, a, dot, vars)
		*vars = (*vars)[:len(*vars)-1]
		t.boxed = false // a pipeline's end unwraps an any
		return t
	case *parse.StringNode:
		return tmplType{t: reflect.TypeOf(""), konst: a.Text}
	case *parse.NumberNode:
		return numberType(a)
	case *parse.BoolNode:
		return tmplType{t: reflect.TypeOf(true), konst: a.True}
	case *parse.NilNode:
		return tmplType{isNil: true}
	}
	return tmplType{}
}

func lookupVar(vars []map[string]tmplType, name string) (tmplType, bool) {
	for i := len(vars) - 1; i >= 0; i-- {
		if v, ok := vars[i][name]; ok {
			return v, true
		}
	}
	return tmplType{}, false
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// fields follows a chain of .Field lookups from base, reporting the first
// that cannot exist.
func (c *templateChecker) fields(tree *parse.Tree, n parse.Node, base tmplType, names []string) tmplType {
	cur := base
	for _, name := range names {
		if cur.unknown() {
			return cur
		}
		t := deref(cur.t)
		switch t.Kind() {
		case reflect.Struct:
			if f, ok := t.FieldByName(name); ok && f.IsExported() {
				next := tmplType{t: f.Type, what: name}
				c.noteScoped(tree, n, cur, t, name, &next)
				if dom := f.Tag.Get("tmplkeys"); dom != "" {
					next.what = dom
					// A domain that is absent (a collection that is not
					// a mapping, reported) has no known keys to check.
					if keys, ok := c.domains[dom]; ok {
						next.keys = keys
						if next.keys == nil {
							next.keys = []string{}
						}
					}
				}
				cur = next
				continue
			}
			if m, ok := reflect.PointerTo(t).MethodByName(name); ok {
				if m.Type.NumOut() == 0 || m.Type.Out(0).Kind() == reflect.Interface {
					return tmplType{method: true}
				}
				cur = tmplType{t: m.Type.Out(0), method: true}
				continue
			}
			c.errorf(tree, n, "%s has no field %q%s", typeLabel(cur, t), name, syntax.DidYouMean(name, exportedFields(t)))
			return tmplType{}
		case reflect.Map:
			if cur.replyKeys {
				c.replyKey(tree, n, cur, name)
				return tmplType{}
			}
			if cur.what == "Agent.Vars" || cur.what == "Goal.Vars" {
				c.reads = append(c.reads, tmplNodeRead{id: name, loc: c.locOf(tree, n), scoped: map[string]string{"Agent.Vars": "agentvar", "Goal.Vars": "goalvar"}[cur.what]})
			}
			if cur.keys != nil {
				found := false
				for _, k := range cur.keys {
					if k == name {
						found = true
						break
					}
				}
				if !found {
					c.errorf(tree, n, "no %s named %q%s", singular(cur.what), name, syntax.DidYouMean(name, cur.keys))
					return tmplType{}
				}
				if cur.what == "nodes" {
					loc := ""
					if tree != nil && n != nil {
						loc, _ = tree.ErrorContext(n)
					}
					c.reads = append(c.reads, tmplNodeRead{id: name, loc: loc})
				}
				if cur.what == "loop" || cur.what == "loops" {
					loc := ""
					if tree != nil && n != nil {
						loc, _ = tree.ErrorContext(n)
					}
					c.reads = append(c.reads, tmplNodeRead{id: name, loc: loc, loop: true})
				}
				if c.keyType != nil {
					if kt, ok := c.keyType(cur.what, name); ok {
						kt.what = domainField(cur.what) + "." + name
						kt.boxed = t.Elem().Kind() == reflect.Interface
						cur = kt
						continue
					}
				}
			}
			if v, ok := cur.vals[name]; ok {
				v.boxed = t.Elem().Kind() == reflect.Interface
				cur = v
				continue
			}
			if cur.vals != nil && t.Key().Kind() == reflect.String {
				// A mapping var's keys are its default's: missingkey=error
				// fails on any other.
				keys := sortedKeys(cur.vals)
				c.errorf(tree, n, "%s has no key %q%s", describeWhat(cur), name, syntax.DidYouMean(name, keys))
				return tmplType{}
			}
			next := cur.itemType()
			if next.unknown() && len(next.alts) == 0 {
				return tmplType{}
			}
			next.boxed = t.Elem().Kind() == reflect.Interface
			cur = next
		case reflect.Interface:
			return tmplType{}
		default:
			what := "the value"
			if cur.what != "" {
				what = "." + cur.what
			}
			c.errorf(tree, n, "cannot read field %q: %s is %s, not a struct", name, what, kindWords(t))
			return tmplType{}
		}
	}
	return cur
}

// kindWords names a Go type the way a template author thinks of it.
func kindWords(t reflect.Type) string {
	if t == nil {
		return "one of several kinds of value"
	}
	switch t.Kind() {
	case reflect.String:
		return "text"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map:
		return "a map"
	case reflect.Float32, reflect.Float64:
		// text/template gives a decimal number to no function that takes
		// a whole one: the words must tell them apart
		return "a decimal number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Interface:
		return "an interface value"
	case reflect.Func:
		return "a function"
	case reflect.Struct:
		if t.Name() != "" {
			return article(t.Name()) + " (a struct)"
		}
		return "a struct"
	case reflect.Pointer:
		return kindWords(t.Elem())
	}
	return article(t.Kind().String())
}

// article puts "a" or "an" before a word, by how it is written: good
// enough for the type names messages use (an int, a uint, an AgentView).
func article(word string) string {
	if word == "" {
		return "a value"
	}
	switch strings.ToLower(word[:1]) {
	case "a", "e", "i", "o":
		return "an " + word
	case "u":
		if strings.HasPrefix(word, "uint") || strings.HasPrefix(word, "unsafe") {
			return "a " + word
		}
		return "an " + word
	}
	return "a " + word
}

func singular(what string) string {
	switch what {
	case "inputs":
		return "input"
	case "vars":
		return "var"
	case "nodes":
		return "node"
	case "loop", "loops":
		return "loop or foreach variable"
	}
	return "key"
}

func typeLabel(cur tmplType, t reflect.Type) string {
	if cur.what != "" {
		return "." + cur.what + " (" + t.Name() + ")"
	}
	switch {
	case t.Name() == "PromptData" && path.Base(t.PkgPath()) != "spec":
		return "the prompt data of " + path.Base(t.PkgPath()) + " nodes"
	case t.Name() == "PromptData":
		return "the prompt data"
	case t == reflect.TypeOf(value.PromptBase{}):
		return "the prompt data"
	case t == reflect.TypeOf(value.SummaryData{}):
		return "the data of the summary template"
	}
	return t.Name()
}

func exportedFields(t reflect.Type) []string {
	var out []string
	for _, f := range reflect.VisibleFields(t) {
		if f.IsExported() && !f.Anonymous {
			out = append(out, f.Name)
		}
	}
	sort.Strings(out)
	return out
}

// templateErrorLine extracts NAME, LINE and COL from "template: NAME:LINE: msg"
// or "template: NAME:LINE:COL: msg" errors (col is 0 when absent).
func templateErrorLine(msg string) (name string, line, col int, rest string) {
	msg = strings.TrimPrefix(msg, "template: ")
	parts := strings.SplitN(msg, ":", 4)
	if len(parts) < 3 {
		return "", 0, 0, msg
	}
	if _, err := fmt.Sscanf(parts[1], "%d", &line); err != nil {
		return "", 0, 0, msg
	}
	rest = strings.TrimSpace(strings.Join(parts[2:], ":"))
	if len(parts) == 4 {
		if _, err := fmt.Sscanf(parts[2], "%d", &col); err == nil {
			rest = strings.TrimSpace(parts[3])
		}
	}
	// text/template repeats the action in errors: "executing ... at <.X>: ..."
	return parts[0], line, col, rest
}
