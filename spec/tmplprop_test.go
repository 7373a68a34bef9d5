package spec

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"text/template/parse"

	"github.com/debate-runner/runner/runtime/tmplguard"
	"github.com/debate-runner/runner/spec/value"
)

// The property: a template the checker accepts does not fail, when it is
// rendered against values of the declared types, for a reason of types;
// and a template it refuses does fail for some value (else it is a false
// refusal). Templates are generated from text/template's grammar (actions,
// pipelines, variables, range, if, with, every builtin and every helper of
// TemplateFuncs with arguments of any kind) over a randomly declared scope
// (vars of every kind a default can have, list items and mapping values
// included), and rendered as a run renders them: with the real helpers,
// missingkey=error and the run's guard.

// propScope is a declared scope: vars by name with their defaults.
type propScope struct {
	vars  map[string]any
	names []string
}

func genDefault(r *rand.Rand, depth int) any {
	switch k := r.IntN(9); {
	case k == 0:
		return r.IntN(7) - 2
	case k == 1:
		return []float64{2.5, -1.5, 0.5}[r.IntN(3)]
	case k == 2:
		return []string{"x", "", "a,b"}[r.IntN(3)]
	case k == 3:
		return r.IntN(2) == 0
	case k <= 6 && depth < 2:
		// A list whose items share a kind (the declared kind of its items).
		item := genDefault(r, depth+1)
		n := 1 + r.IntN(3)
		out := make([]any, n)
		for i := range out {
			out[i] = sampleLike(r, item, depth+1)
		}
		return out
	case depth < 2:
		m := map[string]any{}
		for _, k := range []string{"a", "b"}[:1+r.IntN(2)] {
			m[k] = genDefault(r, depth+1)
		}
		return m
	}
	return r.IntN(3)
}

// sampleLike is a random value of the declared type of def: what --set,
// a dataset or a recorded run may give the var (runtime/args keeps the
// type of the default, a list's items the type of its items).
func sampleLike(r *rand.Rand, def any, depth int) any {
	switch x := def.(type) {
	case int:
		return r.IntN(9) - 3
	case float64:
		return []float64{0, 1.5, -2.25, 3}[r.IntN(4)]
	case string:
		return []string{"", "x", "hello, world", "1"}[r.IntN(4)]
	case bool:
		return r.IntN(2) == 0
	case []any:
		if len(x) == 0 {
			return []any{}
		}
		n := r.IntN(5)
		out := make([]any, n)
		for i := range out {
			out[i] = sampleLike(r, x[0], depth+1)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, v := range x {
			out[k] = sampleLike(r, v, depth+1)
		}
		return out
	}
	return def
}

func genScope(r *rand.Rand) propScope {
	s := propScope{vars: map[string]any{}}
	for i := 0; i < 1+r.IntN(4); i++ {
		name := fmt.Sprintf("v%d", i)
		s.vars[name] = genDefault(r, 0)
		s.names = append(s.names, name)
	}
	return s
}

// tmplGen writes a random template over a scope.
type tmplGen struct {
	r      *rand.Rand
	scope  propScope
	vars   []string // $variables in scope
	nvar   int
	marks  int
	inDot  bool // inside range/with: dot is not the prompt data
	budget int
}

var propFuncs = []struct {
	name  string
	arity int // -1: any
}{
	{"call", 1}, {"index", 2}, {"index", 3}, {"slice", 1}, {"slice", 2}, {"slice", 3}, {"slice", 4}, {"len", 1},
	{"eq", 2}, {"eq", 3}, {"ne", 2}, {"lt", 2}, {"le", 2}, {"gt", 2}, {"ge", 2},
	{"and", 2}, {"or", 2}, {"not", 1}, {"print", 2}, {"printf", -1}, {"println", 1},
	{"html", 1}, {"js", 1}, {"urlquery", 1},
	{"upper", 1}, {"lower", 1}, {"trim", 1}, {"join", 2}, {"split", 2}, {"contains", 2},
	{"hasPrefix", 2}, {"replace", 3}, {"indent", 2}, {"truncate", 2}, {"toJSON", 1},
	{"default", 2}, {"add", 2}, {"sub", 2}, {"byRecord", 2}, {"byFrom", 2}, {"byAuthors", 2},
	{"byTo", 2}, {"inRound", 2}, {"notFrom", 2}, {"latest", 1}, {"last", 1}, {"count", 1},
	{"agentName", 2},
}

var propFormats = []string{`"%d"`, `"%s"`, `"%v"`, `"%5.2f"`, `"%t"`, `"%q"`, `"%x"`, `"%d-%s"`, `"%e %v"`, `"%c"`}

func (g *tmplGen) field() string {
	var fs []string
	if g.inDot {
		fs = append(fs, ".", ".", "$.Round", "$.Agent.Name")
	} else {
		fs = append(fs, ".Round", ".Agent.Name", ".Agents", ".History", ".Inbox", ".Target.Content",
			".Own.Round", ".Agent.Persona", ".Turn", ".Agent.Neighbours", ".Own.Fields", ".Target",
			".Target.ChoiceMap", ".Inputs.q", ".Own.Withdrawn", ".Nodes")
		for _, n := range g.scope.names {
			fs = append(fs, ".Vars."+n, ".Vars."+n)
			if m, ok := g.scope.vars[n].(map[string]any); ok {
				for k := range m {
					fs = append(fs, ".Vars."+n+"."+k)
				}
				fs = append(fs, ".Vars."+n+".zz")
			}
		}
	}
	fs = append(fs, g.vars...)
	return fs[g.r.IntN(len(fs))]
}

func (g *tmplGen) constant() string {
	switch g.r.IntN(6) {
	case 0:
		return fmt.Sprint(g.r.IntN(6) - 2)
	case 1:
		return []string{"2.5", "1.0", "-1.5", "1e2"}[g.r.IntN(4)]
	case 2:
		return []string{`"x"`, `""`, `","`, `"a"`, `"v0"`}[g.r.IntN(5)]
	case 3:
		return []string{"true", "false"}[g.r.IntN(2)]
	case 4:
		if g.r.IntN(4) == 0 {
			return "nil"
		}
		return "0"
	}
	return fmt.Sprint(g.r.IntN(4))
}

func (g *tmplGen) operand(depth int) string {
	switch k := g.r.IntN(10); {
	case k < 4:
		return g.field()
	case k < 6:
		return g.constant()
	case depth < 2:
		return "(" + g.pipeline(depth+1) + ")"
	}
	return g.field()
}

func (g *tmplGen) call(depth int) string {
	f := propFuncs[g.r.IntN(len(propFuncs))]
	n := f.arity
	if f.name == "printf" {
		args := []string{"printf", propFormats[g.r.IntN(len(propFormats))]}
		for i := 0; i < g.r.IntN(3); i++ {
			args = append(args, g.operand(depth))
		}
		return strings.Join(args, " ")
	}
	if g.r.IntN(12) == 0 {
		n += g.r.IntN(3) - 1 // a wrong number of arguments, now and then
	}
	args := []string{f.name}
	for i := 0; i < n; i++ {
		args = append(args, g.operand(depth))
	}
	return strings.Join(args, " ")
}

func (g *tmplGen) pipeline(depth int) string {
	if g.budget--; g.budget < 0 || g.r.IntN(3) == 0 {
		return g.operand(depth + 2)
	}
	p := g.call(depth)
	if g.r.IntN(5) == 0 {
		// Piped: the value becomes the last argument of the next call.
		f := propFuncs[g.r.IntN(len(propFuncs))]
		args := []string{f.name}
		for i := 0; i < f.arity-1; i++ {
			args = append(args, g.operand(depth+1))
		}
		p += " | " + strings.Join(args, " ")
	}
	return p
}

func (g *tmplGen) mark(b *strings.Builder) {
	fmt.Fprintf(b, "⟨%d⟩", g.marks)
	g.marks++
}

func (g *tmplGen) statements(b *strings.Builder, n, depth int) {
	for i := 0; i < n; i++ {
		switch k := g.r.IntN(10); {
		case k < 5 || depth > 1:
			fmt.Fprintf(b, "{{%s}}", g.pipeline(0))
		case k == 5 && len(g.vars) > 0 && g.r.IntN(3) == 0:
			// Assignment to a variable declared before.
			fmt.Fprintf(b, "{{%s = %s}}", g.vars[g.r.IntN(len(g.vars))], g.pipeline(0))
		case k == 5:
			name := fmt.Sprintf("$x%d", g.nvar)
			g.nvar++
			fmt.Fprintf(b, "{{%s := %s}}", name, g.pipeline(0))
			g.vars = append(g.vars, name)
		case k < 8:
			saved, savedDot := len(g.vars), g.inDot
			e := fmt.Sprintf("$e%d", g.nvar)
			g.nvar++
			if g.r.IntN(2) == 0 {
				fmt.Fprintf(b, "{{range %s := %s}}", e, g.pipeline(1))
				g.vars = append(g.vars, e)
			} else {
				fmt.Fprintf(b, "{{range %s}}", g.pipeline(1))
			}
			g.inDot = true
			g.statements(b, 1+g.r.IntN(2), depth+1)
			g.vars, g.inDot = g.vars[:saved], savedDot
			b.WriteString("{{end}}")
		case k == 8:
			fmt.Fprintf(b, "{{if %s}}", g.pipeline(1))
			g.statements(b, 1, depth+1)
			b.WriteString("{{else}}")
			g.statements(b, 1, depth+1)
			b.WriteString("{{end}}")
		default:
			savedDot := g.inDot
			fmt.Fprintf(b, "{{with %s}}", g.pipeline(1))
			g.inDot = true
			g.statements(b, 1, depth+1)
			g.inDot = savedDot
			b.WriteString("{{end}}")
		}
		g.mark(b)
	}
}

func genTemplate(r *rand.Rand, scope propScope) (src string, marks int) {
	g := &tmplGen{r: r, scope: scope, budget: 6}
	var b strings.Builder
	g.statements(&b, 1+r.IntN(2), 0)
	return b.String(), g.marks
}

func samplePromptData(r *rand.Rand, scope propScope, full bool) *PromptData {
	d := &PromptData{}
	names := []string{"ann", "bob", "cy"}
	for i := 0; i < 1+r.IntN(3); i++ {
		d.Agents = append(d.Agents, value.AgentView{ID: names[i], Name: strings.ToUpper(names[i])})
	}
	d.Agent = d.Agents[0]
	if r.IntN(3) > 0 {
		d.Agent.Neighbours = []string{"bob"}
	}
	d.Round = r.IntN(4)
	d.Turn = r.IntN(3)
	// Messages' authors, addressees and records are drawn from the agents'
	// ids and from the text constants the generator writes, and their
	// rounds from its number constants, so that byFrom, byTo, byRecord,
	// notFrom and inRound keep messages for some samples and none for
	// others. The full sample has every id as author, addressee and
	// record, and every round from -2 on: each filter keeps a message.
	ids := []string{"ann", "bob", "cy", "v0", "x", "a", "", ",", "answer"}
	n := r.IntN(5)
	if full {
		n = len(ids)
	}
	for i := 0; i < n; i++ {
		m := &value.Message{From: ids[r.IntN(len(ids))], To: ids[r.IntN(len(ids))], Content: "c", Round: r.IntN(6) - 2,
			Record: ids[r.IntN(len(ids))], Fields: map[string]string{"x": "1"}}
		if full {
			m.From, m.To, m.Record, m.Round = ids[i], ids[(i+1)%len(ids)], ids[(i+2)%len(ids)], i-2
		}
		d.History = append(d.History, m)
	}
	d.Inbox = d.History
	d.Target = value.Message{From: "bob", Content: []string{"t", ""}[r.IntN(2)]}
	d.Own = value.Message{From: "ann", Content: "o", Round: r.IntN(3), Fields: map[string]string{}, Withdrawn: r.IntN(3) == 0}
	if r.IntN(2) == 0 {
		d.Own.Fields["x"] = "1"
	}
	if r.IntN(4) == 0 {
		d.Agent.Name = ""
	}
	d.Inputs = map[string]any{"q": "what?"}
	if full || r.IntN(2) == 0 {
		d.Nodes = map[string]value.NodeResult{"x": {Text: "t", Calls: 1}}
		d.Target.ChoiceMap = map[string]string{"A": "yes"}
	}
	d.Vars = map[string]any{}
	for _, name := range scope.names {
		v := sampleLike(r, scope.vars[name], 0)
		if full {
			// Lists long enough for every range to run its body.
			if def, ok := scope.vars[name].([]any); ok && len(def) > 0 {
				v = []any{sampleLike(r, def[0], 1), sampleLike(r, def[0], 1), sampleLike(r, def[0], 1)}
			}
		}
		d.Vars[name] = v
	}
	return d
}

// dataDependent says whether a rendering error comes from a value rather
// than a type: a length, a bound or a count computed at run time, a nil
// printed. The run's guard stops these (and the path checker decides what
// it can); the type checker is not asked to.
func dataDependent(msg string) bool {
	for _, s := range []string{"out of range", "invalid slice index", "negative Repeat count", "has no value here",
		"index of untyped nil", "slice of untyped nil", "len of nil", "error calling index: index of nil"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

type propOutcome struct {
	parsed, accepted, refused int
	acceptedFailed            []string
	falseRefusals             []string
	altRefusals               []string
	byDesign                  []string
}

// propCheck generates one scope and template from seed, checks it and
// renders it against sampled values.
func propCheck(seed uint64, out *propOutcome) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	scope := genScope(r)
	src, marks := genTemplate(r, scope)
	set := template.New("").Funcs(value.TemplateFuncs()).Option("missingkey=error")
	if _, err := set.New("main").Parse(src); err != nil {
		return // not a template: the parser's business
	}
	out.parsed++
	c := &templateChecker{set: set, funcs: value.TemplateFuncs(),
		domains: map[string][]string{"inputs": {"q"}, "vars": scope.names, "nodes": {}},
		keyType: func(domain, key string) (tmplType, bool) {
			switch domain {
			case "vars":
				if v, ok := scope.vars[key]; ok {
					return declaredType(v), true
				}
			case "inputs":
				return tmplType{t: reflect.TypeOf("")}, true
			}
			return tmplType{}, false
		}}
	errs, _ := c.check("main", reflect.TypeOf(PromptData{}))
	guarded := tmplguard.Guard(set)
	var failures []string
	seen := map[int]bool{}
	for i := 0; i < 12; i++ {
		d := samplePromptData(r, scope, i == 0)
		var b strings.Builder
		err := guarded.ExecuteTemplate(&b, "main", d)
		for k := 0; k < marks; k++ {
			if strings.Contains(b.String(), fmt.Sprintf("⟨%d⟩", k)) {
				seen[k] = true
			}
		}
		if err != nil {
			failures = append(failures, err.Error())
		}
	}
	desc := fmt.Sprintf("seed %d: %s\n  vars %v", seed, src, scope.vars)
	if len(errs) == 0 {
		out.accepted++
		for _, f := range failures {
			if !dataDependent(f) {
				out.acceptedFailed = append(out.acceptedFailed, desc+"\n  fails: "+f)
				break
			}
		}
		return
	}
	out.refused++
	if len(failures) == 0 && len(seen) == marks && !allSkippable(set.Lookup("main").Tree, errs) {
		m := desc + "\n  refused: " + strings.Join(errs, "; ")
		var rest []string
		for _, e := range errs {
			if !allSkippable(set.Lookup("main").Tree, []string{e}) {
				rest = append(rest, e)
			}
		}
		if allAlternatives(rest) {
			out.altRefusals = append(out.altRefusals, m)
			return
		}
		if allMissingKeys(errs) {
			out.byDesign = append(out.byDesign, m)
			return
		}
		out.falseRefusals = append(out.falseRefusals, m)
	}
}

// allMissingKeys: index of a key the spec does not declare is refused by
// design, though a missing key only shows when it is printed.
func allMissingKeys(errs []string) bool {
	for _, e := range errs {
		if !strings.Contains(e, "a missing key renders as <no value>") {
			return false
		}
	}
	return true
}

// allAlternatives says whether every problem is about one of several
// values and, or or default may give: which one it gives depends on the
// data (an empty list, a zero), so a refusal may stand for data the samples
// did not hold. These are counted and listed, not failed.
func allAlternatives(errs []string) bool {
	for _, e := range errs {
		if !strings.Contains(e, "one of their arguments") {
			return false
		}
	}
	return true
}

// allSkippable says whether every problem reported lies in an argument
// that text/template may never evaluate: an operand of and or or after the
// first, a third or later operand of eq (they stop at the first that
// decides). The checker refuses what is written there; rendering proves
// nothing about it.
func allSkippable(tree *parse.Tree, errs []string) bool {
	type span struct{ from, to int }
	var spans []span
	var visit func(n parse.Node)
	visit = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n != nil {
				for _, x := range n.Nodes {
					visit(x)
				}
			}
		case *parse.ActionNode:
			visit(n.Pipe)
		case *parse.IfNode:
			visit(n.Pipe)
			visit(n.List)
			visit(n.ElseList)
		case *parse.RangeNode:
			visit(n.Pipe)
			visit(n.List)
			visit(n.ElseList)
		case *parse.WithNode:
			visit(n.Pipe)
			visit(n.List)
			visit(n.ElseList)
		case *parse.PipeNode:
			if n == nil {
				return
			}
			for i, cmd := range n.Cmds {
				if id, ok := cmd.Args[0].(*parse.IdentifierNode); ok {
					from := -1
					switch {
					case (id.Ident == "and" || id.Ident == "or") && len(cmd.Args) > 2:
						from = int(cmd.Args[2].Position())
					case id.Ident == "eq" && len(cmd.Args) > 3:
						from = int(cmd.Args[3].Position())
					}
					if (id.Ident == "and" || id.Ident == "or" || id.Ident == "eq") && i > 0 && from < 0 {
						// The piped value is the last operand.
						from = int(n.Cmds[i-1].Position())
					}
					if from >= 0 {
						spans = append(spans, span{from, int(cmd.Position()) + len(cmd.String()) + 2})
					}
				}
				for _, a := range cmd.Args {
					visit(a)
				}
			}
		case *parse.ChainNode:
			visit(n.Node)
		}
	}
	visit(tree.Root)
	for _, e := range errs {
		_, line, col, _ := templateErrorLine("template: " + e)
		if line != 1 {
			return false
		}
		in := false
		for _, s := range spans {
			if col >= s.from && col <= s.to {
				in = true
			}
		}
		if !in {
			return false
		}
	}
	return true
}

// FuzzTemplateCheck: for any seed, the generated template is accepted only
// if it renders without a type failure, and refused only if some sampled
// value makes it fail. Failures found are kept in
// testdata/fuzz/FuzzTemplateCheck.
func FuzzTemplateCheck(f *testing.F) {
	for _, s := range []uint64{1, 2, 3, 42, 1000} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		var out propOutcome
		propCheck(seed, &out)
		for _, m := range out.acceptedFailed {
			t.Errorf("accepted, then failed for a type reason: %s", m)
		}
		for _, m := range out.falseRefusals {
			t.Errorf("refused, but renders for every sampled value: %s", m)
		}
	})
}

// TestTemplateCheckProperty runs the property over many seeds and reports
// the counts.
func TestTemplateCheckProperty(t *testing.T) {
	n := 3000
	if s := os.Getenv("TMPLPROP_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	if testing.Short() {
		n = 500
	}
	var out propOutcome
	for i := 0; i < n; i++ {
		propCheck(uint64(i)*7919+17, &out)
	}
	t.Logf("templates %d, parsed %d, accepted %d, refused %d, accepted then failed %d, false refusals %d, refusals of an and/or/default alternative the samples never took %d, refusals by design (an undeclared key never printed) %d",
		n, out.parsed, out.accepted, out.refused, len(out.acceptedFailed), len(out.falseRefusals), len(out.altRefusals), len(out.byDesign))
	for i, m := range out.altRefusals {
		if i < 5 {
			t.Logf("alternative never taken in the samples: %s", m)
		}
	}
	sort.Strings(out.acceptedFailed)
	for i, m := range out.acceptedFailed {
		if i < 15 {
			t.Errorf("accepted, then failed for a type reason: %s", m)
		}
	}
	for i, m := range out.falseRefusals {
		if i < 15 {
			t.Errorf("refused, but renders for every sampled value: %s", m)
		}
	}
}

// TestBuiltinArityIsTextTemplates: the checker's counts of text/template's
// own functions' arguments are the ones text/template enforces when it
// renders: for every builtin and every number of arguments from 0 to 6,
// the checker refuses the call exactly when rendering it fails on its
// number of arguments. (The differential fuzzer relies on this to count a
// refused call with a wrong number of arguments that its runs never made
// as a latent defect rather than a false refusal.)
func TestBuiltinArityIsTextTemplates(t *testing.T) {
	for name, a := range builtinArity {
		for n := 0; n <= 6; n++ {
			src := "{{" + strings.TrimSpace(name+strings.Repeat(" 1", n)) + "}}"
			tm, err := template.New("t").Parse(src)
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			err = tm.Execute(&strings.Builder{}, nil)
			failsOnCount := err != nil && (strings.Contains(err.Error(), "wrong number of args") || strings.Contains(err.Error(), "too many slice indexes") || strings.Contains(err.Error(), "missing argument for comparison"))
			refused := n < a[0] || (a[1] >= 0 && n > a[1])
			if refused != failsOnCount {
				t.Errorf("%s: the checker refuses it: %v; rendering fails on its number of arguments: %v (%v)", src, refused, failsOnCount, err)
			}
		}
	}
}
