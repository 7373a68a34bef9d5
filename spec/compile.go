package spec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"unicode/utf8"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/templates"
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"
)

// Load reads, validates and compiles a spec file. Diagnostics hold every
// problem found; the plan is nil when any of them is an error.
func Load(path string, reg *Registry) (*Plan, syntax.Diagnostics) {
	data, err := syntax.ReadSpecFile(path)
	if err != nil {
		return nil, syntax.Diagnostics{{File: path, Severity: syntax.Error, Message: err.Error()}}
	}
	return Compile(path, data, reg)
}

// Compile validates and compiles spec text. path names the file in
// diagnostics and anchors relative template folders.
func Compile(path string, data []byte, reg *Registry) (*Plan, syntax.Diagnostics) {
	return compile(path, data, reg, CompileOptions{})
}

// Folders gives the template library folders a spec uses by their path (the
// spec's folder joined with the name the spec gives, as Plan.TemplateSources
// records it), instead of the file system; false means there is none.
type Folders func(dir string) (fs.FS, bool)

// CompileIn is Compile with template library folders read from folders (nil:
// the file system), for a spec compiled away from the files next to it: a
// Temporal worker compiles the spec and folders a client sent it.
func CompileIn(folders Folders, path string, data []byte, reg *Registry) (*Plan, syntax.Diagnostics) {
	return compile(path, data, reg, CompileOptions{Folders: folders})
}

func compile(path string, data []byte, reg *Registry, opts CompileOptions) (*Plan, syntax.Diagnostics) {
	if err := syntax.CheckText(data); err != nil {
		return nil, syntax.Diagnostics{{File: path, Severity: syntax.Error, Message: err.Error()}}
	}
	r := &syntax.Reporter{Src: syntax.NewSource(path, data)}
	if off, c := syntax.DisallowedChar(data); off >= 0 {
		// yaml.v3 refuses it without saying where.
		r.Errorf(syntax.OffsetPos(data, off), "character %U is not allowed in YAML text (a control character); remove it, or write it as an escape inside double quotes (\\u%04X)", c, c)
		return nil, r.Diags
	}
	plan := compileInto(r, path, data, reg, opts)
	diags := r.Diags.SortAndDedupe()
	if d, ok := r.DroppedSummary(); ok {
		diags = append(diags, d)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return plan, diags
}

func compileInto(r *syntax.Reporter, path string, data []byte, reg *Registry, opts CompileOptions) *Plan {
	root := syntax.ParseYAML(r, data)
	if root == nil {
		return nil
	}
	reportOverflows, ok := syntax.CheckTree(r, root)
	if !ok {
		return nil
	}
	r.ClaimReported()
	loc := syntax.YAMLToJSON(r, root)
	if loc == nil {
		return nil
	}
	failed := syntax.ValidateSchema(r, reg.schema, loc)
	r.ClaimReported()
	reportOverflows()
	r.ClaimReported()
	flowBroken := false
	for _, p := range failed {
		flowBroken = flowBroken || p == "" || strings.HasPrefix(p, "/flow")
	}

	f := &syntax.File{Path: path, Root: root}
	r.DecodeError(root, root.Decode(f))
	if f.Version.Set && f.Version.V != 1 {
		return nil // the schema reported it; nothing else can be trusted
	}
	sum := sha256.Sum256(data)
	c := &compiler{
		r:       r,
		reg:     reg,
		file:    f,
		dir:     filepath.Dir(path),
		folders: opts.Folders,
		plan: &Plan{
			File: f, Path: path, Source: data, Digest: hex.EncodeToString(sum[:]), Name: f.Name.V,
			Endpoints: map[string]*EndpointPlan{}, Models: map[string]*ModelPlan{},
			AgentByID: map[string]*AgentPlan{}, Verdicts: map[string][]string{},
			TemplateSources: map[string]TemplateSource{}, Schemas: map[string]*jsonschema.Schema{},
			SchemaDocs: map[string]json.RawMessage{}, Nodes: map[string]*NodePlan{}, Registry: reg,
			libraries: opts.Libraries,
		},
		records:       map[string]bool{},
		reachable:     map[string]bool{},
		runsAt:        map[string]syntax.Pos{},
		nodeTemplates: map[string][]templateUse{},
		systemChecked: map[string]bool{},
		flowBroken:    flowBroken,
		overrides:     opts.Overrides,
		saved:         opts.Libraries,
	}
	c.compile()
	if c.plan.Templates != nil {
		boundRanges(c.plan.Templates)
	}
	c.plan.templateAt = c.templatePosition
	return c.plan
}

// compiler turns a decoded File into a Plan, reporting as it goes.
type compiler struct {
	// folders, when set, stands in for the file system (see CompileIn).
	folders Folders
	r       *syntax.Reporter
	reg     *Registry
	file    *syntax.File
	dir     string
	plan    *Plan
	sources map[string]string // template name -> text
	origins map[string]templateOrigin
	checker *templateChecker
	// checked holds, per template and dot type, the nodes the template
	// reads through .Nodes.ID (nil once checked and reading none).
	checked   map[string][]tmplNodeRead
	broken    map[string]bool
	records   map[string]bool
	deferred  []func()
	loopNames []string
	reachable map[string]bool
	// flowBroken is set when the schema found mistakes in flow; which
	// nodes it runs is then unknown.
	flowBroken bool
	// typedVars, typedInputs and typedNodes are zero structs whose fields
	// have the declared types of vars, inputs and node results (see
	// typedEnvSample).
	typedVars, typedInputs, typedNodes any
	// pending are the expressions to compile once every node has compiled;
	// site is where expressions registered now are evaluated.
	pending []*pendingExpr
	site    *site
	// runsAt holds where node A declared it runs node B ("A\x00B").
	runsAt map[string]syntax.Pos
	// nodeTemplates are the templates each node renders, with the
	// positions that name them.
	nodeTemplates map[string][]templateUse
	// outputBuilders build output types from expression types.
	outputBuilders []outputBuilder
	// systemChecked marks agent system templates checked against a dot
	// type ("agent\x00type").
	systemChecked map[string]bool
	// loopMaxes are the loops whose bound is an expression.
	loopMaxes []*FlowStep
	// libraries are the template libraries loaded, by name: where each
	// comes from.
	libraries map[string]string
	// overrides are the run's values that change what compiles.
	overrides Overrides
	// saved stand in for libraries by the name the spec uses (a run's
	// copies, see CompileOptions).
	saved map[string]fs.FS
	// fallbackLacks are the properties each node's fallback output leaves
	// out (see NodeContext.FallbackLacks).
	fallbackLacks map[string]fallbackLack
}

// templateUse is a template a node renders, checked against a dot type.
type templateUse struct {
	name string
	pos  syntax.Pos
	// reads are the nodes the template reads through .Nodes.ID.
	reads []tmplNodeRead
}

type templateOrigin struct {
	file     string // file to report in, "" = the spec
	lineBase int    // line in that file of the template's first line, minus one
	// inline is set for a define: written as a plain or quoted scalar,
	// whose first line starts at column col of line lineBase+1.
	inline bool
	col    int
	pos    syntax.Pos // position of the reference/definition in the spec
}

func (c *compiler) compile() {
	c.inputsAndVars()
	c.endpointsAndModels()
	c.overrideModels()
	c.verdictsAndGoals()
	c.templates()
	c.agents()
	c.mcpServers()
	c.summarize()
	c.collectLoopNames(c.file.Flow)
	c.loopDomain()
	c.nodes()
	c.plan.Flow = c.flow(c.file.Flow, "flow")
	c.site = &site{end: true}
	c.outputs()
	c.site = nil
	for _, d := range c.deferred {
		d()
	}
	c.unreachable()
	c.runCycles()
	c.budget()
	c.agentSystems()
	c.recruitModels()
	c.usedModels()
	// Expressions are typed by the outputs nodes declare, so they are
	// compiled last.
	c.finishExprs()
	c.checkLoopMaxes()
	c.checkEvaluationBound()
	if !c.r.Diags.HasErrors() {
		// What runs when is only known for a flow without errors.
		c.checkRunOrder()
	}
}

func (c *compiler) inputsAndVars() {
	for _, k := range c.file.Inputs.Keys {
		in := c.file.Inputs.Values[k.V]
		ip := &InputPlan{Name: k.V, Required: in.Required, Description: in.Description, MaxChars: in.MaxChars, Image: in.Kind.V == "image", MaxBytes: in.MaxBytes}
		if in.MaxBytes > 0 && !ip.Image {
			c.r.Errorf(k.Pos, "input %q: max_bytes bounds an image; add kind: image, or remove max_bytes", k.V)
		}
		if ip.Image && (in.Default != nil || in.MaxChars > 0 || in.Domain.HasDomain()) {
			c.r.Errorf(in.Kind.Pos, "input %q: an image input takes no default, max_chars, enum, minimum, maximum or pattern (its value is a file or a URL)", k.V)
		}
		if in.Default != nil {
			ip.Default, ip.HasDefault = *in.Default, true
			if in.Required {
				c.r.Warnf(k.Pos, "input %q is required and also has a default; the default is never used", k.V)
			}
		}
		def := ip.Default
		if !ip.HasDefault {
			def = "" // inputs are text unless a default says otherwise
		}
		what := fmt.Sprintf("input %q", k.V)
		ip.Domain = c.compileDomain(in.Domain, normalizeNumber(def), what, k.Pos)
		if ip.Domain != nil {
			switch err := ip.Domain.Check(normalizeNumber(def)); {
			case err == nil:
			case ip.HasDefault:
				c.r.Errorf(in.DefaultPos, "%s: the default is refused by its own domain: %v", what, err)
			case !in.Required:
				c.r.Errorf(k.Pos, "%s: a run without it has \"\", which its domain refuses (%v): give it a default in its domain, or make it required", what, err)
			}
		}
		c.plan.Inputs = append(c.plan.Inputs, ip)
	}
	for _, k := range c.file.Vars.Keys {
		v := c.file.Vars.Values[k.V]
		vp := &VarPlan{Name: k.V, Default: normalizeNumber(v.V), Description: v.Description}
		what := fmt.Sprintf("var %q", k.V)
		if m, isMap := v.V.(map[string]any); isMap && !v.Declared {
			if _, hasDefault := m["default"]; hasDefault {
				c.r.Warnf(v.Pos, "%s is a mapping with a key default, read as the var's value: a declaration with a domain takes only default, description, enum, minimum, maximum and pattern (write {default: {...}} for a mapping value)", what)
			}
		}
		vp.Domain = c.compileDomain(v.Domain, vp.Default, what, k.Pos)
		if err := vp.Domain.Check(vp.Default); err != nil {
			c.r.Errorf(v.Pos, "%s: the default is refused by its own domain: %v", what, err)
		}
		c.plan.Vars = append(c.plan.Vars, vp)
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

func (c *compiler) modelRef(s syntax.Str, who string) *ModelPlan {
	if !s.Set {
		return c.plan.Models["default"]
	}
	m, ok := c.plan.Models[s.V]
	if !ok {
		if c.file.Models.Invalid {
			return nil
		}
		names := append(c.file.Models.Names(), "default")
		c.r.Errorf(s.Pos, "%s uses unknown model %q%s", who, s.V, syntax.DidYouMean(s.V, names))
		return nil
	}
	return m
}

func (c *compiler) verdictsAndGoals() {
	for _, k := range c.file.Verdicts.Keys {
		c.plan.Verdicts[k.V] = c.file.Verdicts.Values[k.V].Values()
	}
	seen := map[string]syntax.Pos{}
	for i, g := range c.file.Goals {
		if prev, dup := seen[g.ID.V]; dup && g.ID.Set {
			c.r.Errorf(g.ID.Pos, "duplicate goal id %q (first defined at line %d)", g.ID.V, prev.Line)
			continue
		}
		seen[g.ID.V] = g.ID.Pos
		c.plan.Goals = append(c.plan.Goals, value.GoalView{ID: g.ID.V, Description: g.Description, Index: i + 1, Count: len(c.file.Goals), Vars: g.Vars})
	}
}

func (c *compiler) agents() {
	for _, k := range c.file.Agents.Keys {
		a := c.file.Agents.Values[k.V]
		ap := &AgentPlan{ID: k.V, Name: a.Name, Role: a.Role, Tools: a.Tools.Values(), Vars: a.Vars, Human: a.Human.V}
		if a.Human.V && len(a.Tools) > 0 {
			c.r.Errorf(a.Tools[0].Pos, "agent %q is played by a person (human: true), who calls no tools; remove tools: or human:", k.V)
		}
		if ap.Name == "" {
			ap.Name = k.V
		}
		if a.Persona != nil {
			ap.Persona = *a.Persona
		}
		ap.Model = c.modelRef(a.Model, fmt.Sprintf("agent %q", k.V))
		if a.System.Set {
			ap.System = c.templateExists(a.System)
			ap.systemPos = a.System.Pos
		}
		var members []*AgentPlan
		if a.Recruit != nil {
			members = c.recruitDecl(k.V, a, ap)
		} else if a.Replicas.From.Source != "" {
			members = c.panel(k.V, a, ap, a.Replicas.From)
		} else if n := c.replicas(k.V, a.Replicas.Count); n > 0 {
			// A replicated declaration is a group of identical agents, each
			// with its own id (and so its own calls, samples and messages).
			for i := 1; i <= n; i++ {
				r := *ap
				r.ID, r.Name, r.Index, r.Group = replicaID(k.V, i), ap.Name+" "+strconv.Itoa(i), i, k.V
				if a.Name == "" {
					r.Name = r.ID
				}
				members = append(members, &r)
			}
		}
		if len(members) == 0 {
			if a.Topology.Set && a.Replicas.IsZero() && a.Recruit == nil {
				c.r.Errorf(a.Topology.Pos, "agent %q: topology is among the agents of a replicated declaration; add replicas: (a number or {from: LIST})", k.V)
			}
			// (also after a replicas error, so nodes naming it are not
			// reported too)
			c.plan.Agents = append(c.plan.Agents, ap)
			c.plan.AgentByID[k.V] = ap
			continue
		}
		if c.plan.Groups == nil {
			c.plan.Groups = map[string][]*AgentPlan{}
		}
		for _, r := range members {
			if _, dup := c.file.Agents.Values[r.ID]; dup {
				c.r.Errorf(k.Pos, "agent %q: its replica %q has the id of another agent; rename one of them", k.V, r.ID)
			}
			c.plan.Agents = append(c.plan.Agents, r)
			c.plan.AgentByID[r.ID] = r
			c.plan.Groups[k.V] = append(c.plan.Groups[k.V], r)
		}
		if a.Topology.Set {
			c.topology(k.V, a.Topology, members)
		}
	}
}

func (c *compiler) summarize() {
	s := c.file.History.Summarize
	if s == nil || s.Pos.Line == 0 {
		return // absent, or not a mapping (reported as such)
	}
	c.plan.Summarize = c.summarizePlan(s, "history.summarize")
}

// summarizePlan compiles a summarize mapping (history.summarize, or a
// conversation's summarize:): its template is typed against SummaryData,
// its model and condition checked, its threshold in characters or
// tokens. what names it in problems.
func (c *compiler) summarizePlan(s *syntax.Summarize, what string) *SummarizePlan {
	pos := s.Pos
	sp := &SummarizePlan{OverChars: s.OverChars, OverTokens: s.OverTokens, MaxChars: s.MaxChars, Template: s.Template.V, Records: s.Records.Values()}
	switch {
	case s.OverChars > 0 && s.OverTokens > 0:
		c.r.Errorf(pos, "%s has both over_chars and over_tokens: the threshold is one or the other", what)
	case s.OverChars <= 0 && s.OverTokens <= 0:
		c.r.Errorf(pos, "%s needs a threshold: over_chars (characters) or over_tokens (tokens)", what)
	}
	for _, rec := range s.Records {
		c.requireRecord(rec, what+".records")
	}
	if sp.MaxChars == 0 {
		sp.MaxChars = sp.OverChars / 2
		if s.OverTokens > 0 {
			// About four characters a token: half the threshold.
			sp.MaxChars = max(s.OverTokens*2, 1)
		}
		sp.MaxChars = max(sp.MaxChars, 1)
	}
	if s.Model.Set {
		sp.Model = c.modelRef(s.Model, what)
	}
	if !s.When.IsZero() {
		sp.When = c.compileExpr(s.When, nil, BoolResult, what+".when")
	}
	sp.Measure = MeasureBytes
	if s.Measure.Set {
		sp.Measure = s.Measure.V
	}
	if s.OverTokens > 0 {
		if s.Measure.Set {
			c.r.Errorf(s.Measure.Pos, "%s.measure is for over_chars; over_tokens counts tokens", what)
		}
		sp.Measure = MeasureTokens
	}
	if s.Template.Set || s.Template.V != "" {
		c.templateRef(s.Template, reflect.TypeOf(value.SummaryData{}), nil)
	} else {
		c.r.Errorf(pos, "%s needs a template that asks for the summary", what)
	}
	return sp
}

// --- templates --------------------------------------------------------------

func (c *compiler) templates() {
	c.sources = map[string]string{}
	c.broken = map[string]bool{}
	c.origins = map[string]templateOrigin{}
	set := template.New("").Funcs(value.TemplateFuncs()).Option("missingkey=error")
	for _, use := range c.file.Templates.Use {
		c.loadLibrary(use)
	}
	defines := mappingValue(mappingValue(c.file.Root, "templates"), "define")
	for _, k := range c.file.Templates.Define.Keys {
		if !templateNamePattern.MatchString(k.V) {
			continue // the schema reported it; such a name would garble positions
		}
		v := c.file.Templates.Define.Values[k.V]
		c.sources[k.V] = v.V
		o := templateOrigin{lineBase: v.Pos.Line, col: v.Pos.Col, pos: k.Pos}
		if n := mappingValue(defines, k.V); n != nil && n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
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
		"inputs":        c.file.Inputs.Names(),
		"vars":          c.file.Vars.Names(),
		"nodes":         c.file.Nodes.Names(),
		"summary_extra": {"chars", "max_chars"},
	}
	for name, invalid := range map[string]bool{"inputs": c.file.Inputs.Invalid, "vars": c.file.Vars.Invalid, "nodes": c.file.Nodes.Invalid} {
		if invalid {
			delete(domains, name)
		}
	}
	c.checker = &templateChecker{set: set, funcs: value.TemplateFuncs(), domains: domains, keyType: c.templateKeyType}
	c.checked = map[string][]tmplNodeRead{}
}

func rebuildWithout(set *template.Template, name string) *template.Template {
	out := template.New("").Funcs(value.TemplateFuncs()).Option("missingkey=error")
	for _, t := range set.Templates() {
		if t.Name() == name || t.Name() == "" || t.Tree == nil {
			continue
		}
		_, _ = out.AddParseTree(t.Name(), t.Tree)
	}
	return out
}

func (c *compiler) loadLibrary(use syntax.Str) {
	name := use.V
	if fsys, ok := c.saved[name]; ok {
		c.loadSaved(use, fsys)
		return
	}
	if base, v, pinned, ok := templates.Split(name); templates.Has(base) {
		c.loadBuiltIn(use, base, v, pinned, ok)
		return
	}
	dir := name
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(c.dir, dir)
	}
	var fsys fs.FS
	if c.folders != nil {
		fsys, _ = c.folders(dir)
	} else if info, err := os.Stat(dir); err == nil && info.IsDir() {
		fsys = os.DirFS(dir)
	}
	if fsys == nil {
		if hint := syntax.DidYouMean(name, templates.Libraries()); hint != "" {
			c.r.Errorf(use.Pos, "unknown template library %q: not an embedded library nor a folder next to the spec%s", name, hint)
			return
		}
		c.r.Errorf(use.Pos, "unknown template library %q: not an embedded library (%s) nor a folder next to the spec",
			name, strings.Join(templates.Libraries(), ", "))
		return
	}
	lib := filepath.Base(filepath.Clean(dir))
	if !libraryFileName.MatchString(lib) || lib == "." || lib == ".." {
		// The folder's name starts the name of every template in it.
		c.r.Errorf(use.Pos, "template library folder %q: its name %q cannot start a template name (LIBRARY/NAME); rename the folder using letters, digits, '_', '-' and '.'", name, lib)
		return
	}
	if c.claimLibrary(use, lib, dir) {
		c.loadFS(use, fsys, ".", lib, dir, dir)
	}
}

// loadSaved loads a library from a run's saved copy, under the name and
// origin the library had when the run started, so that template names and
// sources read as they did.
func (c *compiler) loadSaved(use syntax.Str, fsys fs.FS) {
	name := use.V
	lib, origin := name, "library:"+name
	if base, _, _, _ := templates.Split(name); templates.Has(base) {
		lib = base
	} else {
		dir := name
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(c.dir, dir)
		}
		lib, origin = filepath.Base(filepath.Clean(dir)), dir
	}
	if c.claimLibrary(use, lib, origin) {
		c.loadFS(use, fsys, ".", lib, origin, name+" (saved copy)")
	}
}

// claimLibrary records that a library of that name comes from origin. Two
// libraries of one name (two folders called prompts, a folder named like
// an embedded library) would silently replace each other's templates.
func (c *compiler) claimLibrary(use syntax.Str, lib, origin string) bool {
	if c.libraries == nil {
		c.libraries = map[string]string{}
	}
	prev, seen := c.libraries[lib]
	switch {
	case !seen:
		c.libraries[lib] = origin
		return true
	case prev == origin:
		return false // listed twice: loaded once
	}
	c.r.Errorf(use.Pos, "template library %q is named %q, like %s loaded before it; their templates would replace each other (rename the folder)", use.V, lib, strings.TrimPrefix(prev, "library:"))
	return false
}

// libraryFileName is what a library's folder and the names of its files
// (without .tmpl or .schema.json) may hold: they make template and schema
// names, which diagnostics, run manifests and templates quote.
var libraryFileName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// maxLibraryFile bounds a template, schema or preset file of a library.
const maxLibraryFile = syntax.MaxSpecBytes

// readLibraryFile reads a regular file of a library, refusing anything else
// (a FIFO or device under a template's name would hang validation).
func readLibraryFile(fsys fs.FS, name string) ([]byte, error) {
	info, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	if info.Size() > maxLibraryFile {
		return nil, fmt.Errorf("file is larger than %d MiB", maxLibraryFile>>20)
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxLibraryFile+1))
	if err == nil && len(data) > maxLibraryFile {
		err = fmt.Errorf("file is larger than %d MiB", maxLibraryFile>>20)
	}
	return data, err
}

// keepLibraryFile records a library file in the plan, for a run to save.
func (c *compiler) keepLibraryFile(use, lib, origin, file string, data []byte) {
	for _, l := range c.plan.Libraries {
		if l.Name == lib {
			l.Files[file] = data
			return
		}
	}
	c.plan.Libraries = append(c.plan.Libraries, &Library{Use: use, Name: lib, Origin: origin, Files: map[string][]byte{file: data}})
}

// loadFS loads the templates, schemas and verdict presets of a library.
// Problems with the folder or a file's name are reported where the spec
// uses the library; problems inside a file, in that file.
func (c *compiler) loadFS(use syntax.Str, fsys fs.FS, root, lib, origin, display string) {
	entries, err := fs.ReadDir(fsys, root)
	if err != nil {
		c.r.Errorf(use.Pos, "template library %s: %v", display, err)
		return
	}
	inFile := func(file string, pos syntax.Pos, format string, args ...any) {
		c.r.Keep(syntax.Diagnostic{File: filepath.ToSlash(filepath.Join(display, file)), Pos: pos, Severity: syntax.Error, Message: fmt.Sprintf(format, args...)})
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
		var stem string
		switch {
		case strings.HasSuffix(p, ".tmpl"):
			stem = strings.TrimSuffix(p, ".tmpl")
		case strings.HasSuffix(p, ".schema.json"):
			stem = strings.TrimSuffix(p, ".schema.json")
		case p == "verdicts.yaml":
		default:
			continue
		}
		if p != "verdicts.yaml" && !libraryFileName.MatchString(stem) {
			c.r.Errorf(use.Pos, "template library %s: file %q cannot name a template or schema; rename it using letters, digits, '_', '-' and '.'", display, p)
			continue
		}
		data, err := readLibraryFile(fsys, full)
		if err != nil {
			c.r.Errorf(use.Pos, "template library %s: %s: %v", display, p, err)
			continue
		}
		c.keepLibraryFile(use.V, lib, origin, p, data)
		switch {
		case strings.HasSuffix(p, ".tmpl"):
			name := lib + "/" + stem
			c.sources[name] = string(data)
			c.origins[name] = templateOrigin{file: filepath.ToSlash(filepath.Join(display, p))}
			sum := sha256.Sum256(data)
			c.plan.TemplateSources[name] = TemplateSource{Origin: origin, Digest: hex.EncodeToString(sum[:8])}
		case p == "verdicts.yaml":
			c.loadPresets(data, func(pos syntax.Pos, format string, args ...any) { inFile(p, pos, format, args...) })
		default:
			name := lib + "/" + stem
			embedded := strings.HasPrefix(origin, "library:") && c.saved[use.V] == nil
			c.plan.SchemaDocs[name] = data
			// Versions of a library have schemas of one name: the cache
			// keys them by version too.
			cacheKey := origin + "\x00" + name
			if sch, ok := embeddedSchemas.Load(cacheKey); ok && embedded {
				c.plan.Schemas[name] = sch.(*jsonschema.Schema)
				continue
			}
			sch, err := CompileJSONSchema(name, data)
			if err != nil {
				msg := schemaErrorMessage(err)
				pos := syntax.Pos{}
				if ref, ok := refusedRef(msg); ok {
					// Point at the $ref in the file.
					if i := bytes.Index(data, []byte(`"`+ref)); i >= 0 {
						pos = syntax.OffsetPos(data, i)
					}
				}
				inFile(p, pos, "schema %s: %s", name, msg)
				continue
			}
			if embedded {
				embeddedSchemas.Store(cacheKey, sch)
			}
			c.plan.Schemas[name] = sch
		}
	}
}

// loadPresets reads a library's verdicts.yaml: named sets of verdict
// options, under the same rules as the spec's own verdicts.
func (c *compiler) loadPresets(data []byte, report func(pos syntax.Pos, format string, args ...any)) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		pos, msg := syntax.YAMLErrorPos(err)
		report(pos, "YAML syntax: %s", msg)
		return
	}
	if len(doc.Content) == 0 {
		return
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode || root.Style&yaml.TaggedStyle != 0 {
		report(syntax.NodePos(root), "verdict presets must be a mapping of NAME: [OPTION, ...], found %s", syntax.KindName(root))
		return
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode || !idPattern.MatchString(k.Value) {
			report(syntax.NodePos(k), "%q is not a valid verdict set name (use letters, digits, '_' and '-', starting with a letter or '_')", k.Value)
			continue
		}
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			report(syntax.NodePos(v), "verdict set %q must be a list of options, found %s", k.Value, syntax.KindName(v))
			continue
		}
		var opts []string
		seen := map[string]bool{}
		ok := true
		for _, o := range v.Content {
			switch {
			case o.Kind != yaml.ScalarNode || o.Style&yaml.TaggedStyle != 0 || !optionPattern.MatchString(o.Value):
				report(syntax.NodePos(o), "verdict set %q: %s is not a valid option (use letters, digits, '_' and '-')", k.Value, syntax.DescribeValue(o))
				ok = false
				continue
			case seen[o.Value]:
				report(syntax.NodePos(o), "verdict set %q: %q is listed twice", k.Value, o.Value)
				ok = false
				continue
			}
			seen[o.Value] = true
			opts = append(opts, o.Value)
		}
		if _, declared := c.plan.Verdicts[k.Value]; ok && !declared {
			c.plan.Verdicts[k.Value] = opts
		}
	}
}

var (
	// idPattern and optionPattern are the base schema's forms of ids and
	// verdict options.
	idPattern     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
	optionPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	// templateNamePattern is the form of a template name in define.
	templateNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$`)
)

// maxSchemaValues bounds the size of a JSON Schema a spec or library gives.
const maxSchemaValues = 5000

// jsonValues counts the values of a decoded JSON document, up to limit.
func jsonValues(v any, limit int) int {
	n := 0
	var walk func(v any)
	walk = func(v any) {
		if n >= limit {
			return
		}
		n++
		switch x := v.(type) {
		case map[string]any:
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(v)
	return n
}

// schemaErrorMessage is the first line of a schema compilation error,
// without the validator's preamble (which names its internal URL).
func schemaErrorMessage(err error) string {
	msg := firstLine(err.Error())
	if i := strings.Index(msg, "compilation failed: "); i >= 0 {
		msg = msg[i+len("compilation failed: "):]
	}
	return msg
}

// refusedRef returns the $ref a schema error says could not be loaded
// (without its fragment).
func refusedRef(msg string) (string, bool) {
	ref, ok := strings.CutPrefix(msg, "$ref ")
	if !ok {
		return "", false
	}
	ref, _, _ = strings.Cut(ref, ": ")
	return ref, ref != ""
}

// embeddedSchemas caches the compiled schemas of the embedded libraries,
// which never change while the program runs; compiling them (meta-schema
// validation included) was most of the cost of loading a spec.
var embeddedSchemas sync.Map // "library/name" -> *jsonschema.Schema

// CompileJSONSchema compiles a JSON Schema document (draft 2020-12 unless it
// says otherwise).
func CompileJSONSchema(name string, data []byte) (*jsonschema.Schema, error) {
	var doc any
	if err := json.Unmarshal(data, &doc); err == nil {
		// The validator's compiler takes time quadratic in a schema's
		// size (20,000 properties: 8 s); a reply schema is far smaller.
		if n := jsonValues(doc, maxSchemaValues+1); n > maxSchemaValues {
			return nil, fmt.Errorf("schema is too large: more than %d values (properties, keywords and their values); a schema for a model's reply needs far fewer, so split the reply or describe less of it", maxSchemaValues)
		}
	}
	comp := jsonschema.NewCompiler()
	comp.Draft = jsonschema.Draft2020
	// A $ref to a file or URL would make validation read the disk (a
	// FIFO or /dev/zero hangs it) or the network; meta-schemas are built
	// in, and a spec's schemas are self-contained.
	comp.LoadURL = func(s string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("$ref %s: a schema in a spec or template library cannot load other files or URLs; put the schema it refers to under $defs and write \"$ref\": \"#/$defs/NAME\"", strings.TrimPrefix(s, "mem:///"))
	}
	loc := "mem:///" + url.PathEscape(name) + ".json"
	if err := comp.AddResource(loc, bytes.NewReader(data)); err != nil {
		return nil, err
	}
	return comp.Compile(loc)
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
	c.reportTemplateProblem(tname, line, col, msg, syntax.Pos{})
}

func (c *compiler) reportTemplateProblem(name string, line, col int, msg string, ref syntax.Pos) {
	file, pos, ok := c.templatePosition(name, line, col)
	switch {
	case !ok:
		c.r.Errorf(ref, "template %s: %s", name, msg)
	case file != "":
		d := syntax.Diagnostic{File: file, Pos: pos, Severity: syntax.Error, Message: fmt.Sprintf("template %s: %s", name, msg)}
		if ref.Line > 0 {
			d.Message += fmt.Sprintf(" (used at %s:%d:%d)", c.r.Src.Name, ref.Line, ref.Col)
		}
		c.r.Keep(d)
	default:
		c.r.Errorf(pos, "template %s: %s", name, msg)
	}
}

// templatePosition is where line and column of template name are: in a
// file of its own (file set), or in the spec (file ""); ok is false for a
// template the compiler did not read.
func (c *compiler) templatePosition(name string, line, col int) (file string, pos syntax.Pos, ok bool) {
	if col < 1 {
		col = 1
	}
	// text/template counts columns in bytes; positions count characters.
	if tl := strings.Split(c.sources[name], "\n"); line >= 1 && line <= len(tl) && col-1 <= len(tl[line-1]) {
		col = utf8.RuneCountInString(tl[line-1][:col-1]) + 1
	}
	o, ok := c.origins[name]
	if !ok {
		return "", syntax.Pos{}, false
	}
	if o.file != "" {
		if line == 0 {
			return o.file, syntax.Pos{Line: 1, Col: 1}, true
		}
		return o.file, syntax.Pos{Line: line, Col: col}, true
	}
	// define: a block scalar starts on the line after its key.
	if last := strings.Count(strings.TrimRight(c.sources[name], "\n"), "\n") + 1; line > last && c.sources[name] != "" {
		line, col = last, 1
	}
	pos = syntax.Pos{Line: o.lineBase + line, Col: c.indentOf(o.lineBase+line) + col}
	if o.inline && line == 1 {
		pos.Col = o.col + col - 1
	}
	if line == 0 || pos.Line > len(c.r.Src.Lines) {
		pos = o.pos
	}
	return "", pos, true
}

// mappingValue returns the value of key in mapping n, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	n = syntax.ResolveAlias(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	if v := lookupPair(n, key); v != nil {
		return syntax.ResolveAlias(v)
	}
	return nil
}

// lookupPair returns the value of key in mapping n, written in it or merged
// in by "<<" (a written key wins, so it is looked for first), or nil.
func lookupPair(n *yaml.Node, key string) *yaml.Node {
	hasMerge := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			hasMerge = true
			continue
		}
		if syntax.ResolveAlias(k).Value == key {
			return n.Content[i+1]
		}
	}
	if hasMerge {
		for _, p := range syntax.MappingPairs(n) {
			if p.K.Value == key {
				return p.V
			}
		}
	}
	return nil
}

// indentOf is the indentation of a spec line (block scalars are indented).
func (c *compiler) indentOf(line int) int {
	if line < 1 || line > len(c.r.Src.Lines) {
		return 0
	}
	l := c.r.Src.Lines[line-1]
	return len(l) - len(strings.TrimLeft(l, " "))
}

// templateExists checks that a template of that name exists. It returns
// the name, or "" when the reference is invalid.
func (c *compiler) templateExists(s syntax.Str) string {
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
		hint := syntax.DidYouMean(s.V, names)
		if r, lib, ok := c.removedTemplate(s.V); ok {
			hint = fmt.Sprintf(": version %d of %s removed it; %s (or pin %s, which still has it)", r.In, lib, r.Successor, templates.Ref(lib, r.In-1))
		}
		if hint == "" && len(c.file.Templates.Use) == 0 && strings.Contains(s.V, "/") {
			hint = fmt.Sprintf(" (add `templates: {use: [%s]}`?)", strings.SplitN(s.V, "/", 2)[0])
		}
		c.r.Errorf(s.Pos, "unknown template %q%s", s.V, hint)
		return ""
	}
	return s.V
}

// templateRef checks that a template exists and uses only fields its dot
// (of type data) has, and records it as rendered by node (nil: by the
// runtime itself). It returns the name, or "" when the reference is invalid.
func (c *compiler) templateRef(s syntax.Str, data reflect.Type, node *NodePlan) string {
	name := c.templateExists(s)
	if name == "" {
		return ""
	}
	reads := c.checkTemplate(name, data, s.Pos)
	if node != nil {
		c.nodeTemplates[node.ID] = append(c.nodeTemplates[node.ID], templateUse{name: name, pos: s.Pos, reads: reads})
	}
	return name
}

// checkTemplate type-checks a template against a dot type once, reporting
// problems at the template's own lines (and where it is used), and returns
// the nodes it reads through .Nodes.ID.
func (c *compiler) checkTemplate(name string, data reflect.Type, ref syntax.Pos) []tmplNodeRead {
	key := name + "\x00" + data.String()
	if reads, ok := c.checked[key]; ok {
		return reads
	}
	msgs, reads := c.checker.check(name, data)
	c.checked[key] = reads
	for _, msg := range msgs {
		// msg is "NAME:LINE:COL: problem" (from ErrorContext) or plain.
		tname, line, col, rest := templateErrorLine("template: " + msg)
		if tname == "" {
			c.r.Errorf(ref, "template %s: %s", name, msg)
			continue
		}
		// ErrorContext counts columns from 0.
		c.reportTemplateProblem(tname, line, col+1, rest, ref)
	}
	return reads
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
			if group, ok := c.plan.Groups[a.V]; ok {
				if seen[a.V] {
					c.r.Errorf(a.Pos, "node %q: agent %q is listed twice", k.V, a.V)
					continue
				}
				seen[a.V] = true
				np.Agents = append(np.Agents, group...)
				continue
			}
			ap, ok := c.plan.AgentByID[a.V]
			if !ok {
				if c.file.Agents.Invalid {
					continue
				}
				c.r.Errorf(a.Pos, "node %q: unknown agent %q%s", k.V, a.V, syntax.DidYouMean(a.V, c.file.Agents.Names()))
				continue
			}
			if seen[a.V] {
				c.r.Errorf(a.Pos, "node %q: agent %q is listed twice", k.V, a.V)
				continue
			}
			seen[a.V] = true
			np.Agents = append(np.Agents, ap)
		}
	}
	for _, k := range c.file.Nodes.Keys {
		d, np := c.file.Nodes.Values[k.V], c.plan.Nodes[k.V]
		kind, ok := c.reg.Lookup(d.Kind.V)
		if !ok {
			continue // the schema reported it
		}
		np.Impl = kind
		nc := &NodeContext{c: c, Node: np, Decl: d, kind: kind}
		if data := kind.PromptData(); data != nil {
			nc.data = reflect.TypeOf(data)
		}
		raw := kind.NewConfig()
		nc.Decode(raw)
		c.site = &site{node: np}
		np.Config = kind.Compile(nc, raw)
		c.site = nil
	}
}

// agentSystems checks the system template of each agent that no node
// checked against its own prompt data, against what every prompt has.
func (c *compiler) agentSystems() {
	base := reflect.TypeOf(value.PromptBase{})
	for _, a := range c.plan.Agents {
		if a.System == "" {
			continue
		}
		checked := false
		for k := range c.systemChecked {
			if strings.HasPrefix(k, a.ID+"\x00") {
				checked = true
				break
			}
		}
		if !checked {
			c.checkTemplate(a.System, base, a.systemPos)
		}
	}
}

// judge compiles a judged score: its models, its template (checked
// against the judge's prompt data) and its levels.
func (c *compiler) judge(j *syntax.Judge) {
	jp := &JudgePlan{Criterion: j.Criterion}
	models := j.Models
	if len(models) == 0 {
		models = syntax.StrList{{V: "default", Pos: j.Pos, Set: true}}
	}
	for _, m := range models {
		if mp := c.modelRef(m, "score.judge"); mp != nil {
			jp.Names = append(jp.Names, m.V)
			jp.Models = append(jp.Models, mp)
		}
	}
	tmpl := j.Template
	if !tmpl.Set {
		tmpl = syntax.Str{V: "judge/grade", Pos: j.Pos, Set: true}
	}
	jp.Template = c.templateRef(tmpl, reflect.TypeOf(value.JudgeData{}), nil)
	for _, k := range j.Levels.Keys {
		jp.Levels = append(jp.Levels, value.JudgeLevel{Name: k.V, Description: *j.Levels.Values[k.V]})
	}
	c.plan.Judge = jp
}

// usedModels gathers the models the nodes call, in node order.
func (c *compiler) usedModels() {
	seen := map[*ModelPlan]bool{}
	for _, id := range c.plan.NodeOrder {
		for _, m := range c.plan.Nodes[id].Models {
			if m != nil && !seen[m] {
				seen[m] = true
				c.plan.UsedModels = append(c.plan.UsedModels, m)
			}
		}
	}
	if c.plan.Judge != nil {
		for _, m := range c.plan.Judge.Models {
			if !seen[m] {
				seen[m] = true
				c.plan.UsedModels = append(c.plan.UsedModels, m)
			}
		}
	}
}

// runCycles reports nodes that run each other (watchers watching their
// watcher): such a run would never end.
func (c *compiler) runCycles() {
	const (
		unseen = iota
		active
		done
	)
	state := map[string]int{}
	var path []string
	reported := map[string]bool{}
	var visit func(id string)
	visit = func(id string) {
		state[id] = active
		path = append(path, id)
		np := c.plan.Nodes[id]
		for _, next := range np.Runs {
			switch state[next] {
			case unseen:
				visit(next)
			case active:
				i := slices.Index(path, next)
				cycle := append(append([]string(nil), path[i:]...), next)
				key := strings.Join(cycle, ">")
				if !reported[key] {
					reported[key] = true
					c.r.Errorf(c.runsAt[id+"\x00"+next], "node %q: nodes run each other in a cycle (%s), which would never end", id, strings.Join(cycle, " runs "))
				}
			}
		}
		path = path[:len(path)-1]
		state[id] = done
	}
	for _, id := range c.plan.NodeOrder {
		if state[id] == unseen {
			visit(id)
		}
	}
}

// loopsName refuses a loop or foreach named loops: expressions read every
// loop's counter under that name (loops.NAME), which it would hide.
func (c *compiler) loopsName(as syntax.Str) {
	if as.V == "loops" {
		c.r.Errorf(as.Pos, "as: loops is the name of every loop's counter in expressions (loops.NAME); call this one something else")
	}
}

func (c *compiler) collectLoopNames(steps []syntax.Step) {
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

// MaxConcurrency bounds a foreach's concurrency: more iterations at once
// than this would only wait on the endpoints' own limits.
const MaxConcurrency = 64

// concurrency reads a foreach's concurrency: a whole number from 1 to
// MaxConcurrency (the schema says so where it was written), 1 when absent.
func (c *compiler) concurrency(n syntax.Value[int]) int {
	if !n.Set {
		return 1
	}
	if n.V < 1 || n.V > MaxConcurrency {
		c.r.Errorf(n.Pos, "foreach concurrency: %d is not a whole number from 1 to %d (how many iterations run at once)", n.V, MaxConcurrency)
		return 1
	}
	return n.V
}

func foreachDefault(in syntax.Expr) string {
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

func (c *compiler) flow(steps []syntax.Step, path string) []*FlowStep {
	var out []*FlowStep
	for i, s := range steps {
		p := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case s.Loop != nil:
			l := s.Loop
			fs := &FlowStep{Kind: StepLoop, Pos: s.Pos, As: orDefault(l.As.V, "round"), Path: p + ".loop"}
			c.loopsName(l.As)
			if l.Max.IsZero() && l.Until.IsZero() {
				c.r.Errorf(s.Pos, "loop has neither max nor until: it could run forever; add max: N")
			} else if l.Max.IsZero() {
				c.r.Errorf(s.Pos, "loop has until but no max: a condition that never holds would run forever; add max: N as a hard cap")
			}
			if !l.Max.IsZero() {
				if n, isConst := c.loopMaxConst(l.Max); isConst {
					fs.MaxConst = n
				} else {
					c.site = &site{step: fs}
					fs.MaxExpr = c.compileExpr(l.Max, nil, IntResult, "loop max")
					c.loopMaxes = append(c.loopMaxes, fs)
				}
			}
			c.site = &site{step: fs, after: true}
			fs.Until = c.compileExpr(l.Until, nil, BoolResult, "loop until")
			fs.Break = c.compileExpr(l.Break, nil, BoolResult, "loop break")
			c.site = nil
			fs.Do = c.flow(l.Do, p+".loop.do")
			out = append(out, fs)
		case s.Foreach != nil:
			f := s.Foreach
			fs := &FlowStep{Kind: StepForeach, Pos: s.Pos, As: orDefault(f.As.V, foreachDefault(f.In)), Path: p + ".foreach"}
			c.loopsName(f.As)
			if strings.TrimSpace(f.In.Source) == "goals" && len(c.plan.Goals) == 0 {
				c.r.Errorf(f.In.Pos, "foreach over goals, but the spec declares no goals")
			}
			c.site = &site{step: fs}
			fs.In = c.compileExpr(f.In, nil, ListResult, "foreach in")
			c.site = nil
			fs.Do = c.flow(f.Do, p+".foreach.do")
			fs.Concurrency = c.concurrency(f.Concurrency)
			out = append(out, fs)
		case s.If != nil:
			fs := &FlowStep{Kind: StepIf, Pos: s.Pos, Path: p + ".if"}
			c.site = &site{step: fs}
			fs.Cond = c.compileExpr(s.If.Cond, nil, BoolResult, "if")
			c.site = nil
			fs.Do = c.flow(s.If.Then, p+".then")
			fs.Else = c.flow(s.If.Else, p+".else")
			out = append(out, fs)
		case s.Node.Set:
			np, ok := c.plan.Nodes[s.Node.V]
			if !ok {
				if c.file.Nodes.Invalid {
					continue
				}
				c.r.Errorf(s.Node.Pos, "flow runs unknown node %q%s", s.Node.V, syntax.DidYouMean(s.Node.V, c.file.Nodes.Names()))
				continue
			}
			c.reachable[s.Node.V] = true
			out = append(out, &FlowStep{Kind: StepNode, Pos: s.Pos, Node: np, Path: p})
		}
	}
	return out
}

// maxLoop is the largest bound a loop may have: the largest count every
// platform's int holds.
const maxLoop = math.MaxInt32

// loopMaxConst reads a loop bound written as a number (max: 3, max: 0x10,
// max: 1e3), reporting one that is not a whole number from 1 to maxLoop.
// It returns false when the bound is an expression.
func (c *compiler) loopMaxConst(e syntax.Expr) (int, bool) {
	src := strings.TrimSpace(e.Source)
	if e.Quoted() || src == "" {
		return 0, false
	}
	if syntax.YAMLIntSyntax.MatchString(src) {
		n, err := strconv.ParseInt(src, 0, 64)
		switch {
		case errors.Is(err, strconv.ErrRange):
			// reported with the number's other checks
		case err != nil:
			return 0, false
		case n < 1:
			c.r.Errorf(e.Pos, "loop max must be at least 1, found %d", n)
		case n > maxLoop:
			c.r.Errorf(e.Pos, "loop max %d is too large (at most %d)", n, maxLoop)
		default:
			return int(n), true
		}
		return 1, true
	}
	f, err := strconv.ParseFloat(src, 64)
	if err != nil {
		return 0, false
	}
	if f != math.Trunc(f) || f < 1 || f > maxLoop {
		c.r.Errorf(e.Pos, "loop max must be a whole number from 1 to %d, found %s", maxLoop, src)
		return 1, true
	}
	return int(f), true
}

// checkLoopMaxes evaluates the loop bounds that read only vars with the
// vars' defaults: a bound a run with those defaults would refuse (negative,
// or not a number) is reported now.
//
// It also gives each bound its declared maximum (FlowStep.MaxBound), which
// a bound that reads what the run records must have: the dry run plans the
// loop to it.
func (c *compiler) checkLoopMaxes() {
	for _, fs := range c.loopMaxes {
		p := fs.MaxExpr
		if p == nil || p.Program == nil {
			continue
		}
		c.loopMaxBound(fs)
		if !readsOnlyVars(p.Source) {
			continue
		}
		v, err := expr.Run(p.Program, c.envSample(nil))
		if err != nil {
			continue
		}
		switch n := v.(type) {
		case int:
			if n < 0 {
				c.r.Errorf(p.Pos, "loop max %s is %d with the spec's defaults; a loop runs 0 or more times (fix the default, or guard it: max(0, %s))", p.Source, n, p.Source)
			}
		}
	}
}

// loopMaxBound works out a loop max expression's declared maximum, as a
// count's (see count.go): required, at most maxLoop and at least 0, when
// the expression reads what the run records.
func (c *compiler) loopMaxBound(fs *FlowStep) {
	p := fs.MaxExpr
	tree, err := parser.Parse(p.Source)
	if err != nil {
		return
	}
	r := c.countRangeOf(tree.Node)
	switch {
	case math.IsInf(r.hi, 1) || math.IsNaN(r.hi):
		if p.ReadsRun {
			c.r.Errorf(p.Pos, "loop max (%s) reads what the run records, so it needs a declared maximum for the dry run and the budget to plan with: cap it, e.g. min(%s, 10), or read vars and inputs with a maximum", p.Source, p.Source)
		}
	case r.hi > maxLoop:
		c.r.Errorf(p.Pos, "loop max (%s) may be %.0f, more than a loop's %d", p.Source, r.hi, maxLoop)
	case r.hi < 0:
		c.r.Errorf(p.Pos, "loop max (%s) is at most %.0f: the loop would never run", p.Source, r.hi)
	default:
		fs.MaxBound = int(math.Floor(r.hi))
	}
}

// readsOnlyVars reports whether an expression reads no name but vars.
func readsOnlyVars(src string) bool {
	tree, err := parser.Parse(src)
	if err != nil {
		return false
	}
	only := true
	ast.Walk(&tree.Node, visitorFunc(func(n *ast.Node) {
		switch x := (*n).(type) {
		case *ast.IdentifierNode:
			if x.Value != "vars" {
				only = false
			}
		case *ast.CallNode:
			only = false
		}
	}))
	return only
}

func (c *compiler) unreachable() {
	if len(c.file.Flow) == 0 || c.flowBroken {
		return // the schema reported the flow's mistakes; a guess would mislead
	}
	for _, k := range c.file.Nodes.Keys {
		if !c.reachable[k.V] {
			c.r.Errorf(k.Pos, "node %q is never run: no flow step names it (add it to flow or remove it)", k.V)
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
	if j := c.file.Score.Judge; j != nil {
		c.judge(j)
	} else if !c.file.Score.IsZero() {
		c.plan.Score = c.compileExpr(c.file.Score.Expr, map[string]any{"outputs": map[string]any{}, "expected": nil}, AnyResult, "score")
	}
	if !c.file.Concluded.IsZero() {
		c.plan.Concluded = c.compileExpr(c.file.Concluded, value.ConcludedSample(), BoolResult, "concluded")
	}
	for _, g := range c.file.Goals {
		if g.Concluded.IsZero() {
			continue
		}
		if p := c.compileExpr(g.Concluded, value.GoalConcludedSample(), BoolResult, fmt.Sprintf("goal %q concluded", g.ID.V)); p != nil {
			if c.plan.GoalConcluded == nil {
				c.plan.GoalConcluded = map[string]*Program{}
			}
			c.plan.GoalConcluded[g.ID.V] = p
		}
	}
}
