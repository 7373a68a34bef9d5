package lsp

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/validate"
	"github.com/debate-runner/runner/schemas"
	"github.com/debate-runner/runner/spec"
)

// example is an example spec the compiler accepts, with its plan: the
// oracle of the tests below.
type example struct {
	path, uri, src string
	plan           *spec.Plan
}

// examples compiles the examples once for every test that asks.
func examples(t *testing.T) []example {
	t.Helper()
	examplesOnce.Do(func() { examplesList, examplesErr = compileExamples() })
	if examplesErr != nil {
		t.Fatal(examplesErr)
	}
	return examplesList
}

var (
	examplesOnce sync.Once
	examplesList []example
	examplesErr  error
)

func compileExamples() ([]example, error) {
	var out []example
	for _, pat := range []string{"../../examples/*/spec.yaml", "../../examples/protocols/*/spec.yaml"} {
		m, _ := filepath.Glob(pat)
		for _, f := range m {
			abs, _ := filepath.Abs(f)
			data, err := os.ReadFile(abs)
			if err != nil {
				return nil, err
			}
			plan, diags := spec.Compile(abs, data, nodes.Registry())
			if plan == nil {
				return nil, fmt.Errorf("%s does not compile: %s", f, diags.Format())
			}
			out = append(out, example{abs, fileURI(abs), string(data), plan})
		}
	}
	if len(out) < 20 {
		return nil, fmt.Errorf("found %d examples", len(out))
	}
	return out, nil
}

func docPos(uri string, p Position) map[string]any {
	return map[string]any{"textDocument": map[string]any{"uri": uri}, "position": p}
}

// textAt is the text a range of src covers.
func textAt(src string, r Range) string {
	tx := newText(src)
	return src[tx.offset(r.Start):tx.offset(r.End)]
}

// Over every example: the symbols list exactly the agents and nodes the
// compiler found (nodes with their kinds); from every place an id is used
// (find references), go to definition reaches its declaration and hover
// names it; every node step of the compiled flow is among its node's
// references.
func TestNavigationOnEveryExample(t *testing.T) {
	c := newClientWith(t, Options{Registry: nodes.Registry(), Debounce: time.Hour}) // no checks: none is needed
	for _, ex := range examples(t) {
		c.open(ex.uri, ex.src, 1)
		var syms []DocumentSymbol
		c.result("textDocument/documentSymbol", map[string]any{"textDocument": map[string]any{"uri": ex.uri}}, &syms)
		children := map[string][]DocumentSymbol{}
		for _, s := range syms {
			children[s.Name] = s.Children
		}
		var agents, nodeIDs []string
		for _, s := range children["agents"] {
			agents = append(agents, s.Name)
		}
		for _, s := range children["nodes"] {
			nodeIDs = append(nodeIDs, s.Name)
			if np := ex.plan.Nodes[s.Name]; np == nil || s.Detail != np.Kind {
				t.Errorf("%s: node symbol %s (%s) is not a node of the plan of that kind", ex.path, s.Name, s.Detail)
			}
		}
		if want := ex.plan.File.Agents.Names(); !slices.Equal(agents, want) {
			t.Errorf("%s: agent symbols %v, the spec declares %v", ex.path, agents, want)
		}
		if want := ex.plan.File.Nodes.Names(); !slices.Equal(nodeIDs, want) {
			t.Errorf("%s: node symbols %v, the spec declares %v", ex.path, nodeIDs, want)
		}
		refsOf := map[string][]Location{}
		for section, list := range children {
			if section == "outputs" || section == "flow" {
				continue
			}
			for _, s := range list {
				var refs []Location
				c.result("textDocument/references", map[string]any{"textDocument": map[string]any{"uri": ex.uri}, "position": s.SelectionRange.Start, "context": map[string]any{"includeDeclaration": true}}, &refs)
				if len(refs) == 0 {
					t.Errorf("%s: no references of %s %s, not even its declaration", ex.path, section, s.Name)
				}
				refsOf[section+"/"+s.Name] = refs
				for _, r := range refs {
					if got := textAt(ex.src, r.Range); got != s.Name {
						t.Errorf("%s: a reference of %s reads %q", ex.path, s.Name, got)
					}
					var defs []Location
					c.result("textDocument/definition", docPos(ex.uri, r.Range.Start), &defs)
					if len(defs) != 1 || defs[0].Range != s.SelectionRange {
						t.Errorf("%s: definition of %s at %+v is %+v, want its declaration %+v", ex.path, s.Name, r.Range.Start, defs, s.SelectionRange)
					}
					var h Hover
					c.result("textDocument/hover", docPos(ex.uri, r.Range.End), &h)
					if !strings.Contains(h.Contents.Value, "`"+s.Name+"`") {
						t.Errorf("%s: hover on %s says %q", ex.path, s.Name, h.Contents.Value)
					}
				}
			}
		}
		tx := newText(ex.src)
		starts := specLineStarts(ex.src)
		var walk func([]*spec.FlowStep)
		walk = func(steps []*spec.FlowStep) {
			for _, st := range steps {
				if st.Node != nil && st.Kind == spec.StepNode {
					p := tx.position(specOffset(ex.src, starts, st.Pos))
					found := false
					for _, r := range refsOf["nodes/"+st.Node.ID] {
						found = found || r.Range.Start == p
					}
					if !found {
						t.Errorf("%s: the flow's step %s at %d:%d is not among the node's references", ex.path, st.Node.ID, st.Pos.Line, st.Pos.Col)
					}
				}
				walk(st.Do)
				walk(st.Else)
			}
		}
		walk(ex.plan.Flow)
		c.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": ex.uri}})
	}
}

// nodeAskKeys are the keys of an ask node, read from the published schema.
func nodeAskKeys(t *testing.T) []string {
	var s struct {
		Defs map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"$defs"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schemas.Spec, &s); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range s.Defs["node_ask"].Properties {
		keys = append(keys, k)
	}
	return keys
}

func labels(items []CompletionItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Label)
	}
	return out
}

// In every example, a node being written gets, where a key goes, every
// key of its kind with its doc; after agents: [ every agent; after
// template: every template the plan has (the spec's and its libraries').
func TestCompletionOnEveryExample(t *testing.T) {
	c := newClientWith(t, Options{Registry: nodes.Registry(), noWalk: true})
	askKeys := nodeAskKeys(t)
	for _, ex := range examples(t) {
		i := strings.Index(ex.src, "\nnodes:\n")
		if i < 0 {
			t.Fatalf("%s: no nodes: line", ex.path)
		}
		i += len("\nnodes:\n")
		c.open(ex.uri, ex.src, 1)
		c.waitDiags(ex.uri, 1)
		var templates []string
		for _, tm := range ex.plan.Templates.Templates() {
			if _, ok := ex.plan.TemplateSources[tm.Name()]; ok {
				templates = append(templates, tm.Name())
			}
		}
		for v, tc := range []struct {
			line string
			want []string
			docs bool
		}{
			{"    agents: [", ex.plan.File.Agents.Names(), false},
			{"    template: ", templates, false},
			{"    ", askKeys, true},
		} {
			src := ex.src[:i] + "  zz_new:\n    kind: ask\n" + tc.line + "\n" + ex.src[i:]
			cur := i + len("  zz_new:\n    kind: ask\n") + len(tc.line)
			c.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": ex.uri, "version": v + 2}, "contentChanges": []any{map[string]any{"text": src}}})
			c.waitDiags(ex.uri, v+2)
			var items []CompletionItem
			c.result("textDocument/completion", docPos(ex.uri, at(src, cur)), &items)
			got := labels(items)
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("%s: completion at %q lacks %q (has %v)", ex.path, tc.line, w, got)
				}
			}
			for _, it := range items {
				if tc.docs && (it.Documentation == nil || it.Documentation.Value == "") {
					t.Errorf("%s: key %s has no doc", ex.path, it.Label)
				}
			}
		}
		c.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": ex.uri}})
	}
}

// A typo in any reference to an agent, node or template the spec
// declares, in every example, is an error underlining the word where the
// typo is, whose quick fix puts back the name. (References inside
// expression text are left out: the compiler places what it finds in a
// block scalar's expression at the scalar's start; see the report of
// issue 35.)
func TestTyposAreFixedInPlace(t *testing.T) {
	c := newClientWith(t, Options{Registry: nodes.Registry(), noWalk: true})
	rng := rand.New(rand.NewSource(35))
	tried := 0
	for _, ex := range examples(t) {
		idx, _ := buildIndex(ex.src)
		var refs []occ
		for _, o := range idx.occs {
			if !o.def && o.key != "" && (o.kind == kAgent || o.kind == kTemplate || o.kind == kNode) && len(o.name) > 3 && o.name == ex.src[o.start:o.end] && !isNameByte(ex.src[o.end]) {
				if _, declared := idx.def(o.kind, o.name); declared {
					refs = append(refs, o)
				}
			}
		}
		rng.Shuffle(len(refs), func(i, j int) { refs[i], refs[j] = refs[j], refs[i] })
		for _, o := range refs[:min(1, len(refs))] {
			typo := misspell(rng, o.name)
			if _, clash := idx.def(o.kind, typo); clash {
				continue
			}
			tried++
			src := ex.src[:o.start] + typo + ex.src[o.end:]
			r := Range{at(src, o.start), at(src, o.start+len(typo))}
			c.open(ex.uri, src, 1)
			diags := c.waitDiags(ex.uri, 1)
			var hit *Diagnostic
			for i := range diags {
				if diags[i].Range.Start == r.Start {
					hit = &diags[i]
				}
			}
			if hit == nil {
				t.Errorf("%s: %s %q misspelled %q at %+v: no diagnostic there; got %+v", ex.path, o.kind, o.name, typo, r.Start, diags)
				continue
			}
			if got := textAt(src, hit.Range); got != typo {
				t.Errorf("%s: the diagnostic of %q underlines %q", ex.path, typo, got)
			}
			var actions []struct {
				Edit struct {
					Changes map[string][]textEdit `json:"changes"`
				} `json:"edit"`
			}
			c.result("textDocument/codeAction", map[string]any{"textDocument": map[string]any{"uri": ex.uri}, "range": hit.Range, "context": map[string]any{"diagnostics": []Diagnostic{*hit}}}, &actions)
			if len(actions) == 0 {
				t.Errorf("%s: no quick fix for %q: %s", ex.path, typo, hit.Message)
			} else if fixed := applyEdits(t, src, actions[0].Edit.Changes[ex.uri]); fixed != ex.src {
				t.Errorf("%s: the quick fix for %q does not give back the spec: %+v", ex.path, typo, actions[0].Edit.Changes[ex.uri])
			}
		}
		c.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": ex.uri}})
	}
	if tried < 15 {
		t.Fatalf("only %d typos tried", tried)
	}
}

// misspell drops, doubles or swaps a letter of name.
func misspell(rng *rand.Rand, name string) string {
	i := rng.Intn(len(name) - 1)
	switch rng.Intn(3) {
	case 0:
		return name[:i] + name[i+1:]
	case 1:
		return name[:i] + name[i:i+1] + name[i:]
	}
	return name[:i] + name[i+1:i+2] + name[i:i+1] + name[i+2:]
}

// Renaming an agent, a node and a var (drawn at random) of every example
// gives a spec the compiler accepts, with the new name in place of every
// use. Ids that an
// expression also names as quoted text ("judge") are left out: rename
// does not read string literals.
func TestRenameKeepsEveryExampleValid(t *testing.T) {
	c := newClientWith(t, Options{Registry: nodes.Registry(), Debounce: time.Hour}) // no checks: none is needed
	renamed, skipped := 0, 0
	defer func() { t.Logf("renamed %d ids, left out %d named in quotes", renamed, skipped) }()
	rng := rand.New(rand.NewSource(35))
	for _, ex := range examples(t) {
		c.open(ex.uri, ex.src, 1)
		idx, _ := buildIndex(ex.src)
		var picked []occ
		for _, kind := range []string{kAgent, kNode, kVar} {
			if ds := idx.names(kind); len(ds) > 0 {
				picked = append(picked, ds[rng.Intn(len(ds))])
			}
		}
		for _, o := range picked {
			if quotedName(ex.src, o.name) {
				skipped++
				continue
			}
			renamed++
			var res struct {
				Changes map[string][]textEdit `json:"changes"`
			}
			c.result("textDocument/rename", map[string]any{"textDocument": map[string]any{"uri": ex.uri}, "position": at(ex.src, o.start), "newName": "zz_renamed"}, &res)
			src := applyEdits(t, ex.src, res.Changes[ex.uri])
			if strings.Contains(src, "zz_renamed") == false {
				t.Fatalf("%s: renaming %s changed nothing", ex.path, o.name)
			}
			diags, _ := validate.Compile(ex.path, []byte(src), validate.Options{Registry: nodes.Registry()})
			if diags.HasErrors() {
				t.Errorf("%s: after renaming %s %s: %s", ex.path, o.kind, o.name, diags.Errors().Format())
			}
		}
		c.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": ex.uri}})
	}
}

// quotedName says whether name, or a replica's name_N, is written in
// quotes in src.
func quotedName(src, name string) bool {
	return regexp.MustCompile(`["']` + regexp.QuoteMeta(name) + `(_[0-9]+)?["']`).MatchString(src)
}

func applyEdits(t *testing.T, src string, edits []textEdit) string {
	tx := newText(src)
	type span struct {
		a, b int
		s    string
	}
	var spans []span
	for _, e := range edits {
		spans = append(spans, span{tx.offset(e.Range.Start), tx.offset(e.Range.End), e.NewText})
	}
	slices.SortFunc(spans, func(x, y span) int { return y.a - x.a })
	for i, s := range spans {
		if i > 0 && s.b > spans[i-1].a {
			t.Fatalf("overlapping edits %+v", spans)
		}
		src = src[:s.a] + s.s + src[s.b:]
	}
	return src
}
