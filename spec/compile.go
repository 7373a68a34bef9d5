package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/template"

	"github.com/debate-runner/runner/templates"
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"
)

// Load reads, validates and compiles a spec file. Diagnostics hold every
// problem found; the plan is nil when any of them is an error.
func Load(path string, reg *Registry) (*Plan, Diagnostics) {
	data, err := readSpecFile(path)
	if err != nil {
		return nil, Diagnostics{{File: path, Severity: Error, Message: err.Error()}}
	}
	return Compile(path, data, reg)
}

// Compile validates and compiles spec text. path names the file in
// diagnostics and anchors relative template folders.
func Compile(path string, data []byte, reg *Registry) (*Plan, Diagnostics) {
	if err := checkText(data); err != nil {
		return nil, Diagnostics{{File: path, Severity: Error, Message: err.Error()}}
	}
	r := &reporter{src: newSource(path, data)}
	plan := compileInto(r, path, data, reg)
	diags := r.diags.sortAndDedupe()
	if diags.HasErrors() {
		return nil, diags
	}
	return plan, diags
}

func compileInto(r *reporter, path string, data []byte, reg *Registry) *Plan {
	root := parseYAML(r, data)
	if root == nil {
		return nil
	}
	loc := yamlToJSON(r, root)
	if loc == nil {
		return nil
	}
	schemaErrs := len(r.diags)
	failed := validateSchema(r, reg, loc)
	schemaFailed := len(r.diags) > schemaErrs
	r.claimReported()
	flowBroken := false
	for _, p := range failed {
		flowBroken = flowBroken || p == "" || strings.HasPrefix(p, "/flow")
	}

	f := &File{Path: path, Root: root}
	if err := root.Decode(f); err != nil && !schemaFailed {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			for _, e := range te.Errors {
				pos, msg := yamlErrorPos(errors.New(e))
				r.errorf(pos, "%s", msg)
			}
		} else {
			r.errorf(Pos{1, 1}, "%v", err)
		}
	}
	if f.Version.Set && f.Version.V != 1 {
		return nil // the schema reported it; nothing else can be trusted
	}
	sum := sha256.Sum256(data)
	c := &compiler{
		r:    r,
		reg:  reg,
		file: f,
		dir:  filepath.Dir(path),
		plan: &Plan{
			File: f, Path: path, Source: data, Digest: hex.EncodeToString(sum[:]), Name: f.Name.V,
			Endpoints: map[string]*EndpointPlan{}, Models: map[string]*ModelPlan{},
			AgentByID: map[string]*AgentPlan{}, Verdicts: map[string][]string{},
			TemplateSources: map[string]TemplateSource{}, Schemas: map[string]*jsonschema.Schema{}, SchemaSources: map[string]json.RawMessage{},
			Nodes: map[string]*NodePlan{},
		},
		records:    map[string]bool{},
		reachable:  map[string]bool{},
		flowBroken: flowBroken,
	}
	c.compile()
	return c.plan
}

// compiler turns a decoded File into a Plan, reporting as it goes.
type compiler struct {
	r         *reporter
	reg       *Registry
	file      *File
	dir       string
	plan      *Plan
	sources   map[string]string // template name -> text
	origins   map[string]templateOrigin
	checker   *templateChecker
	checked   map[string]bool
	broken    map[string]bool
	records   map[string]bool
	deferred  []func()
	loopNames []string
	reachable map[string]bool
	// flowBroken is set when the schema found mistakes in flow; which
	// nodes it runs is then unknown.
	flowBroken bool
	// typedVars and typedInputs are zero structs whose fields have the
	// declared types of vars and inputs (see typedEnvSample).
	typedVars, typedInputs any
}

type templateOrigin struct {
	file     string // file to report in, "" = the spec
	lineBase int    // line in that file of the template's first line, minus one
	// inline is set for a define: written as a plain or quoted scalar,
	// whose first line starts at column col of line lineBase+1.
	inline bool
	col    int
	pos    Pos // position of the reference/definition in the spec
}

func (c *compiler) compile() {
	c.inputsAndVars()
	c.endpointsAndModels()
	c.verdictsAndGoals()
	c.templates()
	c.agents()
	c.summarize()
	c.collectLoopNames(c.file.Flow)
	c.nodes()
	c.plan.Flow = c.flow(c.file.Flow, "flow")
	for _, d := range c.deferred {
		d()
	}
	c.unreachable()
	c.outputs()
}

func (c *compiler) inputsAndVars() {
	for _, k := range c.file.Inputs.Keys {
		in := c.file.Inputs.Values[k.V]
		ip := &InputPlan{Name: k.V, Required: in.Required, Description: in.Description, MaxChars: in.MaxChars}
		if in.Default != nil {
			ip.Default, ip.HasDefault = *in.Default, true
			if in.Required {
				c.r.warnf(k.Pos, "input %q is required and also has a default; the default is never used", k.V)
			}
		}
		c.plan.Inputs = append(c.plan.Inputs, ip)
	}
	for _, k := range c.file.Vars.Keys {
		c.plan.Vars = append(c.plan.Vars, &VarPlan{Name: k.V, Default: normalizeNumber(c.file.Vars.Values[k.V].V)})
	}
}

// normalizeNumber makes YAML integers plain ints so expressions compare them
// with literals without surprises.
func normalizeNumber(v any) any {
	switch x := v.(type) {
	case int64:
		return int(x)
	case uint64:
		return int(x)
	}
	return v
}

func (c *compiler) modelRef(s Str, who string) *ModelPlan {
	if !s.Set {
		return c.plan.Models["default"]
	}
	m, ok := c.plan.Models[s.V]
	if !ok {
		names := append(c.file.Models.Names(), "default")
		c.r.errorf(s.Pos, "%s uses unknown model %q%s", who, s.V, didYouMean(s.V, names))
		return nil
	}
	return m
}

func (c *compiler) verdictsAndGoals() {
	for _, k := range c.file.Verdicts.Keys {
		c.plan.Verdicts[k.V] = c.file.Verdicts.Values[k.V].Values()
	}
	seen := map[string]Pos{}
	for i, g := range c.file.Goals {
		if prev, dup := seen[g.ID.V]; dup && g.ID.Set {
			c.r.errorf(g.ID.Pos, "duplicate goal id %q (first defined at line %d)", g.ID.V, prev.Line)
			continue
		}
		seen[g.ID.V] = g.ID.Pos
		c.plan.Goals = append(c.plan.Goals, GoalView{ID: g.ID.V, Description: g.Description, Index: i + 1, Count: len(c.file.Goals), Vars: g.Vars})
	}
}

func (c *compiler) agents() {
	for _, k := range c.file.Agents.Keys {
		a := c.file.Agents.Values[k.V]
		ap := &AgentPlan{ID: k.V, Name: a.Name, Role: a.Role, Tools: a.Tools.Values(), Vars: a.Vars}
		if ap.Name == "" {
			ap.Name = k.V
		}
		if a.Persona != nil {
			ap.Persona = *a.Persona
		}
		ap.Model = c.modelRef(a.Model, fmt.Sprintf("agent %q", k.V))
		if a.System.Set {
			ap.System = c.TemplateRef(a.System)
		}
		c.plan.Agents = append(c.plan.Agents, ap)
		c.plan.AgentByID[k.V] = ap
	}
}

func (c *compiler) summarize() {
	s := c.file.History.Summarize
	if s == nil {
		return
	}
	sp := &SummarizePlan{OverChars: s.OverChars, MaxChars: s.MaxChars, Template: s.Template.V}
	if sp.MaxChars == 0 {
		sp.MaxChars = sp.OverChars / 2
	}
	if s.Model.Set {
		sp.Model = c.modelRef(s.Model, "history.summarize")
	}
	c.TemplateRef(s.Template)
	c.plan.Summarize = sp
}

// --- templates --------------------------------------------------------------

func (c *compiler) templates() {
	c.sources = map[string]string{}
	c.broken = map[string]bool{}
	c.origins = map[string]templateOrigin{}
	set := template.New("").Funcs(TemplateFuncs()).Option("missingkey=error")
	for _, use := range c.file.Templates.Use {
		c.loadLibrary(use)
	}
	for _, k := range c.file.Templates.Define.Keys {
		v := c.file.Templates.Define.Values[k.V]
		c.sources[k.V] = v.V
		o := templateOrigin{lineBase: v.Pos.Line, col: v.Pos.Col, pos: k.Pos}
		if n := mappingValue(mappingValue(mappingValue(c.file.Root, "templates"), "define"), k.V); n != nil && n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
			// Text on the key's line: template line 1 is spec line lineBase.
			o.inline, o.lineBase = true, v.Pos.Line-1
			if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
				o.col++
			}
		}
		c.origins[k.V] = o
		sum := sha256.Sum256([]byte(v.V))
		c.plan.TemplateSources[k.V] = TemplateSource{Origin: "spec", Digest: hex.EncodeToString(sum[:8])}
	}
	names := make([]string, 0, len(c.sources))
	for n := range c.sources {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, err := set.New(name).Parse(c.sources[name]); err != nil {
			c.templateError(name, err)
			c.broken[name] = true
			// keep the set usable: replace the broken template with an empty one
			delete(c.sources, name)
			set = rebuildWithout(set, name)
		}
	}
	c.plan.Templates = set
	domains := map[string][]string{
		"inputs": c.file.Inputs.Names(),
		"vars":   c.file.Vars.Names(),
		"nodes":  c.file.Nodes.Names(),
	}
	c.checker = &templateChecker{set: set, funcs: TemplateFuncs(), domains: domains}
	c.checked = map[string]bool{}
}

func rebuildWithout(set *template.Template, name string) *template.Template {
	out := template.New("").Funcs(TemplateFuncs()).Option("missingkey=error")
	for _, t := range set.Templates() {
		if t.Name() == name || t.Name() == "" || t.Tree == nil {
			continue
		}
		_, _ = out.AddParseTree(t.Name(), t.Tree)
	}
	return out
}

func (c *compiler) loadLibrary(use Str) {
	name := use.V
	if templates.Has(name) {
		c.loadFS(templates.FS(), name, name, "library:"+name, "templates/"+name)
		return
	}
	dir := name
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(c.dir, dir)
	}
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		if hint := didYouMean(name, templates.Libraries()); hint != "" {
			c.r.errorf(use.Pos, "unknown template library %q: not an embedded library nor a folder next to the spec%s", name, hint)
			return
		}
		c.r.errorf(use.Pos, "unknown template library %q: not an embedded library (%s) nor a folder next to the spec",
			name, strings.Join(templates.Libraries(), ", "))
		return
	}
	lib := filepath.Base(filepath.Clean(dir))
	c.loadFS(os.DirFS(dir), ".", lib, dir, dir)
}

func (c *compiler) loadFS(fsys fs.FS, root, lib, origin, display string) {
	entries, err := fs.ReadDir(fsys, root)
	if err != nil {
		c.r.errorf(Pos{1, 1}, "template library %s: %v", display, err)
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		p := e.Name()
		full := p
		if root != "." {
			full = root + "/" + p
		}
		switch {
		case strings.HasSuffix(p, ".tmpl"):
			data, err := fs.ReadFile(fsys, full)
			if err != nil {
				c.r.errorf(Pos{1, 1}, "template %s: %v", full, err)
				continue
			}
			name := lib + "/" + strings.TrimSuffix(p, ".tmpl")
			c.sources[name] = string(data)
			c.origins[name] = templateOrigin{file: filepath.ToSlash(filepath.Join(display, p))}
			sum := sha256.Sum256(data)
			c.plan.TemplateSources[name] = TemplateSource{Origin: origin, Digest: hex.EncodeToString(sum[:8])}
		case p == "verdicts.yaml":
			data, err := fs.ReadFile(fsys, full)
			if err != nil {
				continue
			}
			var presets map[string][]string
			if err := yaml.Unmarshal(data, &presets); err != nil {
				c.r.errorf(Pos{1, 1}, "verdict presets %s/%s: %v", display, p, err)
				continue
			}
			for name, opts := range presets {
				if _, declared := c.plan.Verdicts[name]; !declared && len(opts) > 0 {
					c.plan.Verdicts[name] = opts
				}
			}
		case strings.HasSuffix(p, ".schema.json"):
			data, err := fs.ReadFile(fsys, full)
			if err != nil {
				continue
			}
			name := lib + "/" + strings.TrimSuffix(p, ".schema.json")
			c.plan.SchemaSources[name] = data
			embedded := strings.HasPrefix(origin, "library:")
			if sch, ok := embeddedSchemas.Load(name); ok && embedded {
				c.plan.Schemas[name] = sch.(*jsonschema.Schema)
				continue
			}
			sch, err := CompileJSONSchema(name, data)
			if err != nil {
				c.r.errorf(Pos{1, 1}, "schema %s/%s: %v", display, p, err)
				continue
			}
			if embedded {
				embeddedSchemas.Store(name, sch)
			}
			c.plan.Schemas[name] = sch
		}
	}
}

// embeddedSchemas caches the compiled schemas of the embedded libraries,
// which never change while the program runs; compiling them (meta-schema
// validation included) was most of the cost of loading a spec.
var embeddedSchemas sync.Map // "library/name" -> *jsonschema.Schema

// CompileJSONSchema compiles a JSON Schema document (draft 2020-12 unless it
// says otherwise).
func CompileJSONSchema(name string, data []byte) (*jsonschema.Schema, error) {
	comp := jsonschema.NewCompiler()
	comp.Draft = jsonschema.Draft2020
	url := "mem:///" + name + ".json"
	if err := comp.AddResource(url, bytesReader(data)); err != nil {
		return nil, err
	}
	return comp.Compile(url)
}

// templateError reports a text/template error at the right file and line.
func (c *compiler) templateError(name string, err error) {
	tname, line, col, msg := templateErrorLine(err.Error())
	if tname == "" {
		tname = name
	}
	if msg == "unexpected EOF" {
		msg = "unexpected end of template: an {{if}}, {{range}}, {{with}} or {{define}} lacks its {{end}}"
	}
	c.reportTemplateProblem(tname, line, col, msg, Pos{})
}

func (c *compiler) reportTemplateProblem(name string, line, col int, msg string, ref Pos) {
	if col < 1 {
		col = 1
	}
	o, ok := c.origins[name]
	if !ok {
		c.r.errorf(ref, "template %s: %s", name, msg)
		return
	}
	if o.file != "" {
		d := Diagnostic{File: o.file, Pos: Pos{Line: line, Col: col}, Severity: Error, Message: fmt.Sprintf("template %s: %s", name, msg)}
		if line == 0 {
			d.Pos = Pos{1, 1}
		}
		if ref.Line > 0 {
			d.Message += fmt.Sprintf(" (used at %s:%d:%d)", c.r.src.name, ref.Line, ref.Col)
		}
		c.r.diags = append(c.r.diags, d)
		return
	}
	// define: a block scalar starts on the line after its key.
	if last := strings.Count(strings.TrimRight(c.sources[name], "\n"), "\n") + 1; line > last && c.sources[name] != "" {
		line, col = last, 1
	}
	pos := Pos{Line: o.lineBase + line, Col: c.indentOf(o.lineBase+line) + col}
	if o.inline && line == 1 {
		pos.Col = o.col + col - 1
	}
	if line == 0 || pos.Line > len(c.r.src.lines) {
		pos = o.pos
	}
	c.r.errorf(pos, "template %s: %s", name, msg)
}

// mappingValue returns the value of key in mapping n, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	n = resolveAlias(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return resolveAlias(n.Content[i+1])
		}
	}
	return nil
}

// indentOf is the indentation of a spec line (block scalars are indented).
func (c *compiler) indentOf(line int) int {
	if line < 1 || line > len(c.r.src.lines) {
		return 0
	}
	l := c.r.src.lines[line-1]
	return len(l) - len(strings.TrimLeft(l, " "))
}

// TemplateRef checks that a template exists and uses only fields a prompt
// has. It returns the template name, or "" when the reference is invalid.
func (c *compiler) TemplateRef(s Str) string {
	if !s.Set || s.V == "" {
		return ""
	}
	if c.broken[s.V] {
		return "" // its parse error is already reported
	}
	if c.plan.Templates.Lookup(s.V) == nil {
		var names []string
		for _, t := range c.plan.Templates.Templates() {
			if t.Name() != "" {
				names = append(names, t.Name())
			}
		}
		sort.Strings(names)
		hint := didYouMean(s.V, names)
		if hint == "" && len(c.file.Templates.Use) == 0 && strings.Contains(s.V, "/") {
			hint = fmt.Sprintf(" (add `templates: {use: [%s]}`?)", strings.SplitN(s.V, "/", 2)[0])
		}
		c.r.errorf(s.Pos, "unknown template %q%s", s.V, hint)
		return ""
	}
	if !c.checked[s.V] {
		c.checked[s.V] = true
		for _, msg := range c.checker.check(s.V, reflect.TypeOf(PromptData{})) {
			// msg is "NAME:LINE:COL: problem" (from ErrorContext) or plain.
			tname, line, col, rest := templateErrorLine("template: " + msg)
			if tname == "" {
				c.r.errorf(s.Pos, "template %s: %s", s.V, msg)
				continue
			}
			// ErrorContext counts columns from 0.
			c.reportTemplateProblem(tname, line, col+1, rest, s.Pos)
		}
	}
	return s.V
}

// --- expressions ------------------------------------------------------------

func (c *compiler) envSample(extra map[string]any) map[string]any {
	loop := map[string]any{}
	for _, n := range c.loopNames {
		loop[n] = 0
	}
	if extra == nil {
		extra = map[string]any{}
	}
	if _, ok := extra["goal_verdicts"]; !ok {
		extra["goal_verdicts"] = []GoalVerdicts{}
	}
	env := &Env{
		Inputs:   map[string]any{},
		Vars:     map[string]any{},
		Nodes:    map[string]NodeResult{},
		Verdicts: c.plan.Verdicts,
		Loop:     loop,
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

// compileExpr compiles an expression against the environment plus extra
// names, checking node/var/input/verdict references and, where the spec
// fixes them (vars by their default, inputs as text), the types of values.
func (c *compiler) compileExpr(e Expr, extra map[string]any, want ExprResult, what string) *Program {
	if e.IsZero() {
		return nil
	}
	src := strings.TrimSpace(e.Source)
	if src == "" {
		c.r.errorf(e.Pos, "%s: expression is empty", what)
		return nil
	}
	tree, err := parser.Parse(src)
	if err != nil {
		pos, msg := exprErrorPos(e.textPos(), err)
		if msg == "unexpected token EOF" {
			msg = "the expression ends too early"
		}
		c.r.errorf(pos, "%s: syntax error: %s", what, msg)
		return nil
	}
	env := c.envSample(extra)
	prog, err := expr.Compile(src, exprOptions(env, want)...)
	if err != nil {
		c.exprError(e, src, err, env, what)
		return nil
	}
	v := &refChecker{known: map[string][]string{
		"nodes":    c.file.Nodes.Names(),
		"vars":     c.file.Vars.Names(),
		"inputs":   c.file.Inputs.Names(),
		"verdicts": slices.Sorted(maps.Keys(c.plan.Verdicts)),
	}}
	ast.Walk(&tree.Node, v)
	if len(v.errs) > 0 {
		for _, re := range v.errs {
			pos := e.textPos()
			if !strings.Contains(src[:min(re.offset, len(src))], "\n") {
				pos.Col += re.offset
			}
			c.r.errorf(pos, "%s: %s", what, re.msg)
		}
		return nil
	}
	// The environment above types vars and inputs as maps of anything, so
	// `if: vars.title` compiles whatever title holds. Compiling once more
	// with them as structs of the declared types catches a string used as
	// a condition before a run fails on it.
	if v.typed {
		typed := c.typedEnvSample(env)
		if _, err := expr.Compile(src, exprOptions(typed, want)...); err != nil && !strings.Contains(err.Error(), "struct {") {
			c.exprError(e, src, err, typed, what)
			return nil
		}
	}
	return &Program{Source: src, Pos: e.Pos, Program: prog}
}

func exprOptions(env map[string]any, want ExprResult) []expr.Option {
	opts := []expr.Option{expr.Env(env), expr.MaxNodes(2000)}
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
func (c *compiler) exprError(e Expr, src string, err error, env map[string]any, what string) {
	pos, msg := exprErrorPos(e.textPos(), err)
	if got, ok := strings.CutPrefix(msg, "expected bool, but got "); ok {
		msg = fmt.Sprintf("condition must be a boolean, but %q is %s", src, exprTypeWords(got))
	} else if got, ok := strings.CutPrefix(msg, "expected int, but got "); ok {
		msg = fmt.Sprintf("must be a number, but %q is %s", src, exprTypeWords(got))
	} else if name, ok := strings.CutPrefix(msg, "unknown name "); ok {
		names := make([]string, 0, len(env))
		for k := range env {
			names = append(names, k)
		}
		sort.Strings(names)
		msg = fmt.Sprintf("unknown name %q%s", name, didYouMean(name, names))
	}
	c.r.errorf(pos, "%s: %s", what, firstLine(msg))
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
	case t == "spec.Message":
		return "a message"
	}
	return "of type " + t
}

// typedEnvSample replaces the vars and inputs maps of env with structs whose
// fields have the types the spec declares, for type checking only: the
// runtime environment keeps maps.
func (c *compiler) typedEnvSample(env map[string]any) map[string]any {
	if c.typedVars == nil {
		anyType := reflect.TypeOf((*any)(nil)).Elem()
		var vars []reflect.StructField
		for i, v := range c.plan.Vars {
			t := anyType
			if v.Default != nil {
				t = reflect.TypeOf(v.Default)
			}
			vars = append(vars, reflect.StructField{Name: fmt.Sprintf("V%d", i), Type: t, Tag: reflect.StructTag(fmt.Sprintf("expr:%q", v.Name))})
		}
		var inputs []reflect.StructField
		for i, in := range c.plan.Inputs {
			t := reflect.TypeOf("")
			if _, text := in.Default.(string); in.HasDefault && !text {
				t = anyType
			}
			inputs = append(inputs, reflect.StructField{Name: fmt.Sprintf("I%d", i), Type: t, Tag: reflect.StructTag(fmt.Sprintf("expr:%q", in.Name))})
		}
		c.typedVars = reflect.New(reflect.StructOf(vars)).Elem().Interface()
		c.typedInputs = reflect.New(reflect.StructOf(inputs)).Elem().Interface()
	}
	typed := make(map[string]any, len(env))
	for k, v := range env {
		typed[k] = v
	}
	typed["vars"], typed["inputs"] = c.typedVars, c.typedInputs
	return typed
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// --- nodes and flow -----------------------------------------------------------

func (c *compiler) nodes() {
	for _, k := range c.file.Nodes.Keys {
		d := c.file.Nodes.Values[k.V]
		np := &NodePlan{ID: k.V, Kind: d.Kind.V, Description: d.Description, Pos: k.Pos}
		c.plan.Nodes[k.V] = np
		c.plan.NodeOrder = append(c.plan.NodeOrder, k.V)
		seen := map[string]bool{}
		for _, a := range d.Agents {
			ap, ok := c.plan.AgentByID[a.V]
			if !ok {
				c.r.errorf(a.Pos, "node %q: unknown agent %q%s", k.V, a.V, didYouMean(a.V, c.file.Agents.Names()))
				continue
			}
			if seen[a.V] {
				c.r.errorf(a.Pos, "node %q: agent %q is listed twice", k.V, a.V)
				continue
			}
			seen[a.V] = true
			np.Agents = append(np.Agents, ap)
		}
		kind, ok := c.reg.Lookup(d.Kind.V)
		if !ok {
			continue // the schema reported it
		}
		nc := &NodeContext{c: c, Node: np, Decl: d}
		np.Config = kind.Compile(nc)
	}
}

func (c *compiler) collectLoopNames(steps []Step) {
	for _, s := range steps {
		switch {
		case s.Loop != nil:
			c.loopNames = appendUnique(c.loopNames, orDefault(s.Loop.As.V, "round"))
			c.collectLoopNames(s.Loop.Do)
		case s.Foreach != nil:
			c.loopNames = appendUnique(c.loopNames, orDefault(s.Foreach.As.V, foreachDefault(s.Foreach.In)))
			c.collectLoopNames(s.Foreach.Do)
		case s.If != nil:
			c.collectLoopNames(s.If.Then)
			c.collectLoopNames(s.If.Else)
		}
	}
}

func foreachDefault(in Expr) string {
	if strings.TrimSpace(in.Source) == "goals" {
		return "goal"
	}
	return "item"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func (c *compiler) flow(steps []Step, path string) []*FlowStep {
	var out []*FlowStep
	for i, s := range steps {
		p := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case s.Loop != nil:
			l := s.Loop
			fs := &FlowStep{Kind: StepLoop, Pos: s.Pos, As: orDefault(l.As.V, "round"), Path: p + ".loop"}
			if l.Max.IsZero() && l.Until.IsZero() {
				c.r.errorf(s.Pos, "loop has neither max nor until: it could run forever; add max: N")
			} else if l.Max.IsZero() {
				c.r.errorf(s.Pos, "loop has until but no max: a condition that never holds would run forever; add max: N as a hard cap")
			}
			if !l.Max.IsZero() {
				if n, err := strconv.Atoi(strings.TrimSpace(l.Max.Source)); err == nil {
					if n < 1 {
						c.r.errorf(l.Max.Pos, "loop max must be at least 1, found %d", n)
					}
					fs.MaxConst = n
				} else {
					fs.MaxExpr = c.compileExpr(l.Max, nil, IntResult, "loop max")
				}
			}
			fs.Until = c.compileExpr(l.Until, nil, BoolResult, "loop until")
			fs.Do = c.flow(l.Do, p+".loop.do")
			out = append(out, fs)
		case s.Foreach != nil:
			f := s.Foreach
			fs := &FlowStep{Kind: StepForeach, Pos: s.Pos, As: orDefault(f.As.V, foreachDefault(f.In)), Path: p + ".foreach"}
			if strings.TrimSpace(f.In.Source) == "goals" && len(c.plan.Goals) == 0 {
				c.r.errorf(f.In.Pos, "foreach over goals, but the spec declares no goals")
			}
			fs.In = c.compileExpr(f.In, nil, AnyResult, "foreach in")
			fs.Do = c.flow(f.Do, p+".foreach.do")
			out = append(out, fs)
		case s.If != nil:
			fs := &FlowStep{Kind: StepIf, Pos: s.Pos, Path: p + ".if"}
			fs.Cond = c.compileExpr(s.If.Cond, nil, BoolResult, "if")
			fs.Do = c.flow(s.If.Then, p+".then")
			fs.Else = c.flow(s.If.Else, p+".else")
			out = append(out, fs)
		case s.Node.Set:
			np, ok := c.plan.Nodes[s.Node.V]
			if !ok {
				c.r.errorf(s.Node.Pos, "flow runs unknown node %q%s", s.Node.V, didYouMean(s.Node.V, c.file.Nodes.Names()))
				continue
			}
			c.reachable[s.Node.V] = true
			out = append(out, &FlowStep{Kind: StepNode, Pos: s.Pos, Node: np, Path: p})
		}
	}
	return out
}

func (c *compiler) unreachable() {
	if len(c.file.Flow) == 0 || c.flowBroken {
		return // the schema reported the flow's mistakes; a guess would mislead
	}
	for _, k := range c.file.Nodes.Keys {
		if !c.reachable[k.V] {
			c.r.errorf(k.Pos, "node %q is never run: no flow step names it (add it to flow or remove it)", k.V)
		}
	}
}

func (c *compiler) outputs() {
	for _, k := range c.file.Outputs.Keys {
		e := c.file.Outputs.Values[k.V]
		p := c.compileExpr(*e, nil, AnyResult, fmt.Sprintf("output %q", k.V))
		if p != nil {
			c.plan.Outputs = append(c.plan.Outputs, &OutputPlan{Name: k.V, Program: p})
		}
	}
	if !c.file.Score.IsZero() {
		c.plan.Score = c.compileExpr(c.file.Score, map[string]any{"outputs": map[string]any{}, "expected": nil}, AnyResult, "score")
	}
}

// --- the context node kinds compile in -----------------------------------------

// NodeContext is what a node kind sees while it compiles: its declaration,
// the spec around it, and ways to report problems and resolve references.
type NodeContext struct {
	c    *compiler
	Node *NodePlan
	Decl *NodeDecl
}

// Plan is the plan being built (agents, models, verdicts and goals are
// already resolved when kinds compile).
func (n *NodeContext) Plan() *Plan { return n.c.plan }

// Decode decodes the node's YAML into v. Type mismatches are ignored here
// because the schema has already reported them.
func (n *NodeContext) Decode(v any) {
	if err := n.Decl.Raw.Decode(v); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			n.Errorf(n.Decl.Pos, "%v", err)
		}
	}
}

// Field returns the YAML value of a key of the node, or nil.
func (n *NodeContext) Field(key string) *yaml.Node {
	m := n.Decl.Raw
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// FieldPos is the position of a key's value, or the node's position.
func (n *NodeContext) FieldPos(key string) Pos {
	if f := n.Field(key); f != nil {
		return nodePos(f)
	}
	return n.Decl.Pos
}

// Errorf reports an error at pos, prefixed with the node id.
func (n *NodeContext) Errorf(pos Pos, format string, args ...any) {
	n.c.r.errorf(pos, "node %q: %s", n.Node.ID, fmt.Sprintf(format, args...))
}

// Warnf reports a warning at pos.
func (n *NodeContext) Warnf(pos Pos, format string, args ...any) {
	n.c.r.warnf(pos, "node %q: %s", n.Node.ID, fmt.Sprintf(format, args...))
}

// Template checks a template reference; "" when invalid or absent.
func (n *NodeContext) Template(s Str) string { return n.c.TemplateRef(s) }

// HasTemplate reports whether a template of that name exists.
func (n *NodeContext) HasTemplate(name string) bool {
	return n.c.plan.Templates.Lookup(name) != nil
}

// Expr compiles an expression with the flow environment plus extra names
// (their values fix their types).
func (n *NodeContext) Expr(e Expr, extra map[string]any, want ExprResult, what string) *Program {
	return n.c.compileExpr(e, extra, want, fmt.Sprintf("node %q: %s", n.Node.ID, what))
}

// Agent resolves an agent reference.
func (n *NodeContext) Agent(s Str) *AgentPlan {
	a, ok := n.c.plan.AgentByID[s.V]
	if !ok {
		n.Errorf(s.Pos, "unknown agent %q%s", s.V, didYouMean(s.V, n.c.file.Agents.Names()))
		return nil
	}
	return a
}

// Model resolves a model reference; nil when absent or invalid.
func (n *NodeContext) Model(s Str) *ModelPlan {
	if !s.Set {
		return nil
	}
	return n.c.modelRef(s, fmt.Sprintf("node %q", n.Node.ID))
}

// VerdictSet resolves "verdicts.NAME" or "NAME" to its options.
func (n *NodeContext) VerdictSet(s Str) (string, []string) {
	name := strings.TrimPrefix(strings.TrimSpace(s.V), "verdicts.")
	opts, ok := n.c.plan.Verdicts[name]
	if !ok {
		n.Errorf(s.Pos, "unknown verdict set %q%s", name, didYouMean(name, slices.Sorted(maps.Keys(n.c.plan.Verdicts))))
		return "", nil
	}
	return name, opts
}

// HasNode reports whether the spec declares a node of that id.
func (n *NodeContext) HasNode(id string) bool { return n.c.file.Nodes.Has(id) }

// MarkReachable records that this node runs node id itself (a watcher), so
// id need not appear in flow.
func (n *NodeContext) MarkReachable(id string) { n.c.reachable[id] = true }

// DeclareRecord notes that this node records messages under name.
func (n *NodeContext) DeclareRecord(name string) { n.c.records[name] = true }

// RequireRecord checks, once every node has compiled, that some node records
// messages under name.
func (n *NodeContext) RequireRecord(s Str) {
	n.c.deferred = append(n.c.deferred, func() {
		if !n.c.records[s.V] {
			var names []string
			for r := range n.c.records {
				names = append(names, r)
			}
			sort.Strings(names)
			n.Errorf(s.Pos, "no node records %q%s", s.V, didYouMean(s.V, names))
		}
	})
}

// JSONSchema compiles an inline JSON Schema written in YAML at node.
func (n *NodeContext) JSONSchema(node *yaml.Node) *jsonschema.Schema {
	// Duplicate keys and the like were reported when the whole spec was
	// converted; a scratch reporter keeps them from being reported twice.
	loc := yamlToJSON(&reporter{src: n.c.r.src}, node)
	if loc == nil {
		n.Errorf(nodePos(node), "output schema is too large")
		return nil
	}
	data, err := json.Marshal(loc.value)
	if err != nil {
		n.Errorf(nodePos(node), "output schema: %v", err)
		return nil
	}
	sch, err := CompileJSONSchema(n.Node.ID+"-output", data)
	if err != nil {
		n.schemaDocError(node, loc, err)
		return nil
	}
	return sch
}

// schemaDocError reports why a JSON Schema written in the spec does not
// compile, at the key or value each complaint of the meta-schema is about.
func (n *NodeContext) schemaDocError(node *yaml.Node, loc *located, err error) {
	var se *jsonschema.SchemaError
	var ve *jsonschema.ValidationError
	if !errors.As(err, &se) || !errors.As(se.Err, &ve) {
		msg := firstLine(err.Error())
		if i := strings.Index(msg, "compilation failed: "); i >= 0 {
			msg = msg[i+len("compilation failed: "):]
		}
		n.Errorf(nodePos(node), "output schema is not a valid JSON Schema: %s", msg)
		return
	}
	for _, leaf := range leaves(ve, loc) {
		ptr := unescapeURLPointer(leaf.InstanceLocation)
		at := loc.values[ptr]
		if at == nil {
			at = node
		}
		where := "schema"
		if ptr != "" {
			where = "schema." + describePointer(ptr)
		}
		msg := leaf.Message
		switch lastSegment(leaf.KeywordLocation) {
		case "enum":
			msg = enumMessage(leaf.Message, at)
		case "type":
			msg = typeMessage(leaf.Message, at)
		}
		n.Errorf(nodePos(at), "output %s: %s", where, msg)
	}
}

// SchemaRef resolves a named schema from a template library.
func (n *NodeContext) SchemaRef(s Str) *jsonschema.Schema {
	sch, ok := n.c.plan.Schemas[s.V]
	if !ok {
		var names []string
		for k := range n.c.plan.Schemas {
			names = append(names, k)
		}
		sort.Strings(names)
		n.Errorf(s.Pos, "unknown schema %q%s", s.V, didYouMean(s.V, names))
		return nil
	}
	return sch
}
