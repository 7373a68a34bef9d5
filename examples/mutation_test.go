package examples

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/spectest"
	"github.com/debate-runner/runner/spec"
)

// The mutation test breaks every shipped example in known ways and checks
// that validate either refuses each mutant or that the mutant runs to
// completion against scripted replies (the example's own spec tests): a
// mutant validate accepts that then fails for a spec reason, or that sends
// "<no value>" or "%!d(...)" to a model, is a hole in validate.
//
// `go test ./examples -run TestMutants` runs a short subset (one node and
// the first spec test case per example); RUNNER_MUTANTS=all mutates every
// node of every example and runs every case (see docs/testing.md).

// mutant is one broken copy of a spec.
type mutant struct {
	family string
	what   string
	doc    *yaml.Node
}

// family mutates a spec's document in one way, once per place it applies
// (its node mapping, by node id); it returns false where it does not apply.
type family struct {
	name string
	// apply changes doc (a copy) for node id; false when it does not apply.
	apply func(doc *yaml.Node, node string) bool
	// once: the family applies to the spec as a whole, not per node.
	once bool
}

// wrapTemplate makes node's prompt template a new one that renders the
// original and then extra, so the mutation is checked with the node's own
// prompt data.
func wrapTemplate(extra string) func(doc *yaml.Node, node string) bool {
	return func(doc *yaml.Node, node string) bool {
		n := nodeMap(doc, node)
		tv := mapGet(n, "template")
		if tv == nil || tv.Kind != yaml.ScalarNode {
			return false
		}
		orig := tv.Value
		name := "mutant/" + node
		define := ensureMap(ensureMap(doc.Content[0], "templates"), "define")
		mapSet(define, name, fmt.Sprintf("{{template %q .}}\n%s", orig, extra))
		tv.Value = name
		return true
	}
}

// firstVar finds a var whose default has the given YAML tag (!!str,
// !!int, !!bool).
func firstVar(doc *yaml.Node, tag string) string {
	vars := mapGet(doc.Content[0], "vars")
	if vars == nil || vars.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(vars.Content); i += 2 {
		if v := vars.Content[i+1]; v.Kind == yaml.ScalarNode && v.ShortTag() == tag {
			return vars.Content[i].Value
		}
	}
	return ""
}

func withVar(tag, format string) func(doc *yaml.Node, node string) bool {
	return func(doc *yaml.Node, node string) bool {
		v := firstVar(doc, tag)
		if v == "" {
			return false
		}
		return wrapTemplate(fmt.Sprintf(format, v))(doc, node)
	}
}

func addOutput(expr string) func(doc *yaml.Node, node string) bool {
	return func(doc *yaml.Node, node string) bool {
		outs := ensureMap(doc.Content[0], "outputs")
		mapSet(outs, "mutant_output", expr)
		return true
	}
}

var families = []family{
	// type mismatches in templates
	{name: "tmpl-compare-int-text", apply: wrapTemplate(`{{if eq .Round "1"}}first{{end}}`)},
	{name: "tmpl-compare-var-text", apply: withVar("!!int", `{{if eq .Vars.%s "1"}}one{{end}}`)},
	{name: "tmpl-add-text", apply: wrapTemplate(`{{add .Agent.Name 1}}`)},
	{name: "tmpl-add-text-var", apply: withVar("!!str", `{{add .Vars.%s 1}}`)},
	{name: "tmpl-range-text", apply: wrapTemplate(`{{range .Agent.Name}}x{{end}}`)},
	{name: "tmpl-range-bool-var", apply: withVar("!!bool", `{{range .Vars.%s}}x{{end}}`)},
	{name: "tmpl-printf-d-text", apply: wrapTemplate(`{{printf "%d" .Agent.Name}}`)},
	{name: "tmpl-printf-d-var", apply: withVar("!!str", `{{printf "%%d" .Vars.%s}}`)},
	// out-of-scope and unknown fields
	{name: "tmpl-unknown-field", apply: wrapTemplate(`{{.Agent.Nmae}}`)},
	{name: "tmpl-unknown-var", apply: wrapTemplate(`{{.Vars.no_such_var}}`)},
	{name: "tmpl-unknown-input", apply: wrapTemplate(`{{.Inputs.no_such_input}}`)},
	{name: "tmpl-unknown-node", apply: wrapTemplate(`{{.Nodes.no_such_node.Output}}`)},
	{name: "tmpl-unknown-loop", apply: wrapTemplate(`{{.Loop.no_such_loop}}`)},
	{name: "tmpl-loop-round", apply: wrapTemplate(`{{.Loop.round}}`)},
	{name: "tmpl-item", apply: wrapTemplate(`{{.Item}}`)},
	{name: "tmpl-agent-var", apply: wrapTemplate(`{{.Agent.Vars.no_such_var}}`)},
	{name: "tmpl-goal-var", apply: wrapTemplate(`{{.Goal.Vars.no_such_var}}`)},
	{name: "tmpl-own-fields", apply: wrapTemplate(`{{.Own.Fields.no_such_field}}`)},
	// reads of nodes that may not have run
	{name: "flow-guarded-if-before-run", once: true, apply: wrapFirstStep(func(first *yaml.Node, last string) *yaml.Node {
		return mapping("if", "nodes."+last+".output ?? true", "then", seq(first))
	})},
	{name: "flow-foreach-empty", once: true, apply: wrapFirstStep(func(first *yaml.Node, last string) *yaml.Node {
		return mapping("foreach", mapping("in", "[]", "do", seq(first)))
	})},
	{name: "tmpl-index-missing", apply: wrapTemplate(`{{index .Inputs "no_such_input"}}`)},
	// a control: a valid change, so "ran" is seen to count
	{name: "control-valid", apply: wrapTemplate(`{{if eq .Round 1}}(first round){{end}}`)},
	{name: "tmpl-field-of-text", apply: wrapTemplate(`{{.Agent.Name.Length}}`)},
	{name: "tmpl-undefined-template", apply: wrapTemplate(`{{template "no/such/template" .}}`)},
	// families of the broken-spec goldens (spec/testdata/invalid)
	{name: "golden-unknown-agent", apply: func(doc *yaml.Node, node string) bool {
		ag := mapGet(nodeMap(doc, node), "agents")
		if ag == nil || ag.Kind != yaml.SequenceNode || len(ag.Content) == 0 {
			return false
		}
		ag.Content[0].Value = "no_such_agent"
		return true
	}},
	{name: "golden-unknown-template", apply: func(doc *yaml.Node, node string) bool {
		tv := mapGet(nodeMap(doc, node), "template")
		if tv == nil || tv.Kind != yaml.ScalarNode {
			return false
		}
		tv.Value = "no/such/template"
		return true
	}},
	{name: "golden-unknown-kind", apply: func(doc *yaml.Node, node string) bool {
		k := mapGet(nodeMap(doc, node), "kind")
		if k == nil {
			return false
		}
		k.Value = "no_such_kind"
		return true
	}},
	{name: "golden-expr-type-mismatch", once: true, apply: addOutput(`'"text" * 2'`)},
	{name: "golden-expr-unknown-name", once: true, apply: addOutput(`no_such_name.output`)},
	{name: "golden-expr-syntax", once: true, apply: addOutput(`(1 +`)},
	{name: "golden-expr-unknown-node", once: true, apply: addOutput(`nodes.no_such_node.output`)},
	{name: "golden-divide-by-zero", once: true, apply: addOutput(`1 / 0`)},
}

func nodeMap(doc *yaml.Node, id string) *yaml.Node {
	return mapGet(mapGet(doc.Content[0], "nodes"), id)
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

func ensureMap(m *yaml.Node, key string) *yaml.Node {
	if v := mapGet(m, key); v != nil && v.Kind == yaml.MappingNode {
		v.Style = 0 // block style, so added keys read well
		return v
	}
	v := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
	return v
}

func mapSet(m *yaml.Node, key, value string) {
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key},
		&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value})
	if strings.HasPrefix(value, "'") {
		// an expression written quoted: keep it a YAML string
		last := m.Content[len(m.Content)-1]
		last.Value = strings.Trim(value, "'")
		last.Style = yaml.SingleQuotedStyle
	}
}

func nodeIDs(doc *yaml.Node) []string {
	ns := mapGet(doc.Content[0], "nodes")
	if ns == nil || ns.Kind != yaml.MappingNode {
		return nil
	}
	var ids []string
	for i := 0; i+1 < len(ns.Content); i += 2 {
		ids = append(ids, ns.Content[i].Value)
	}
	return ids
}

func cloneNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, x := range n.Content {
		c.Content[i] = cloneNode(x)
	}
	return &c
}

// mutants lists the mutants of a spec: every family at every node (all),
// or at the first node it applies to.
func mutants(doc *yaml.Node, all bool) []mutant {
	var out []mutant
	for _, f := range families {
		if f.once {
			d := cloneNode(doc)
			if f.apply(d, "") {
				out = append(out, mutant{family: f.name, what: "outputs", doc: d})
			}
			continue
		}
		for _, id := range nodeIDs(doc) {
			d := cloneNode(doc)
			if !f.apply(d, id) {
				continue
			}
			out = append(out, mutant{family: f.name, what: "node " + id, doc: d})
			if !all {
				break
			}
		}
	}
	return out
}

// copyTree copies the examples folder, so mutants sit where their
// originals do and find the same libraries and data files.
func copyTree(t *testing.T, dst string) {
	t.Helper()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, p)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if strings.HasSuffix(p, ".go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

type mutantCounts struct{ refused, ran, failed int }

func TestMutants(t *testing.T) {
	all := os.Getenv("RUNNER_MUTANTS") == "all"
	root := t.TempDir()
	copyTree(t, root)
	specs, _ := filepath.Glob(filepath.Join(root, "*", "spec.yaml"))
	more, _ := filepath.Glob(filepath.Join(root, "protocols", "*", "spec.yaml"))
	specs = append(specs, more...)
	if len(specs) < 15 {
		t.Fatalf("found %d example specs, expected every shipped example", len(specs))
	}
	counts := map[string]*mutantCounts{}
	for _, f := range families {
		counts[f.name] = &mutantCounts{}
	}
	reg := nodes.Registry()
	for _, path := range specs {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		if raceDetector && !all {
			if id, turns := longThread(&doc); id != "" {
				t.Logf("%s: not mutated under the race detector: every mutant's path check walks converse node %q to its %d turns (about 8 s each there); RUNNER_MUTANTS=all, go test without -race and the differential fuzzer (internal/difffuzz) mutate it", path, id, turns)
				continue
			}
		}
		testData, err := os.ReadFile(strings.TrimSuffix(path, ".yaml") + ".test.yaml")
		if err != nil {
			t.Fatalf("%s has no spec tests to script the mutants' replies: %v", path, err)
		}
		var testDoc yaml.Node
		if err := yaml.Unmarshal(testData, &testDoc); err != nil {
			t.Fatal(err)
		}
		if !all {
			if cases := mapGet(testDoc.Content[0], "cases"); cases != nil && len(cases.Content) > 1 {
				cases.Content = cases.Content[:1]
			}
		}
		// A mutant may make calls its original does not (a branch now
		// taken): those get stand-in replies rather than failing a strict
		// case, which would be no fault of validate's.
		if cases := mapGet(testDoc.Content[0], "cases"); cases != nil {
			for _, c := range cases.Content {
				if st := mapGet(c, "strict"); st != nil {
					st.Value, st.Tag = "false", "!!bool"
				}
				// and no prompt may hold what a bad render leaves
				ensureSeq(c, "expect").Content = append(ensureSeq(c, "expect").Content,
					&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: badRenderCheck})
			}
		}
		// A spec test file names its spec; the mutant's is written beside.
		if s := mapGet(testDoc.Content[0], "spec"); s != nil {
			t.Fatalf("%s names its spec; the mutation test expects spec.test.yaml beside spec.yaml", path)
		}
		testOut, err := yaml.Marshal(&testDoc)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Dir(path)
		rel, _ := filepath.Rel(root, path)
		// Some cases test a run that fails (a reply that never parses):
		// a mutant's run failing there is no hole. Run the original first.
		opath := filepath.Join(dir, "original"+spectest.Suffix)
		if err := os.WriteFile(opath, append([]byte("spec: spec.yaml\n"), testOut...), 0o644); err != nil {
			t.Fatal(err)
		}
		originalFails := map[string]bool{}
		for _, f := range spectest.Run(context.Background(), []string{opath}, spectest.Options{Registry: reg, Parallel: 1}) {
			if f.Err != nil {
				t.Fatalf("%s: its spec tests do not run: %v", rel, f.Err)
			}
			for _, c := range f.Cases {
				originalFails[c.Name] = c.Status == "failed"
			}
		}
		for i, m := range mutants(&doc, all) {
			out, err := yaml.Marshal(m.doc)
			if err != nil {
				t.Fatal(err)
			}
			mpath := filepath.Join(dir, fmt.Sprintf("mutant%d.yaml", i))
			if err := os.WriteFile(mpath, out, 0o644); err != nil {
				t.Fatal(err)
			}
			c := counts[m.family]
			_, diags := spec.Load(mpath, reg)
			if diags.HasErrors() {
				c.refused++
				for _, d := range diags.Errors() {
					if d.Pos.Line == 0 {
						t.Errorf("%s %s (%s): refusal without a position: %s", rel, m.family, m.what, d.Message)
					}
				}
				continue
			}
			tpath := strings.TrimSuffix(mpath, ".yaml") + spectest.Suffix
			if err := os.WriteFile(tpath, testOut, 0o644); err != nil {
				t.Fatal(err)
			}
			runs := filepath.Join(dir, fmt.Sprintf("mutant%d.runs", i))
			res := spectest.Run(context.Background(), []string{tpath}, spectest.Options{Registry: reg, Parallel: 1, RunsDir: runs})
			why := mutantFailure(res, runs, originalFails)
			if why == "" {
				c.ran++
				continue
			}
			c.failed++
			t.Errorf("%s %s (%s): validate accepted the mutant, then %s", rel, m.family, m.what, why)
		}
	}
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	sort.Strings(names)
	var total mutantCounts
	for _, n := range names {
		c := counts[n]
		t.Logf("%-28s refused %3d  ran %3d  accepted-then-failed %3d", n, c.refused, c.ran, c.failed)
		total.refused += c.refused
		total.ran += c.ran
		total.failed += c.failed
	}
	t.Logf("%-28s refused %3d  ran %3d  accepted-then-failed %3d", "all", total.refused, total.ran, total.failed)
}

// mutantFailure says why an accepted mutant's runs are a hole in validate:
// a run that failed, or a prompt with "<no value>" or a printf error in it.
// "" when every run finished (its expectations may fail: the mutant
// changed what the spec does).
func mutantFailure(res []spectest.FileResult, runs string, originalFails map[string]bool) string {
	for _, f := range res {
		if f.Err != nil {
			return "its spec tests could not run: " + f.Err.Error()
		}
		for _, c := range f.Cases {
			for _, fl := range c.Failures {
				if strings.Contains(fl.Message, badRenderCheck) {
					return fmt.Sprintf("case %q sent a prompt with <no value> or %%!verb in it", c.Name)
				}
			}
			if c.Status == "failed" && !originalFails[c.Name] {
				msg := ""
				for _, fl := range c.Failures {
					msg += "; " + fl.Message
				}
				return fmt.Sprintf("case %q failed at run time%s", c.Name, msg)
			}
		}
	}
	var bad string
	_ = filepath.WalkDir(runs, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || bad != "" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, s := range []string{"<no value>", "%!"} {
			if strings.Contains(string(data), s) {
				bad = fmt.Sprintf("%s in %s", s, filepath.Base(p))
			}
		}
		return nil
	})
	if bad != "" {
		return "a run wrote " + bad
	}
	return ""
}

// wrapFirstStep replaces the flow's first step with what wrap makes of it;
// last is the id of the last node declared.
func wrapFirstStep(wrap func(first *yaml.Node, last string) *yaml.Node) func(doc *yaml.Node, node string) bool {
	return func(doc *yaml.Node, _ string) bool {
		flow := mapGet(doc.Content[0], "flow")
		ids := nodeIDs(doc)
		if flow == nil || flow.Kind != yaml.SequenceNode || len(flow.Content) == 0 || len(ids) == 0 {
			return false
		}
		flow.Style = 0
		flow.Content[0] = wrap(flow.Content[0], ids[len(ids)-1])
		return true
	}
}

// mapping builds a YAML mapping of key, value pairs (a value is a string
// or a node).
func mapping(kv ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: kv[i].(string)})
		switch v := kv[i+1].(type) {
		case string:
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v})
		case *yaml.Node:
			m.Content = append(m.Content, v)
		}
	}
	return m
}

func seq(items ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: items}
}

// badRenderCheck is the expectation added to every case of a mutant: what
// a template leaves in a prompt when it renders a missing value or a
// printf verb given the wrong kind of value.
const badRenderCheck = `none(calls, .prompt contains "<no value>" || .system contains "<no value>" || .prompt contains "%!" || .system contains "%!")`

func ensureSeq(m *yaml.Node, key string) *yaml.Node {
	if v := mapGet(m, key); v != nil && v.Kind == yaml.SequenceNode {
		return v
	}
	v := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
	return v
}

// longThread names a converse node of doc that may take more than 20
// turns, and its max_turns.
func longThread(doc *yaml.Node) (string, int) {
	nodes := mapGet(doc.Content[0], "nodes")
	if nodes == nil {
		return "", 0
	}
	for i := 0; i+1 < len(nodes.Content); i += 2 {
		n := nodes.Content[i+1]
		if k := mapGet(n, "kind"); k == nil || k.Value != "converse" {
			continue
		}
		if m := mapGet(n, "max_turns"); m != nil {
			if turns, err := strconv.Atoi(m.Value); err == nil && turns > 20 {
				return nodes.Content[i].Value, turns
			}
		}
	}
	return "", 0
}
