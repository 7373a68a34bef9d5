package difffuzz

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/spec"
)

// Seed is a spec mutants are made from: one that validates.
type Seed struct {
	// Rel is its path from the repository's root, Path its absolute path.
	Rel, Path string
	Text      []byte
	doc       *yaml.Node
	plan      *spec.Plan
	scope     *scope
	// Inputs are what its runs are given: its spec test file's, else a
	// text for each required input.
	Inputs map[string]any
}

// Root is the repository's root, found from the working directory.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = up
	}
}

// SeedPaths lists the specs the corpus starts from: every example and
// every spec of a testdata folder (those that do not validate are dropped
// by LoadSeeds).
func SeedPaths(root string) []string {
	var out []string
	for _, g := range []string{"examples/*/spec.yaml", "examples/protocols/*/spec.yaml", "spec/testdata/graph/*.yaml", "runtime/testdata/*.yaml"} {
		m, _ := filepath.Glob(filepath.Join(root, g))
		out = append(out, m...)
	}
	sort.Strings(out)
	return out
}

// LoadSeed reads and compiles a seed as runner validate does (runtime.Load:
// compile, then the path check); an error when it does not validate.
func LoadSeed(root, path string) (*Seed, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	plan, diags := runtime.Load(path, nodes.Registry())
	if diags.HasErrors() {
		return nil, fmt.Errorf("%s does not validate: %s", path, diags.Format())
	}
	if len(plan.MCPServers) > 0 {
		// its servers are commands (runner mcpdemo) a test binary is not
		return nil, fmt.Errorf("%s starts MCP servers, which the fuzzer's workers cannot be", path)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	rel, _ := filepath.Rel(root, path)
	s := &Seed{Rel: filepath.ToSlash(rel), Path: path, Text: data, doc: &doc, plan: plan}
	s.scope = scopeOf(plan, records(&doc))
	s.Inputs = seedInputs(path, plan)
	return s, nil
}

// records are the record names a spec's nodes record.
func records(doc *yaml.Node) []string {
	seen := map[string]bool{}
	var out []string
	ns := mapGet(doc.Content[0], "nodes")
	if ns == nil {
		return nil
	}
	for i := 1; i < len(ns.Content); i += 2 {
		for _, key := range []string{"record", "carry_over"} {
			if v := mapGet(ns.Content[i], key); v != nil && v.Kind == yaml.ScalarNode && !seen[v.Value] {
				seen[v.Value] = true
				out = append(out, v.Value)
			}
		}
	}
	return out
}

// seedInputs are the inputs of the spec's test file (its own and its
// first case's), else a text for each required input.
func seedInputs(path string, plan *spec.Plan) map[string]any {
	out := map[string]any{}
	if data, err := os.ReadFile(strings.TrimSuffix(path, ".yaml") + ".test.yaml"); err == nil {
		var t struct {
			Inputs map[string]any `yaml:"inputs"`
			Cases  []struct {
				Inputs map[string]any `yaml:"inputs"`
			} `yaml:"cases"`
		}
		if yaml.Unmarshal(data, &t) == nil {
			for k, v := range t.Inputs {
				out[k] = v
			}
			if len(t.Cases) > 0 {
				for k, v := range t.Cases[0].Inputs {
					out[k] = v
				}
			}
		}
	}
	for _, in := range plan.Inputs {
		if _, ok := out[in.Name]; !ok && in.Required {
			out[in.Name] = "Which is larger, 12+7*3 or 40? A) 33 B) 40"
		}
	}
	return out
}

// Mutant is a changed copy of a seed.
type Mutant struct {
	// Seed is the seed's path from the repository's root.
	Seed string `json:"seed"`
	// Grammar is the grammar the change comes from; What says what was
	// changed where.
	Grammar string `json:"grammar"`
	What    string `json:"what"`
	Text    string `json:"text"`
}

// Generator makes mutants of seeds from the grammars.
type Generator struct {
	tfuncs []tmplFunc
	efuncs []exprFunc
	kinds  map[string][]keyword
	steps  map[string][]string
	skw    map[string]string
	skwMap []string
	n      int
}

// NewGenerator reads the grammars from the code.
func NewGenerator() *Generator {
	g := &Generator{tfuncs: tmplFuncs(), efuncs: exprFuncs(), kinds: kindKeywords(), steps: stepKeywords(), skw: schemaKeywords()}
	for k := range g.skw {
		g.skwMap = append(g.skwMap, k)
	}
	sort.Strings(g.skwMap)
	return g
}

// Mutate makes a mutant of seed in grammar from the random source: one
// change (now and then two) that applies; false when none applied after
// some tries.
func (g *Generator) Mutate(r *rand.Rand, seed *Seed, grammar string) (Mutant, bool) {
	// a copy numbers its new names from the random source: a mutant is
	// the same for the same source, and mutants are made concurrently
	g = &Generator{tfuncs: g.tfuncs, efuncs: g.efuncs, kinds: g.kinds, steps: g.steps, skw: g.skw, skwMap: g.skwMap, n: r.Intn(1 << 20)}
	for try := 0; try < 20; try++ {
		doc := clone(seed.doc)
		var whats []string
		for i, n := 0, 1+boolInt(r.Intn(5) == 0); i < n; i++ {
			what := g.apply(r, seed, doc, grammar)
			if what != "" {
				whats = append(whats, what)
			}
		}
		if len(whats) == 0 {
			continue
		}
		out, err := yaml.Marshal(doc)
		if err != nil {
			continue
		}
		return Mutant{Seed: seed.Rel, Grammar: grammar, What: strings.Join(whats, "; "), Text: string(out)}, true
	}
	return Mutant{}, false
}

func (g *Generator) apply(r *rand.Rand, seed *Seed, doc *yaml.Node, grammar string) string {
	g.n++
	switch grammar {
	case "templates":
		return g.mutateTemplate(r, seed, doc)
	case "expressions":
		return g.mutateExpr(r, seed, doc)
	case "flow":
		return g.mutateFlow(r, seed, doc)
	case "schemas":
		return g.mutateSchema(r, seed, doc)
	}
	return ""
}

// ---- templates ----

func (g *Generator) mutateTemplate(r *rand.Rand, seed *Seed, doc *yaml.Node) string {
	ns := mapGet(doc.Content[0], "nodes")
	ids := keys(ns)
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	for _, id := range ids {
		n := mapGet(ns, id)
		tv := mapGet(n, "template")
		if tv == nil || tv.Kind != yaml.ScalarNode {
			continue
		}
		var ni nodeInfo
		for _, x := range seed.scope.nodes {
			if x.id == id {
				ni = x
			}
		}
		if ni.dot == nil {
			continue
		}
		tg := newTmplGen(r, seed.scope, ni.dot, g.tfuncs)
		action := tg.Action(2)
		name := fmt.Sprintf("fuzz/%s-%d", id, g.n)
		define := ensureMap(ensureMap(doc.Content[0], "templates"), "define")
		var body string
		switch r.Intn(3) {
		case 0:
			body = action + "\n{{template " + strconv.Quote(tv.Value) + " .}}"
		default:
			body = "{{template " + strconv.Quote(tv.Value) + " .}}\n" + action
		}
		mapSet(define, name, scalar(body))
		tv.Value = name
		return "node " + id + " renders " + action
	}
	return ""
}

// ---- expressions ----

// exprSlots are the properties of a kind whose value is an expression,
// read from its schema's descriptions.
func exprSlot(kw keyword) bool {
	d, _ := kw.schema["description"].(string)
	d = strings.ToLower(d)
	if kw.name == "template" || kw.name == "system" || kw.name == "description" {
		return false
	}
	return strings.Contains(d, "expression") || strings.Contains(d, "condition") || strings.Contains(d, "when this holds")
}

// countSlot reports whether a kind's property is a count that takes an
// expression over vars and inputs (see spec.Count).
func countSlot(kw keyword) bool {
	d, _ := kw.schema["description"].(string)
	return strings.Contains(d, "expression over vars and inputs")
}

func (g *Generator) mutateExpr(r *rand.Rand, seed *Seed, doc *yaml.Node) string {
	eg := &exprGen{r: r, s: seed.scope, funcs: g.efuncs}
	e := eg.Expr(1 + r.Intn(3))
	top := doc.Content[0]
	switch r.Intn(6) {
	case 0, 1: // an output
		outs := ensureMap(top, "outputs")
		if names := keys(outs); len(names) > 0 && r.Intn(2) == 0 {
			name := pick(r, names)
			mapGet(outs, name).SetString(e)
			return "output " + name + ": " + e
		}
		name := fmt.Sprintf("fuzz_%d", g.n)
		mapSet(outs, name, scalar(e))
		return "output " + name + ": " + e
	case 2: // a node's expression keyword
		ns := mapGet(top, "nodes")
		id := pick(r, keys(ns))
		n := mapGet(ns, id)
		kind := scalarOf(mapGet(n, "kind"))
		var slots []string
		for _, kw := range g.kinds[kind] {
			if exprSlot(kw) {
				slots = append(slots, kw.name)
			}
		}
		if len(slots) == 0 {
			return ""
		}
		slot := pick(r, slots)
		for _, kw := range g.kinds[kind] {
			if kw.name == slot && countSlot(kw) && r.Intn(3) > 0 {
				e = eg.Count(1 + r.Intn(2)) // a count, as counts are written
			}
		}
		if slot == "set" {
			set := ensureMap(n, "set")
			mapSet(set, fmt.Sprintf("fuzz_%d", g.n), scalar(e))
		} else if slot == "value" && mapGet(n, "set") != nil {
			return ""
		} else {
			setKey(n, slot, scalar(e))
		}
		return "node " + id + " " + slot + ": " + e
	case 3: // a flow condition or bound
		var steps []*yaml.Node
		walkSteps(mapGet(top, "flow"), func(st *yaml.Node) {
			if st.Kind == yaml.MappingNode {
				steps = append(steps, st)
			}
		})
		if len(steps) == 0 {
			return ""
		}
		st := pick(r, steps)
		if c := mapGet(st, "if"); c != nil {
			c.SetString(e)
			return "flow if: " + e
		}
		for _, form := range []string{"loop", "foreach"} {
			body := mapGet(st, form)
			if body == nil {
				continue
			}
			kw := pick(r, g.steps[form])
			if kw == "do" || kw == "as" || kw == "concurrency" {
				kw = map[string]string{"loop": "until", "foreach": "in"}[form]
			}
			setKey(body, kw, scalar(e))
			return form + " " + kw + ": " + e
		}
		return ""
	default: // a compute node the flow runs
		ns := mapGet(top, "nodes")
		id := fmt.Sprintf("fuzz_%d", g.n)
		mapSet(ns, id, mapping("kind", scalar("compute"), "value", scalar(e)))
		flow := mapGet(top, "flow")
		if flow == nil || flow.Kind != yaml.SequenceNode {
			return ""
		}
		seqs := []*yaml.Node{flow}
		walkSeqs(flow, func(s *yaml.Node) { seqs = append(seqs, s) })
		s := pick(r, seqs)
		at := r.Intn(len(s.Content) + 1)
		s.Content = append(s.Content[:at], append([]*yaml.Node{scalar(id)}, s.Content[at:]...)...)
		return "compute node " + id + " value: " + e
	}
}

// ---- flow ----

func (g *Generator) mutateFlow(r *rand.Rand, seed *Seed, doc *yaml.Node) string {
	top := doc.Content[0]
	flow := mapGet(top, "flow")
	if flow == nil || flow.Kind != yaml.SequenceNode {
		return ""
	}
	eg := &exprGen{r: r, s: seed.scope, funcs: g.efuncs}
	switch r.Intn(5) {
	case 0: // wrap a step in a loop, foreach or if
		seqs := []*yaml.Node{flow}
		walkSeqs(flow, func(s *yaml.Node) { seqs = append(seqs, s) })
		s := pick(r, seqs)
		if len(s.Content) == 0 {
			return ""
		}
		i := r.Intn(len(s.Content))
		body := seqNode(s.Content[i])
		var wrapped *yaml.Node
		var what string
		switch form := pick(r, []string{"loop", "foreach", "if"}); form {
		case "loop":
			m := mapping("do", body, "max", scalar(pick(r, []string{"0", "1", "2", "3", "-1", "1000000", "vars." + seed.scope.name(r, seed.scope.varList), eg.Expr(1)})))
			if r.Intn(2) == 0 {
				setKey(m, "until", scalar(pick(r, []string{"false", "true", eg.Expr(2)})))
			}
			if r.Intn(3) == 0 {
				setKey(m, "as", scalar(pick(r, []string{"round", "turn", "i", seed.scope.name(r, seed.scope.loops)})))
			}
			wrapped, what = mapping("loop", m), "loop"
		case "foreach":
			in := pick(r, []string{"[]", "[1]", "[1, 2, 3]", `["a", "b"]`, "goals", "split(inputs." + seed.scope.name(r, seed.scope.inputs) + `, "\n")`, eg.Expr(2)})
			m := mapping("in", scalar(in), "do", body)
			if r.Intn(3) == 0 {
				setKey(m, "concurrency", scalar(pick(r, []string{"1", "2", "64"})))
			}
			if r.Intn(3) == 0 {
				setKey(m, "as", scalar(pick(r, []string{"item", "goal", "x", seed.scope.name(r, seed.scope.loops)})))
			}
			wrapped, what = mapping("foreach", m), "foreach in "+in
		default:
			c := pick(r, []string{"true", "false", eg.Expr(2)})
			wrapped, what = mapping("if", scalar(c), "then", body), "if "+c
			if r.Intn(2) == 0 {
				setKey(wrapped, "else", seqNode(clone(s.Content[i])))
			}
		}
		s.Content[i] = wrapped
		return "flow step wrapped in " + what
	case 1: // a loop keyword
		var loops []*yaml.Node
		walkSteps(flow, func(st *yaml.Node) {
			if l := mapGet(st, "loop"); l != nil {
				loops = append(loops, l)
			}
		})
		if len(loops) == 0 {
			return ""
		}
		l := pick(r, loops)
		switch kw := pick(r, g.steps["loop"]); kw {
		case "max":
			v := pick(r, []string{"0", "1", "-1", "1000000", "2.5", `"3"`, "vars." + seed.scope.name(r, seed.scope.varList), eg.Expr(1),
				// what the run records, capped (a declared maximum) or not
				"min(" + eg.Expr(1) + ", " + pick(r, []string{"0", "2", "3"}) + ")", "min(len(messages), 2)", "len(messages) + 1"})
			setKey(l, "max", scalar(v))
			return "loop max: " + v
		case "as":
			v := pick(r, []string{"round", "item", "goal", "x", "inputs", "loops"})
			setKey(l, "as", scalar(v))
			return "loop as: " + v
		case "break":
			v := pick(r, []string{"false", "true", "round >= 2", eg.Expr(2)})
			setKey(l, "break", scalar(v))
			return "loop break: " + v
		default:
			v := pick(r, []string{"false", "true", eg.Expr(2)})
			setKey(l, "until", scalar(v))
			return "loop until: " + v
		}
	case 2, 3: // a node keyword from its kind's schema
		ns := mapGet(top, "nodes")
		id := pick(r, keys(ns))
		n := mapGet(ns, id)
		kind := scalarOf(mapGet(n, "kind"))
		kws := g.kinds[kind]
		if len(kws) == 0 {
			return ""
		}
		kw := pick(r, kws)
		if kw.name == "kind" || kw.name == "description" {
			return ""
		}
		v := g.keywordValue(r, seed, kw, eg)
		if v == nil {
			return ""
		}
		setKey(n, kw.name, v)
		out, _ := yaml.Marshal(v)
		return "node " + id + " " + kw.name + ": " + strings.TrimSpace(string(out))
	default: // drop, repeat or move a step
		seqs := []*yaml.Node{flow}
		walkSeqs(flow, func(s *yaml.Node) { seqs = append(seqs, s) })
		s := pick(r, seqs)
		if len(s.Content) < 2 {
			return ""
		}
		i, j := r.Intn(len(s.Content)), r.Intn(len(s.Content))
		switch r.Intn(3) {
		case 0:
			s.Content = append(s.Content[:i], s.Content[i+1:]...)
			return fmt.Sprintf("flow step %d dropped", i)
		case 1:
			s.Content = append(s.Content[:j], append([]*yaml.Node{clone(s.Content[i])}, s.Content[j:]...)...)
			return fmt.Sprintf("flow step %d repeated at %d", i, j)
		}
		s.Content[i], s.Content[j] = s.Content[j], s.Content[i]
		return fmt.Sprintf("flow steps %d and %d swapped", i, j)
	}
}

// keywordValue is a value for a node keyword, from its schema: numbers at
// their edges, enum members, references to what the spec declares (and to
// what it does not), expressions, agent lists.
func (g *Generator) keywordValue(r *rand.Rand, seed *Seed, kw keyword, eg *exprGen) *yaml.Node {
	s := seed.scope
	if kw.name == "agents" {
		var ids []string
		switch r.Intn(4) {
		case 0:
			ids = []string{pick(r, s.agents)}
		case 1:
			ids = []string{pick(r, s.agents), pick(r, s.agents)}
		case 2:
			ids = append(append([]string{}, s.agents...), "unknown")
		default:
			ids = append([]string{}, s.agents...)
			r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		}
		return seqOf(ids...)
	}
	if e, ok := kw.schema["enum"].([]any); ok && len(e) > 0 {
		return scalar(fmt.Sprint(pick(r, e)))
	}
	types := []string{}
	switch t := kw.schema["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			types = append(types, fmt.Sprint(x))
		}
	}
	if len(types) == 0 {
		if alts, ok := kw.schema["anyOf"].([]any); ok {
			if a, ok := pick(r, alts).(map[string]any); ok {
				return g.keywordValue(r, seed, keyword{name: kw.name, schema: a}, eg)
			}
		}
		types = []string{"string"}
	}
	if countSlot(kw) && r.Intn(2) == 0 {
		return scalar(eg.Count(2))
	}
	switch pick(r, types) {
	case "integer", "number":
		return scalar(pick(r, []string{"0", "1", "2", "-1", "64", "1000000"}))
	case "boolean":
		return scalar(pick(r, []string{"true", "false"}))
	case "string":
		if exprSlot(kw) {
			return scalar(eg.Expr(2))
		}
		if kw.name == "template" && len(s.templates) > 0 && r.Intn(2) == 0 {
			// one of the spec's templates (a summary's, a message's), whose
			// dot may or may not fit
			return scalar(pick(r, s.templates))
		}
		var names []string
		for _, n := range s.nodes {
			names = append(names, n.id)
		}
		list := pick(r, [][]string{s.records, s.agents, names, {"unknown", "round_robin", "text", "json"}})
		if len(list) == 0 {
			return scalar("unknown")
		}
		return scalar(pick(r, list))
	case "array":
		if items, ok := kw.schema["items"].(map[string]any); ok && r.Intn(2) == 0 {
			seq := seqNode()
			for i := 0; i < 1+r.Intn(2); i++ {
				if v := g.keywordValue(r, seed, keyword{name: kw.name, schema: items}, eg); v != nil {
					seq.Content = append(seq.Content, v)
				}
			}
			return seq
		}
		return seqOf(pick(r, [][]string{s.agents, s.records, {"search_history"}, {}})...)
	case "object":
		// its required properties and some others, each from its schema
		props, _ := kw.schema["properties"].(map[string]any)
		required := map[string]bool{}
		if req, ok := kw.schema["required"].([]any); ok {
			for _, x := range req {
				required[fmt.Sprint(x)] = true
			}
		}
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
		m := mapping()
		for _, k := range names {
			ps, ok := props[k].(map[string]any)
			if !ok || (!required[k] && r.Intn(2) == 0) {
				continue
			}
			if v := g.keywordValue(r, seed, keyword{name: k, schema: ps}, eg); v != nil {
				mapSet(m, k, v)
			}
		}
		if len(m.Content) == 0 {
			return nil
		}
		return m
	}
	return nil
}

// ---- schemas ----

func (g *Generator) mutateSchema(r *rand.Rand, seed *Seed, doc *yaml.Node) string {
	ns := mapGet(doc.Content[0], "nodes")
	type site struct {
		id  string
		out *yaml.Node
	}
	var sites []site
	for _, id := range keys(ns) {
		if o := mapGet(mapGet(ns, id), "output"); o != nil && o.Kind == yaml.MappingNode {
			sites = append(sites, site{id, o})
		}
	}
	if len(sites) == 0 {
		return ""
	}
	st := pick(r, sites)
	var schema any
	if ref := mapGet(st.out, "schema_ref"); ref != nil {
		raw, ok := seed.plan.SchemaDocs[ref.Value]
		if !ok || json.Unmarshal(raw, &schema) != nil {
			return ""
		}
		delKey(st.out, "schema_ref")
	} else if sn := mapGet(st.out, "schema"); sn != nil {
		if sn.Decode(&schema) != nil {
			return ""
		}
	} else {
		if r.Intn(2) == 0 {
			return ""
		}
		schema = map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}}
		setKey(st.out, "format", scalar("json"))
		delKey(st.out, "pattern")
		delKey(st.out, "patterns")
		delKey(st.out, "tags")
	}
	// every object of the schema is a place a keyword may go
	// every (sub)schema is a place a keyword may go; the maps of
	// properties and definitions hold schemas, they are none
	var places []map[string]any
	var walk func(v any, isSchema bool)
	walk = func(v any, isSchema bool) {
		switch x := v.(type) {
		case map[string]any:
			if isSchema {
				places = append(places, x)
			}
			for k, c := range x {
				named := isSchema && (k == "properties" || k == "$defs" || k == "definitions" || k == "patternProperties" || k == "dependentSchemas")
				walk(c, !named)
			}
		case []any:
			for _, c := range x {
				walk(c, isSchema)
			}
		}
	}
	walk(schema, true)
	if len(places) == 0 {
		return ""
	}
	p := pick(r, places)
	kw := pick(r, g.skwMap)
	var what string
	if _, has := p[kw]; has && r.Intn(3) == 0 {
		delete(p, kw)
		what = "removed " + kw
	} else {
		v := g.schemaValue(r, g.skw[kw], p)
		p[kw] = v
		data, _ := json.Marshal(v)
		what = kw + ": " + string(data)
	}
	var sn yaml.Node
	if err := sn.Encode(schema); err != nil {
		return ""
	}
	setKey(st.out, "schema", &sn)
	return "node " + st.id + " output schema " + what
}

func (g *Generator) schemaValue(r *rand.Rand, kind string, at map[string]any) any {
	props := []string{}
	if m, ok := at["properties"].(map[string]any); ok {
		for k := range m {
			props = append(props, k)
		}
		sort.Strings(props)
	}
	small := func() any {
		return pick(r, []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}, map[string]any{"type": "number", "minimum": 0},
			map[string]any{"type": "array", "items": map[string]any{"type": "string"}}, map[string]any{"type": "boolean"}, map[string]any{}})
	}
	switch kind {
	case "type":
		return pick(r, []any{"string", "integer", "number", "boolean", "array", "object", "null", []any{"string", "null"}})
	case "count":
		return pick(r, []any{0, 1, 2, 3, 10})
	case "number":
		return pick(r, []any{0, 1, -1, 0.5, 100, 1e9})
	case "bool":
		return pick(r, []any{true, false})
	case "list":
		return pick(r, []any{[]any{"a", "b"}, []any{1, 2, 3}, []any{"yes"}, []any{nil, "x"}})
	case "names":
		return append(append([]any{}, anys(props)...), pick(r, []any{"answer", "reason", "x"}))
	case "regex":
		return pick(r, []any{"^[A-D]$", "^\\d+$", ".+", "^(yes|no)$"})
	case "props":
		m := map[string]any{}
		if orig, ok := at["properties"].(map[string]any); ok {
			for k, v := range orig {
				m[k] = v
			}
		}
		if len(props) > 0 && r.Intn(2) == 0 {
			delete(m, pick(r, props))
		} else {
			m[pick(r, []string{"answer", "score", "items", "x"})] = small()
		}
		return m
	case "schemas":
		return []any{small(), small()}
	case "schema":
		return small()
	}
	return pick(r, []any{"x", 1, nil, true, []any{}, map[string]any{}})
}

func anys(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// ---- YAML helpers ----

func clone(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, x := range n.Content {
		c.Content[i] = clone(x)
	}
	return &c
}

func mapGet(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func keys(m *yaml.Node) []string {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	var out []string
	for i := 0; i+1 < len(m.Content); i += 2 {
		out = append(out, m.Content[i].Value)
	}
	return out
}

func scalarOf(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	return n.Value
}

func scalar(v string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Value: v}
	// numbers and booleans as YAML reads them, other text as a string
	var x any
	if err := yaml.Unmarshal([]byte(v), &x); err == nil {
		switch x.(type) {
		case int, float64, bool:
			return n
		}
	}
	n.Tag = "!!str"
	if strings.Contains(v, "\n") {
		n.Style = yaml.LiteralStyle
	}
	return n
}

func seqOf(items ...string) *yaml.Node {
	s := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for _, it := range items {
		s.Content = append(s.Content, scalar(it))
	}
	return s
}

func seqNode(items ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: items}
}

func mapping(kv ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: kv[i].(string)}, kv[i+1].(*yaml.Node))
	}
	return m
}

func ensureMap(m *yaml.Node, key string) *yaml.Node {
	if v := mapGet(m, key); v != nil && v.Kind == yaml.MappingNode {
		v.Style = 0
		return v
	}
	v := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	delKey(m, key)
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
	return v
}

func mapSet(m *yaml.Node, key string, v *yaml.Node) {
	m.Style = 0
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

// setKey sets key in m, in place when it is there.
func setKey(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	mapSet(m, key, v)
}

func delKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

// walkSteps calls f for every step of a flow sequence, nested ones too.
func walkSteps(seq *yaml.Node, f func(*yaml.Node)) {
	if seq == nil || seq.Kind != yaml.SequenceNode {
		return
	}
	for _, st := range seq.Content {
		f(st)
		for _, form := range []string{"loop", "foreach"} {
			walkSteps(mapGet(mapGet(st, form), "do"), f)
		}
		walkSteps(mapGet(st, "then"), f)
		walkSteps(mapGet(st, "else"), f)
	}
}

// walkSeqs calls f for every nested step sequence (bodies and branches).
func walkSeqs(seq *yaml.Node, f func(*yaml.Node)) {
	walkSteps(seq, func(st *yaml.Node) {
		for _, form := range []string{"loop", "foreach"} {
			if d := mapGet(mapGet(st, form), "do"); d != nil && d.Kind == yaml.SequenceNode {
				f(d)
			}
		}
		for _, k := range []string{"then", "else"} {
			if d := mapGet(st, k); d != nil && d.Kind == yaml.SequenceNode {
				f(d)
			}
		}
	})
}
