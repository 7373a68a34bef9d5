package lsp

import (
	"regexp"
	"sort"
	"strings"

	"github.com/debate-runner/runner/spec/syntax"
	"gopkg.in/yaml.v3"
)

// The kinds of ids a spec declares and refers to.
const (
	kAgent    = "agent"
	kModel    = "model"
	kEndpoint = "endpoint"
	kNode     = "node"
	kTemplate = "template"
	kInput    = "input"
	kVar      = "var"
	kVerdicts = "verdict set"
	kServer   = "MCP server"
	kGoal     = "goal"
	kRecord   = "record"
)

// topKinds are the top-level maps whose keys declare ids.
var topKinds = map[string]string{
	"agents": kAgent, "models": kModel, "endpoints": kEndpoint, "nodes": kNode,
	"inputs": kInput, "vars": kVar, "verdicts": kVerdicts, "mcp_servers": kServer,
}

// occ is one occurrence of an id in a document: its declaration or a
// reference, as the byte range of the name.
type occ struct {
	kind, name string
	start, end int
	def        bool
	// value is the declaration's value (nil for a reference).
	value *yaml.Node
	// key is the top-level key the declaration is under.
	key string
}

// index is what the server knows of a document's ids: every occurrence,
// in document order.
type index struct {
	occs []occ
}

// buildIndex reads the ids of src; ok is false when src is not YAML it
// can read.
func buildIndex(src string) (*index, bool) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return &index{}, false
	}
	b := &indexer{src: src, starts: specLineStarts(src)}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if kind, ok := topKinds[k.Value]; ok && v.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(v.Content); j += 2 {
				b.add(v.Content[j], kind, true, v.Content[j+1], k.Value)
			}
		}
		switch k.Value {
		case "templates":
			if d := mapGet(v, "define"); d != nil && d.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(d.Content); j += 2 {
					b.add(d.Content[j], kTemplate, true, d.Content[j+1], "templates")
				}
			}
		case "goals":
			if v.Kind == yaml.SequenceNode {
				for _, g := range v.Content {
					if id := mapGet(g, "id"); id != nil {
						b.add(id, kGoal, true, g, "goals")
					}
				}
			}
		case "flow":
			b.flow(v)
		case "budget":
			if ns := mapGet(v, "nodes"); ns != nil && ns.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(ns.Content); j += 2 {
					b.add(ns.Content[j], kNode, false, nil, "budget")
				}
			}
		}
		b.walk(k.Value, v, []string{k.Value})
	}
	b.scanText()
	b.replicas()
	sort.SliceStable(b.occs, func(i, j int) bool { return b.occs[i].start < b.occs[j].start })
	// A record is declared by its first record: in a node.
	seen := map[string]bool{}
	for i := range b.occs {
		o := &b.occs[i]
		if o.kind == kRecord && o.key == "nodes.record" && !seen[o.name] {
			seen[o.name], o.def = true, true
		}
	}
	return &index{occs: b.occs}, true
}

func posOf(n *yaml.Node) syntax.Pos { return syntax.Pos{Line: n.Line, Col: n.Column} }

// mapGet is a mapping's value of key, merges (<<: *anchor) followed.
func mapGet(n *yaml.Node, key string) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "<<" {
			if v := mapGet(n.Content[i+1], key); v != nil {
				return v
			}
		}
	}
	return nil
}

type indexer struct {
	src    string
	starts []int
	occs   []occ
}

// add records the scalar n as an occurrence, when the source at its
// position spells its value (a plain or quoted name without escapes).
func (b *indexer) add(n *yaml.Node, kind string, def bool, value *yaml.Node, key string) {
	if n == nil || n.Kind != yaml.ScalarNode || n.Value == "" || n.Line <= 0 {
		return
	}
	off := specOffset(b.src, b.starts, posOf(n))
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		off++
	}
	if !strings.HasPrefix(b.src[off:], n.Value) {
		return
	}
	b.occs = append(b.occs, occ{kind: kind, name: n.Value, start: off, end: off + len(n.Value), def: def, value: value, key: key})
}

// flow records the node ids a flow's steps run.
func (b *indexer) flow(v *yaml.Node) {
	if v == nil || v.Kind != yaml.SequenceNode {
		return
	}
	for _, s := range v.Content {
		switch s.Kind {
		case yaml.ScalarNode:
			b.add(s, kNode, false, nil, "flow")
		case yaml.MappingNode:
			for i := 0; i+1 < len(s.Content); i += 2 {
				switch s.Content[i].Value {
				case "then", "else", "do":
					b.flow(s.Content[i+1])
				case "loop", "foreach":
					b.flow(mapGet(s.Content[i+1], "do"))
				}
			}
		}
	}
}

// refKeys are the keys whose values (a name or a list of names) refer to
// ids, by the kind of id; models.X.model and the like are told apart by
// the top-level key they are under.
var refKeys = map[string]string{
	"agents": kAgent, "selector": kAgent, "model": kModel, "endpoint": kEndpoint,
	"template": kTemplate, "system": kTemplate, "closing": kTemplate,
	"record": kRecord, "carry_over": kRecord, "records": kRecord, "node": kNode,
}

// walk records the references of the mappings under a top-level key.
func (b *indexer) walk(top string, n *yaml.Node, path []string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if kind, ok := refKeys[k.Value]; ok && len(path) > 1 && refersHere(top, k.Value) {
				tag := top
				if top == "nodes" && len(path) == 2 && k.Value == "record" {
					tag = "nodes.record" // a node's own record: declares it
				}
				switch v.Kind {
				case yaml.ScalarNode:
					b.add(v, kind, false, nil, tag)
				case yaml.SequenceNode:
					for _, e := range v.Content {
						b.add(e, kind, false, nil, top)
					}
				}
			}
			b.walk(top, v, append(path, k.Value))
		}
	case yaml.SequenceNode:
		for _, e := range n.Content {
			b.walk(top, e, path)
		}
	}
}

// refersHere says whether key refers to an id under the top-level key
// top: a model's model: is the provider's model name, not an id.
func refersHere(top, key string) bool {
	switch top {
	case "models", "endpoints", "inputs", "vars", "outputs", "mcp_servers", "budget", "templates", "goals", "verdicts":
		return top == "models" && key == "endpoint"
	}
	return true
}

// textRefs are the references inside template and expression text.
var textRefs = []struct {
	re   *regexp.Regexp
	kind string
}{
	{regexp.MustCompile(`\.Inputs\.([A-Za-z_][A-Za-z0-9_]*)`), kInput},
	{regexp.MustCompile(`\binputs\.([A-Za-z_][A-Za-z0-9_]*)`), kInput},
	{regexp.MustCompile(`\.Vars\.([A-Za-z_][A-Za-z0-9_]*)`), kVar},
	{regexp.MustCompile(`\bvars\.([A-Za-z_][A-Za-z0-9_]*)`), kVar},
	{regexp.MustCompile(`\.Nodes\.([A-Za-z_][A-Za-z0-9_]*)`), kNode},
	{regexp.MustCompile(`\bnodes\.([A-Za-z_][A-Za-z0-9_]*)`), kNode},
	{regexp.MustCompile(`\bverdicts\.([A-Za-z_][A-Za-z0-9_]*)`), kVerdicts},
	{regexp.MustCompile(`\btemplate\s+\\?"([A-Za-z0-9_./-]+)\\?"`), kTemplate},
}

// scanText records the references the text of templates and expressions
// makes, found in the source itself (so their ranges are exact whatever
// the scalar's style); .Agent.Vars and goal.vars are not the spec's vars.
func (b *indexer) scanText() {
	for _, tr := range textRefs {
		for _, m := range tr.re.FindAllStringSubmatchIndex(b.src, -1) {
			pre := b.src[max(0, m[0]-6):m[0]]
			if tr.kind == kVar && (strings.HasSuffix(pre, ".Agent") || strings.HasSuffix(pre, "agent.") || strings.HasSuffix(pre, "goal.") || strings.HasSuffix(pre, ".Goal")) {
				continue
			}
			if m[0] > 0 && tr.kind != kTemplate && (b.src[m[0]-1] == '.' || isNameByte(b.src[m[0]-1]) && b.src[m[0]] != '.') {
				continue
			}
			b.occs = append(b.occs, occ{kind: tr.kind, name: b.src[m[2]:m[3]], start: m[2], end: m[3]})
		}
	}
}

// replicas reads a reference to agent X_N, where no agent of that name is
// declared and X is, as a use of X (a replica of a replicated agent).
func (b *indexer) replicas() {
	declared := map[string]bool{}
	for _, o := range b.occs {
		if o.def && o.kind == kAgent {
			declared[o.name] = true
		}
	}
	for i := range b.occs {
		o := &b.occs[i]
		if o.def || o.kind != kAgent || declared[o.name] {
			continue
		}
		if m := replicaName.FindStringSubmatch(o.name); m != nil && declared[m[1]] {
			o.name, o.end = m[1], o.start+len(m[1])
		}
	}
}

var replicaName = regexp.MustCompile(`^(.+)_[0-9]+$`)

// at is the occurrence whose name holds the offset (its end included).
func (x *index) at(off int) (occ, bool) {
	for _, o := range x.occs {
		if o.start <= off && off <= o.end {
			return o, true
		}
	}
	return occ{}, false
}

// def is the declaration of kind and name.
func (x *index) def(kind, name string) (occ, bool) {
	for _, o := range x.occs {
		if o.def && o.kind == kind && o.name == name {
			return o, true
		}
	}
	return occ{}, false
}

// all are the occurrences of kind and name, the declaration included.
func (x *index) all(kind, name string) []occ {
	var out []occ
	for _, o := range x.occs {
		if o.kind == kind && o.name == name {
			out = append(out, o)
		}
	}
	return out
}

// names are the declared names of a kind, in document order.
func (x *index) names(kind string) []occ {
	var out []occ
	for _, o := range x.occs {
		if o.def && o.kind == kind {
			out = append(out, o)
		}
	}
	return out
}
