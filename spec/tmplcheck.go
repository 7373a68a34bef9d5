package spec

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"text/template"
	"text/template/parse"
)

// tmplType is the static type of a value inside a template. keys, when set,
// is the set of keys a map may be indexed with (inputs, vars, nodes), so that
// .Inputs.probelm is caught before a run.
type tmplType struct {
	t    reflect.Type
	keys []string
	what string
}

func (tt tmplType) unknown() bool { return tt.t == nil }

// templateChecker walks parsed templates and reports fields that cannot
// exist on the data they are given.
type templateChecker struct {
	set     *template.Template
	funcs   template.FuncMap
	domains map[string][]string // tmplkeys tag -> allowed keys
	errs    []string
	seen    map[string]bool
	stack   []string
}

// checkTemplate checks the named template with dot of type root. It returns
// messages for fields that do not exist and templates that are not defined.
func (c *templateChecker) check(name string, root reflect.Type) []string {
	c.errs = nil
	c.seen = map[string]bool{}
	c.walkTemplate(name, tmplType{t: root})
	return c.errs
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
			c.errorf(tree, n, "template %q is not defined%s", n.Name, didYouMean(n.Name, names))
			return
		}
		if !arg.unknown() {
			c.walkTemplate(n.Name, arg)
		}
	}
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

func rangeTypes(pt tmplType) (elem, key tmplType) {
	t := deref(pt.t)
	if t == nil {
		return tmplType{}, tmplType{}
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return tmplType{t: t.Elem()}, tmplType{t: reflect.TypeOf(0)}
	case reflect.Map:
		return tmplType{t: t.Elem()}, tmplType{t: t.Key()}
	case reflect.Int:
		return tmplType{t: t}, tmplType{}
	}
	return tmplType{}, tmplType{}
}

// pipe types a pipeline and declares its variables.
func (c *templateChecker) pipe(tree *parse.Tree, p *parse.PipeNode, dot tmplType, vars *[]map[string]tmplType) tmplType {
	t := c.pipeNoDecl(tree, p, dot, vars)
	if p != nil {
		for _, d := range p.Decl {
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
	for _, cmd := range p.Cmds {
		last = c.command(tree, cmd, dot, vars)
	}
	return last
}

func (c *templateChecker) command(tree *parse.Tree, cmd *parse.CommandNode, dot tmplType, vars *[]map[string]tmplType) tmplType {
	var result tmplType
	for i, arg := range cmd.Args {
		t := c.arg(tree, arg, dot, vars)
		if i == 0 {
			result = t
		}
	}
	if len(cmd.Args) > 0 {
		if id, ok := cmd.Args[0].(*parse.IdentifierNode); ok {
			return c.funcResult(id.Ident)
		}
	}
	return result
}

func (c *templateChecker) funcResult(name string) tmplType {
	fn, ok := c.funcs[name]
	if !ok {
		switch name {
		case "len", "index", "slice", "print", "printf", "println", "html", "js", "urlquery", "and", "or", "not", "eq", "ne", "lt", "le", "gt", "ge", "call":
			if name == "len" {
				return tmplType{t: reflect.TypeOf(0)}
			}
			if name == "print" || name == "printf" || name == "println" {
				return tmplType{t: reflect.TypeOf("")}
			}
		}
		return tmplType{}
	}
	ft := reflect.TypeOf(fn)
	if ft.NumOut() == 0 || ft.Out(0).Kind() == reflect.Interface {
		return tmplType{}
	}
	return tmplType{t: ft.Out(0)}
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
		return t
	case *parse.StringNode:
		return tmplType{t: reflect.TypeOf("")}
	case *parse.NumberNode:
		if a.IsInt {
			return tmplType{t: reflect.TypeOf(0)}
		}
		return tmplType{}
	case *parse.BoolNode:
		return tmplType{t: reflect.TypeOf(true)}
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
				if dom := f.Tag.Get("tmplkeys"); dom != "" {
					next.keys = c.domains[dom]
					next.what = dom
					if next.keys == nil {
						next.keys = []string{}
					}
				}
				cur = next
				continue
			}
			if m, ok := reflect.PointerTo(t).MethodByName(name); ok {
				if m.Type.NumOut() == 0 || m.Type.Out(0).Kind() == reflect.Interface {
					return tmplType{}
				}
				cur = tmplType{t: m.Type.Out(0)}
				continue
			}
			c.errorf(tree, n, "%s has no field %q%s", typeLabel(cur, t), name, didYouMean(name, exportedFields(t)))
			return tmplType{}
		case reflect.Map:
			if cur.keys != nil {
				found := false
				for _, k := range cur.keys {
					if k == name {
						found = true
						break
					}
				}
				if !found {
					c.errorf(tree, n, "no %s named %q%s", singular(cur.what), name, didYouMean(name, cur.keys))
					return tmplType{}
				}
			}
			if t.Elem().Kind() == reflect.Interface {
				return tmplType{}
			}
			cur = tmplType{t: t.Elem()}
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
		return "a number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a number"
	}
	return "a " + t.Kind().String()
}

func singular(what string) string {
	switch what {
	case "inputs":
		return "input"
	case "vars":
		return "var"
	case "nodes":
		return "node"
	}
	return "key"
}

func typeLabel(cur tmplType, t reflect.Type) string {
	if cur.what != "" {
		return "." + cur.what + " (" + t.Name() + ")"
	}
	if t == reflect.TypeOf(PromptData{}) {
		return "the prompt data"
	}
	return t.Name()
}

func exportedFields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).IsExported() {
			out = append(out, t.Field(i).Name)
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
