package lsp

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/spec/syntax"
	"gopkg.in/yaml.v3"
)

// Diagnostic is an LSP diagnostic.
type Diagnostic struct {
	Range    Range  `json:"range"`
	Severity int    `json:"severity"`
	Source   string `json:"source,omitempty"`
	Message  string `json:"message"`
}

// LSP severities.
const (
	sevError   = 1
	sevWarning = 2
)

type publishParams struct {
	URI         string       `json:"uri"`
	Version     int          `json:"version,omitempty"`
	Diagnostics []Diagnostic `json:"diagnostics"`
}

// Location is a range in a document.
type Location struct {
	URI   string `json:"uri"`
	Range Range  `json:"range"`
}

// toLSP places the compiler's diagnostics in the document: each from its
// line and column to the end of the word there. One about another file
// (a template folder's) is placed at the document's start, naming its
// file, line and column as validate does.
func toLSP(t *text, path string, ds syntax.Diagnostics) []Diagnostic {
	starts := specLineStarts(t.src)
	out := make([]Diagnostic, 0, len(ds))
	for _, d := range ds {
		ld := Diagnostic{Severity: sevError, Source: "runner", Message: d.Message}
		if d.Severity == syntax.Warning {
			ld.Severity = sevWarning
		}
		if d.File != "" && d.File != path {
			ld.Message = d.String()
		} else if d.Pos.Line > 0 {
			off := specOffset(t.src, starts, d.Pos)
			ld.Range = Range{t.position(off), t.position(tokenEnd(t.src, off))}
		}
		out = append(out, ld)
	}
	return out
}

func (d *document) rangeOf(start, end int) Range {
	return Range{d.t.position(start), d.t.position(end)}
}

// CompletionItem is an LSP completion item.
type CompletionItem struct {
	Label         string    `json:"label"`
	Kind          int       `json:"kind,omitempty"`
	Detail        string    `json:"detail,omitempty"`
	Documentation *markup   `json:"documentation,omitempty"`
	InsertText    string    `json:"insertText,omitempty"`
	TextEdit      *textEdit `json:"textEdit,omitempty"`
}

type markup struct {
	Kind  string `json:"kind"`
	Value string `json:"value"`
}

type textEdit struct {
	Range   Range  `json:"range"`
	NewText string `json:"newText"`
}

// LSP completion item kinds.
const (
	itemProperty  = 10
	itemValue     = 12
	itemReference = 18
	itemEnum      = 20
)

// textPrefixes are what, written just before a name, asks for an id of
// a kind inside template or expression text.
var textPrefixes = []struct{ prefix, kind string }{
	{".Inputs.", kInput}, {"inputs.", kInput}, {".Vars.", kVar}, {"vars.", kVar},
	{".Nodes.", kNode}, {"nodes.", kNode}, {"verdicts.", kVerdicts},
	{`template "`, kTemplate}, {`template \"`, kTemplate},
}

func (s *server) schemaFor(d *document) *schema {
	if d.test {
		return s.testSchema
	}
	return s.specSchema
}

// completion offers keys by the schema where a key is written, and ids
// where a reference is.
func (s *server) completion(d *document, p Position) []CompletionItem {
	off := d.t.offset(p)
	if d.stale {
		// The line being written is what breaks the text, most often:
		// the ids of the text without it.
		line := d.t.position(off).Line
		a, b := d.t.starts[line], d.t.lineEnd(line)
		if idx, ok := buildIndex(d.t.src[:a] + strings.Repeat(" ", b-a) + d.t.src[b:]); ok {
			d.idx = idx
		}
	}
	c := cursorAt(d.t, off)
	repl := d.rangeOf(c.start, off)
	items := []CompletionItem{}
	idsAt := func(kind string, repl Range) {
		for _, name := range s.idNames(d, kind) {
			items = append(items, CompletionItem{Label: name, Kind: itemReference, Detail: kind,
				TextEdit: &textEdit{repl, name}, Documentation: s.describeID(d, kind, name)})
		}
	}
	ids := func(kind string) { idsAt(kind, repl) }
	fs := off
	for fs > 0 && (isNameByte(d.t.src[fs-1]) && d.t.src[fs-1] != '.' && d.t.src[fs-1] != '/') {
		fs--
	}
	before := d.t.src[:fs]
	for _, tp := range textPrefixes {
		if strings.HasSuffix(before, tp.prefix) {
			if tp.prefix[0] != '.' && tp.prefix[0] != 't' && len(before) > len(tp.prefix) && isNameByte(before[len(before)-len(tp.prefix)-1]) {
				continue // agent.vars., goal.vars.
			}
			idsAt(tp.kind, d.rangeOf(fs, off))
			return items
		}
	}
	if d.test {
		if c.key == "" {
			items = append(items, keyItems(s.testSchema, c, repl, nil)...)
		}
		return items
	}
	kindOf := d.nodeKind
	if c.key == "" && !c.item {
		return append(items, keyItems(s.specSchema, c, repl, kindOf)...)
	}
	top := ""
	if len(c.path) > 0 {
		top = c.path[0]
	}
	switch {
	case top == "flow" && (c.key == "do" || c.key == "then" || c.key == "else"),
		c.key == "flow" && len(c.path) <= 1:
		ids(kNode)
	default:
		if kind, ok := refKeys[c.key]; ok && refersHere(top, c.key) && (len(c.path) > 0 || c.key == "flow") {
			ids(kind)
		}
	}
	_, enum := s.specSchema.describe(s.specSchema.at(append(append([]string{}, c.path...), c.key), kindOf))
	for _, v := range enum {
		items = append(items, CompletionItem{Label: v, Kind: itemEnum, TextEdit: &textEdit{repl, v}})
	}
	if c.item {
		items = append(items, keyItems(s.specSchema, cursor{path: append(append([]string{}, c.path...), c.key, "[]")}, repl, kindOf)...)
	}
	return items
}

func keyItems(sc *schema, c cursor, repl Range, kindOf func(string) string) []CompletionItem {
	var items []CompletionItem
	for _, p := range sc.properties(sc.at(c.path, kindOf)) {
		it := CompletionItem{Label: p.name, Kind: itemProperty, TextEdit: &textEdit{repl, p.name + ": "}}
		if p.doc != "" {
			it.Documentation = &markup{"markdown", p.doc}
		}
		items = append(items, it)
	}
	return items
}

// nodeKind is the kind: of a node, by its id: read from the index, or
// from the text while it does not read.
func (d *document) nodeKind(id string) string {
	if o, ok := d.idx.def(kNode, id); ok && o.value != nil && !d.stale {
		if k := mapGet(o.value, "kind"); k != nil {
			return k.Value
		}
	}
	m := regexp.MustCompile(`(?m)^( +)` + regexp.QuoteMeta(id) + `:(.*)$`).FindStringSubmatchIndex(d.t.src)
	if m == nil {
		return ""
	}
	kindRe := regexp.MustCompile(`\bkind:\s*"?([a-z_]+)`)
	if k := kindRe.FindStringSubmatch(d.t.src[m[4]:m[5]]); k != nil {
		return k[1]
	}
	indent := m[3] - m[2]
	for _, line := range strings.Split(d.t.src[min(m[1]+1, len(d.t.src)):], "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if trimmed == "" || trimmed[0] == '#' {
			continue
		}
		if len(line)-len(trimmed) <= indent {
			break
		}
		if strings.HasPrefix(trimmed, "kind:") {
			if k := kindRe.FindStringSubmatch(trimmed); k != nil {
				return k[1]
			}
		}
	}
	return ""
}

// idNames are the ids of a kind the document may name: those it
// declares, and for templates those of its libraries (from its last
// plan).
func (s *server) idNames(d *document, kind string) []string {
	seen := map[string]bool{}
	var out []string
	for _, o := range d.idx.names(kind) {
		if !seen[o.name] {
			seen[o.name] = true
			out = append(out, o.name)
		}
	}
	if kind == kRecord {
		for _, o := range d.idx.occs {
			if o.kind == kRecord && !seen[o.name] {
				seen[o.name] = true
				out = append(out, o.name)
			}
		}
	}
	if kind == kTemplate && d.plan != nil && d.plan.Templates != nil {
		var lib []string
		for _, t := range d.plan.Templates.Templates() {
			if n := t.Name(); !seen[n] && strings.Contains(n, "/") {
				seen[n] = true
				lib = append(lib, n)
			}
		}
		sort.Strings(lib)
		out = append(out, lib...)
	}
	if kind == kModel && !seen["default"] {
		out = append(out, "default")
	}
	return out
}

// describeID is what hover and completion tell of an id: its kind and
// the gist of its declaration.
func (s *server) describeID(d *document, kind, name string) *markup {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** `%s`", kind, name)
	o, declared := d.idx.def(kind, name)
	if declared && o.value != nil {
		switch o.value.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(o.value.Content); i += 2 {
				k, v := o.value.Content[i], o.value.Content[i+1]
				if v.Kind == yaml.ScalarNode {
					fmt.Fprintf(&b, "\n\n%s: %s", k.Value, clip(v.Value, 300))
				}
			}
		case yaml.ScalarNode:
			if kind == kTemplate {
				fmt.Fprintf(&b, "\n\n```gotemplate\n%s\n```", clip(o.value.Value, 1500))
			} else {
				fmt.Fprintf(&b, "\n\ndefault: %s", clip(o.value.Value, 300))
			}
		}
	}
	if kind == kTemplate && !declared && d.plan != nil {
		if src, ok := d.plan.TemplateSources[name]; ok {
			fmt.Fprintf(&b, "\n\nfrom %s", src.Origin)
		}
		if t := d.plan.Templates.Lookup(name); t != nil && t.Tree != nil {
			fmt.Fprintf(&b, "\n\n```gotemplate\n%s\n```", clip(t.Tree.Root.String(), 1500))
		}
	}
	if kind == kNode && declared {
		if n := d.plan; n != nil {
			if np := n.Nodes[name]; np != nil && len(np.Agents) > 0 {
				var ids []string
				for _, a := range np.Agents {
					ids = append(ids, a.ID)
				}
				fmt.Fprintf(&b, "\n\nagents: %s", strings.Join(ids, ", "))
			}
		}
	}
	return &markup{"markdown", b.String()}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Hover is an LSP hover.
type Hover struct {
	Contents markup `json:"contents"`
	Range    *Range `json:"range,omitempty"`
}

// hover tells of the id under the cursor, or the key's doc.
func (s *server) hover(d *document, p Position) *Hover {
	off := d.t.offset(p)
	if o, ok := d.idx.at(off); ok && !d.stale {
		r := d.rangeOf(o.start, o.end)
		return &Hover{Contents: *s.describeID(d, o.kind, o.name), Range: &r}
	}
	// A key: its doc from the schema.
	a, b := off, off
	for a > 0 && isNameByte(d.t.src[a-1]) {
		a--
	}
	for b < len(d.t.src) && isNameByte(d.t.src[b]) {
		b++
	}
	if a == b || b >= len(d.t.src) || d.t.src[b] != ':' {
		return nil
	}
	c := cursorAt(d.t, a)
	if c.key != "" || c.item {
		return nil
	}
	key := d.t.src[a:b]
	sc := s.schemaFor(d)
	doc, enum := sc.describe(sc.at(append(append([]string{}, c.path...), key), d.nodeKind))
	if doc == "" {
		return nil
	}
	if len(enum) > 0 {
		doc += "\n\nOne of: `" + strings.Join(enum, "`, `") + "`"
	}
	r := d.rangeOf(a, b)
	return &Hover{Contents: markup{"markdown", "`" + key + "`: " + doc}, Range: &r}
}

func (s *server) definition(d *document, p Position) []Location {
	if d.stale {
		return nil
	}
	o, ok := d.idx.at(d.t.offset(p))
	if !ok {
		return nil
	}
	def, ok := d.idx.def(o.kind, o.name)
	if !ok {
		return nil
	}
	return []Location{{d.uri, d.rangeOf(def.start, def.end)}}
}

func (s *server) references(d *document, p Position, withDecl bool) []Location {
	if d.stale {
		return nil
	}
	o, ok := d.idx.at(d.t.offset(p))
	if !ok {
		return nil
	}
	out := []Location{}
	for _, r := range d.idx.all(o.kind, o.name) {
		if r.def && !withDecl {
			continue
		}
		out = append(out, Location{d.uri, d.rangeOf(r.start, r.end)})
	}
	return out
}

// DocumentSymbol is an LSP document symbol.
type DocumentSymbol struct {
	Name           string           `json:"name"`
	Detail         string           `json:"detail,omitempty"`
	Kind           int              `json:"kind"`
	Range          Range            `json:"range"`
	SelectionRange Range            `json:"selectionRange"`
	Children       []DocumentSymbol `json:"children,omitempty"`
}

// LSP symbol kinds.
const (
	symNamespace = 3
	symFunction  = 12
	symVariable  = 13
	symObject    = 19
	symKey       = 20
)

// symbols are the top-level sections, each with the ids it declares.
func (s *server) symbols(d *document) []DocumentSymbol {
	if d.stale {
		return []DocumentSymbol{}
	}
	var doc yaml.Node
	out := []DocumentSymbol{}
	if yaml.Unmarshal([]byte(d.t.src), &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return out
	}
	root := doc.Content[0]
	starts := specLineStarts(d.t.src)
	keyOff := func(n *yaml.Node) int { return specOffset(d.t.src, starts, posOf(n)) }
	lineStartOf := func(off int) int {
		return d.t.starts[d.t.position(off).Line]
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		start := keyOff(k)
		end := len(d.t.src)
		if i+2 < len(root.Content) {
			end = lineStartOf(keyOff(root.Content[i+2]))
		}
		sym := DocumentSymbol{Name: k.Value, Kind: symNamespace, Range: d.rangeOf(start, end), SelectionRange: d.rangeOf(start, start+len(k.Value))}
		var decls []occ
		for _, o := range d.idx.occs {
			if o.def && o.start >= start && o.start < end && o.kind != kRecord {
				decls = append(decls, o)
			}
		}
		for j, o := range decls {
			cend := end
			if j+1 < len(decls) {
				cend = max(lineStartOf(decls[j+1].start), o.end)
			}
			kind, detail := symObject, o.kind
			switch o.kind {
			case kTemplate:
				kind = symFunction
			case kVar, kInput:
				kind = symVariable
			case kNode:
				if k := d.nodeKind(o.name); k != "" {
					detail = k
				}
			}
			sym.Children = append(sym.Children, DocumentSymbol{Name: o.name, Detail: detail, Kind: kind,
				Range: d.rangeOf(o.start, cend), SelectionRange: d.rangeOf(o.start, o.end)})
		}
		if k.Value == "flow" {
			sym.Detail = "the order nodes run in"
		}
		if len(sym.Children) == 0 && k.Value != "flow" && k.Value != "templates" {
			sym.Kind = symKey
		}
		out = append(out, sym)
	}
	return out
}

func (s *server) prepareRename(d *document, p Position) *Range {
	if d.stale {
		return nil
	}
	o, ok := d.idx.at(d.t.offset(p))
	if !ok {
		return nil
	}
	r := d.rangeOf(o.start, o.end)
	return &r
}

var (
	idName       = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
	templateName = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$`)
	plainName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// rename changes every occurrence of the id under the cursor.
func (s *server) rename(d *document, p Position, newName string) (any, *rpcError) {
	if d.stale {
		return nil, &rpcError{codeInvalidRequest, "the document does not read as YAML; fix it first"}
	}
	o, ok := d.idx.at(d.t.offset(p))
	if !ok {
		return nil, &rpcError{codeInvalidRequest, "no id here to rename"}
	}
	valid := idName.MatchString(newName)
	if o.kind == kTemplate {
		valid = templateName.MatchString(newName)
	}
	for _, r := range d.idx.all(o.kind, o.name) {
		if r.def || !strings.Contains(d.t.src[max(0, r.start-9):r.start], ".") {
			continue
		}
		// Read in an expression or template as a field: no dashes.
		valid = valid && plainName.MatchString(newName)
	}
	if !valid {
		return nil, &rpcError{codeInvalidParams, fmt.Sprintf("%q is not a name a %s can have", newName, o.kind)}
	}
	var edits []textEdit
	for _, r := range d.idx.all(o.kind, o.name) {
		edits = append(edits, textEdit{d.rangeOf(r.start, r.end), newName})
	}
	return map[string]any{"changes": map[string][]textEdit{d.uri: edits}}, nil
}

// didYouMean finds the suggestion a message ends with.
var didYouMean = regexp.MustCompile(`\(did you mean ("(?:[^"\\]|\\.)*")\?\)`)

// codeActions offer, for each diagnostic that suggests a near name, its
// replacement.
func codeActions(d *document, ds []Diagnostic) []any {
	out := []any{}
	for _, diag := range ds {
		m := didYouMean.FindStringSubmatch(diag.Message)
		if m == nil {
			continue
		}
		near, err := strconv.Unquote(m[1])
		if err != nil {
			continue
		}
		r := diag.Range
		a, b := d.t.offset(r.Start), d.t.offset(r.End)
		if a < b && (d.t.src[a] == '"' || d.t.src[a] == '\'') {
			near = d.t.src[a:a+1] + near + d.t.src[a:a+1]
		}
		out = append(out, map[string]any{
			"title": "Change to " + near, "kind": "quickfix", "diagnostics": []Diagnostic{diag}, "isPreferred": true,
			"edit": map[string]any{"changes": map[string][]textEdit{d.uri: {{r, near}}}},
		})
	}
	return out
}
