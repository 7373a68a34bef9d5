package difffuzz

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/nodes/compute"
	"github.com/debate-runner/runner/nodes/converse"
	"github.com/debate-runner/runner/spec"
)

// kindExprNames are the names node kinds add to their expressions'
// environment (from the kinds' own samples of it).
func kindExprNames() []string {
	var out []string
	for k := range converse.RuleSample() {
		out = append(out, k)
	}
	// a compute entry's reads of the entries before it
	out = append(out, compute.EntriesName)
	sort.Strings(out)
	return out
}

// scope is what a seed spec declares, for generated terms to name: its
// inputs, vars, nodes (with their output types and prompt data types),
// records, agents, loop names, goals and outputs.
type scope struct {
	inputs  []string
	vars    map[string]any
	varList []string
	nodes   []nodeInfo
	records []string
	agents  []string
	loops   []string
	goals   []string
	outputs []string
	verdict []string
	// templates are the names of the spec's templates.
	templates []string
}

type nodeInfo struct {
	id, kind string
	output   *spec.Type
	dot      reflect.Type
}

func scopeOf(p *spec.Plan, records []string) *scope {
	s := &scope{vars: map[string]any{}, records: records}
	for _, in := range p.Inputs {
		s.inputs = append(s.inputs, in.Name)
	}
	for _, v := range p.Vars {
		s.vars[v.Name] = v.Default
		s.varList = append(s.varList, v.Name)
	}
	for _, id := range p.NodeOrder {
		n := p.Nodes[id]
		ni := nodeInfo{id: id, kind: n.Kind, output: n.Output}
		if n.Impl != nil {
			if d := n.Impl.PromptData(); d != nil {
				ni.dot = reflect.TypeOf(d)
			}
		}
		s.nodes = append(s.nodes, ni)
	}
	for _, a := range p.Agents {
		s.agents = append(s.agents, a.ID)
	}
	for _, g := range p.Goals {
		s.goals = append(s.goals, g.ID)
	}
	for _, o := range p.Outputs {
		s.outputs = append(s.outputs, o.Name)
	}
	for name := range p.Verdicts {
		s.verdict = append(s.verdict, name)
	}
	sort.Strings(s.verdict)
	if p.Templates != nil {
		for _, t := range p.Templates.Templates() {
			if name := t.Name(); name != "" && !strings.HasPrefix(name, "_") {
				s.templates = append(s.templates, name)
			}
		}
		sort.Strings(s.templates)
	}
	var walk func([]*spec.FlowStep)
	walk = func(steps []*spec.FlowStep) {
		for _, st := range steps {
			if st.As != "" {
				s.loops = append(s.loops, st.As)
			}
			walk(st.Do)
			walk(st.Else)
		}
	}
	walk(p.Flow)
	s.loops = append(s.loops, "round", "item")
	return s
}

func pick[T any](r *rand.Rand, xs []T) T {
	var zero T
	if len(xs) == 0 {
		return zero
	}
	return xs[r.Intn(len(xs))]
}

// names picks a declared name or, now and then, one nobody declared.
func (s *scope) name(r *rand.Rand, declared []string) string {
	if len(declared) == 0 || r.Intn(8) == 0 {
		return pick(r, []string{"unknown", "x", "Name", "0"})
	}
	return pick(r, declared)
}

// ---- templates ----

// tmplGen makes template actions for a dot type.
type tmplGen struct {
	r     *rand.Rand
	s     *scope
	dot   reflect.Type
	funcs []tmplFunc
	paths []tmplPath
	// vars are the template variables in scope.
	vars []string
}

type tmplPath struct {
	text string
	typ  reflect.Type // nil: unknown
}

// pathsOf lists field paths from t (depth-bounded), with map keys named
// from the scope by the map's tmplkeys tag or its key set.
func (g *tmplGen) pathsOf(t reflect.Type, prefix string, depth int, keys string, out *[]tmplPath) {
	if depth > 4 || len(*out) > 600 {
		return
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			if f.Anonymous {
				g.pathsOf(f.Type, prefix, depth, "", out)
				continue
			}
			p := prefix + "." + f.Name
			*out = append(*out, tmplPath{p, f.Type})
			g.pathsOf(f.Type, p, depth+1, f.Tag.Get("tmplkeys"), out)
		}
		for i := 0; i < reflect.PointerTo(t).NumMethod(); i++ {
			m := reflect.PointerTo(t).Method(i)
			if m.Type.NumIn() == 1 && m.Type.NumOut() >= 1 {
				*out = append(*out, tmplPath{prefix + "." + m.Name, m.Type.Out(0)})
			}
		}
	case reflect.Map:
		var names []string
		switch keys {
		case "inputs":
			names = g.s.inputs
		case "vars":
			names = g.s.varList
		case "loop":
			names = g.s.loops
		case "nodes":
			for _, n := range g.s.nodes {
				names = append(names, n.id)
			}
		default:
			names = append(append([]string{}, g.s.varList...), "unknown")
		}
		for _, k := range names {
			p := prefix + "." + k
			var vt reflect.Type = t.Elem()
			if keys == "vars" {
				if v := g.s.vars[k]; v != nil {
					vt = reflect.TypeOf(v)
				}
			}
			*out = append(*out, tmplPath{p, vt})
			if keys == "nodes" {
				g.pathsOf(t.Elem(), p, depth+1, "", out)
				for _, n := range g.s.nodes {
					if n.id == k && n.output != nil {
						outputPaths(n.output, p+".Output", depth+1, out)
					}
				}
			}
		}
	}
}

// outputPaths lists the fields of a node's output type.
func outputPaths(t *spec.Type, prefix string, depth int, out *[]tmplPath) {
	if t == nil || depth > 5 {
		return
	}
	for _, f := range t.Fields {
		p := prefix + "." + f.Name
		*out = append(*out, tmplPath{p, f.Type.Reflect()})
		outputPaths(f.Type, p, depth+1, out)
	}
}

func newTmplGen(r *rand.Rand, s *scope, dot reflect.Type, funcs []tmplFunc) *tmplGen {
	g := &tmplGen{r: r, s: s, dot: dot, funcs: funcs}
	g.pathsOf(dot, "", 0, "", &g.paths)
	return g
}

// literal is a template literal of any kind.
func (g *tmplGen) literal() string {
	return pick(g.r, []string{"0", "1", "2", "-1", "99", "3", "2.5", "-0.5", "1e3", `"x"`, `""`, `"1"`, `"%d"`,
		"nil", "true", "false", "'a'", "0x10"})
}

// literalOf is a literal of type t, or any literal.
func (g *tmplGen) literalOf(t reflect.Type) string {
	if t == nil {
		return g.literal()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return pick(g.r, []string{"0", "1", "-1", "2", "99", "1000000"})
	case reflect.Float64:
		return pick(g.r, []string{"0.5", "2.5", "-1.5"})
	case reflect.String:
		return pick(g.r, []string{`"x"`, `""`, `"\n"`, strconv.Quote(pick(g.r, g.s.records)), strconv.Quote(pick(g.r, g.s.agents))})
	case reflect.Bool:
		return pick(g.r, []string{"true", "false"})
	}
	return g.literal()
}

// path is a field path of the dot (from $ when dollar), or a bad one now
// and then.
func (g *tmplGen) path(dollar bool) tmplPath {
	p := pick(g.r, g.paths)
	if p.text == "" || g.r.Intn(12) == 0 {
		p = tmplPath{text: pick(g.r, []string{".Nmae", ".Agent.Nmae", ".Vars.unknown", ".Inputs.unknown", ".Nodes.unknown.Output", ".Item.x", ".Loop.unknown"}), typ: nil}
	}
	if dollar {
		p.text = "$" + p.text
	}
	return p
}

// pathOf is a path whose type fits t, when there is one.
func (g *tmplGen) pathOf(t reflect.Type, dollar bool) (tmplPath, bool) {
	var fit []tmplPath
	for _, p := range g.paths {
		if p.typ != nil && t != nil && p.typ.AssignableTo(t) {
			fit = append(fit, p)
		}
	}
	if len(fit) == 0 {
		return tmplPath{}, false
	}
	p := pick(g.r, fit)
	if dollar {
		p.text = "$" + p.text
	}
	return p, true
}

// arg is an argument of type t (nil: any) at depth.
func (g *tmplGen) arg(t reflect.Type, depth int, dollar bool) string {
	switch n := g.r.Intn(10); {
	case n < 3:
		return g.literalOf(t)
	case n < 7:
		if p, ok := g.pathOf(t, dollar); ok && g.r.Intn(3) > 0 {
			return p.text
		}
		return g.path(dollar).text
	case n < 8 && len(g.vars) > 0:
		return pick(g.r, g.vars)
	default:
		if depth > 0 {
			return "(" + g.call(depth-1, dollar) + ")"
		}
		return g.literal()
	}
}

// call is a function call with arguments.
func (g *tmplGen) call(depth int, dollar bool) string {
	f := pick(g.r, g.funcs)
	n := f.min
	if f.variadic || g.r.Intn(8) == 0 {
		n += g.r.Intn(3)
		if g.r.Intn(10) == 0 && n > 0 {
			n-- // one argument short
		}
	}
	parts := []string{f.name}
	for i := 0; i < n; i++ {
		var t reflect.Type
		if i < len(f.params) && g.r.Intn(4) > 0 {
			t = f.params[i]
		}
		if f.name == "printf" && i == 0 {
			parts = append(parts, pick(g.r, []string{`"%d"`, `"%s"`, `"%v"`, `"%.2f"`, `"%s %d"`, `"%x"`}))
			continue
		}
		parts = append(parts, g.arg(t, depth, dollar))
	}
	return strings.Join(parts, " ")
}

// pipeline is a command, optionally piped into more.
func (g *tmplGen) pipeline(depth int, dollar bool) string {
	var p string
	if g.r.Intn(3) == 0 {
		p = g.arg(nil, depth, dollar)
	} else {
		p = g.call(depth, dollar)
	}
	for g.r.Intn(4) == 0 {
		f := pick(g.r, g.funcs)
		p += " | " + f.name
		for i := 0; i+1 < f.min; i++ {
			p += " " + g.arg(nil, 0, dollar)
		}
	}
	return p
}

// Action is a template action (or a few), any of text/template's forms.
func (g *tmplGen) Action(depth int) string {
	in := g.r.Intn(2) == 0 // inside a block, paths go from $
	switch g.r.Intn(9) {
	case 0, 1:
		return "{{" + g.pipeline(depth, false) + "}}"
	case 2:
		return "{{if " + g.pipeline(depth, false) + "}}A{{else if " + g.pipeline(depth, false) + "}}B{{else}}C{{end}}"
	case 3:
		g.vars = append(g.vars, "$e", "$i")
		defer func() { g.vars = g.vars[:len(g.vars)-2] }()
		return "{{range $i, $e := " + g.pipeline(depth, false) + "}}{{" + g.pipeline(depth, true) + "}}{{end}}"
	case 4:
		return "{{range " + g.pipeline(depth, false) + "}}{{.}}{{else}}none{{end}}"
	case 5:
		return "{{with " + g.pipeline(depth, false) + "}}{{" + pick(g.r, []string{".", "len .", "index . 0", "printf \"%v\" ."}) + "}}{{end}}"
	case 6:
		g.vars = append(g.vars, "$v")
		defer func() { g.vars = g.vars[:len(g.vars)-1] }()
		return "{{$v := " + g.pipeline(depth, in) + "}}{{" + g.pipeline(depth, false) + "}}"
	case 7:
		return "{{" + pick(g.r, []string{"len", "index", "slice"}) + " " + g.path(false).text + " " + g.literalOf(reflect.TypeOf(0)) + "}}"
	}
	return "{{- " + g.pipeline(depth, false) + " -}}"
}

// ---- expressions ----

// exprGen makes expressions over a node's or the outputs' environment.
type exprGen struct {
	r     *rand.Rand
	s     *scope
	funcs []exprFunc
	// inClosure: # and .field are in scope.
	inClosure bool
}

func (g *exprGen) literal() string {
	return pick(g.r, []string{"0", "1", "2", "-1", "3", "100", "2.5", "-0.5", "0.0", "1e308", `"x"`, `""`, `"1"`, `"a,b"`,
		"nil", "true", "false", "[]", "[1, 2]", `["a", "b"]`, `{"a": 1}`, "{}", "[[1, 2], [3, 4]]"})
}

// outputPath is a path into a node's output type.
func (g *exprGen) outputPath(t *spec.Type) string {
	var b strings.Builder
	for d := 0; t != nil && d < 4 && g.r.Intn(3) > 0; d++ {
		switch t.Kind {
		case spec.ObjectType:
			if len(t.Fields) == 0 {
				return b.String()
			}
			f := pick(g.r, t.Fields)
			op := "."
			if g.r.Intn(3) == 0 {
				op = "?."
			}
			b.WriteString(op + f.Name)
			t = f.Type
		case spec.ListType:
			fmt.Fprintf(&b, "[%s]", pick(g.r, []string{"0", "1", "-1", "5"}))
			t = t.Elem
		default:
			return b.String()
		}
	}
	return b.String()
}

// path is a name of the environment, with a path into it.
func (g *exprGen) path() string {
	s := g.s
	switch g.r.Intn(13) {
	case 0:
		return "inputs." + s.name(g.r, s.inputs)
	case 1, 2:
		return "vars." + s.name(g.r, s.varList)
	case 3, 4, 5:
		n := pick(g.r, s.nodes)
		id := n.id
		if id == "" || g.r.Intn(10) == 0 {
			id = "unknown"
		}
		op := "."
		if g.r.Intn(3) == 0 {
			op = "?."
		}
		field := pick(g.r, []string{"output", "output", "output", "text", "calls", "messages", "outputs", "absent"})
		p := "nodes." + id + op + field
		if field == "output" {
			p += g.outputPath(n.output)
		}
		if field == "messages" || field == "absent" {
			p += pick(g.r, []string{"", "[0]", "[0].content", "[-1].output"})
		}
		return p
	case 6:
		return "latest(" + strconv.Quote(s.name(g.r, s.records)) + ")" + pick(g.r, []string{"", "[0]", "[0].content", "[0].output", "[1].from"})
	case 7:
		return pick(g.r, []string{"round", "goal.id", "goal.index", "goals", "len(goals)", "goals[0].id", "messages", "messages[0].content", "messages[-1].from"})
	case 8:
		l := s.name(g.r, s.loops)
		switch g.r.Intn(3) {
		case 0:
			return "loop." + l
		case 1:
			return "loops." + l // the loop's counter, 0 outside it
		}
		return l
	case 9:
		if len(s.verdict) > 0 {
			return "verdicts." + pick(g.r, s.verdict)
		}
		return "verdicts"
	case 10:
		name := pick(g.r, exprScopeNames())
		if g.r.Intn(2) == 0 {
			// the names a kind adds where its expressions run (a
			// conversation's participants, turn, speakers...)
			name = pick(g.r, kindExprNames())
		}
		return name + pick(g.r, []string{"", "[0]", "[5]", "[-1]", "[0].id", "[2].id", ".id"})
	case 11:
		if g.inClosure {
			return pick(g.r, []string{"#", "#.content", "#.output", "#.from", "#index", ".content"})
		}
	}
	return g.literal()
}

// Expr is an expression of depth at most depth.
func (g *exprGen) Expr(depth int) string {
	if depth <= 0 {
		if g.r.Intn(2) == 0 {
			return g.literal()
		}
		return g.path()
	}
	switch g.r.Intn(10) {
	case 0, 1:
		return g.path()
	case 2:
		return g.literal()
	case 3, 4:
		return "(" + g.Expr(depth-1) + " " + pick(g.r, exprOperators) + " " + g.Expr(depth-1) + ")"
	case 5:
		return pick(g.r, exprUnary) + g.Expr(depth-1)
	case 6:
		return g.Expr(depth-1) + " ? " + g.Expr(depth-1) + " : " + g.Expr(depth-1)
	case 7:
		return g.Expr(depth-1) + pick(g.r, []string{"[0]", "[1:3]", "[:2]", "[-1]", `["a"]`, ".x", "?.x"})
	}
	f := pick(g.r, g.funcs)
	if f.predicate {
		list := g.Expr(depth - 1)
		saved := g.inClosure
		g.inClosure = true
		body := g.Expr(depth - 1)
		g.inClosure = saved
		return f.name + "(" + list + ", " + body + ")"
	}
	n := 1 + g.r.Intn(3)
	if len(f.arities) > 0 {
		n = pick(g.r, f.arities)
	}
	args := make([]string, n)
	for i := range args {
		args[i] = g.Expr(depth - 1)
	}
	return f.name + "(" + strings.Join(args, ", ") + ")"
}

// Count is a count expression (max_turns: vars.turns * 2): mostly over
// vars and inputs in arithmetic, min, max and conditionals, as counts are
// written, now and then any expression, which validate must refuse or the
// run must take.
func (g *exprGen) Count(depth int) string {
	if g.r.Intn(8) == 0 {
		return g.Expr(depth)
	}
	if depth <= 0 || g.r.Intn(3) == 0 {
		switch g.r.Intn(5) {
		case 0, 1:
			return "vars." + g.s.name(g.r, g.s.varList)
		case 2:
			return pick(g.r, []string{"inputs.", "int(inputs."}) + g.s.name(g.r, g.s.inputs) + pick(g.r, []string{"", ")"})
		}
		return pick(g.r, []string{"0", "1", "2", "3", "-1", "10", "2.5"})
	}
	x, y := g.Count(depth-1), g.Count(depth-1)
	switch g.r.Intn(6) {
	case 0:
		return "min(" + x + ", " + y + ")"
	case 1:
		return "max(" + x + ", " + y + ")"
	case 2:
		return "(" + x + " " + pick(g.r, []string{"+", "-", "*", "/", "%"}) + " " + y + ")"
	case 3:
		return "(vars." + g.s.name(g.r, g.s.varList) + " > " + x + " ? " + x + " : " + y + ")"
	case 4:
		return "int(" + x + ")"
	}
	return "abs(" + x + ")"
}
