package templates_test

import (
	"fmt"
	"io/fs"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/templates"
)

func TestLibraries(t *testing.T) {
	want := []string{"chain-of-debate", "judge", "protocols", "reasoning", "software-design"}
	if got := templates.Libraries(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Libraries() = %v, want %v", got, want)
	}
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"software-design", true},
		{"chain-of-debate", true},
		{"reasoning", true},
		{"protocols", true},
		{"software-design/system.tmpl", false},
		{"no-such-library", false},
		{"", false},
	} {
		if got := templates.Has(tc.name); got != tc.want {
			t.Errorf("Has(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestLibraryContents pins the templates each library must ship, so a
// rename cannot silently break specs that name them.
func TestLibraryContents(t *testing.T) {
	want := map[string][]string{
		"software-design": {
			"clarifications.tmpl", "clarify.tmpl", "confidence.schema.json", "confidence.tmpl", "critique.tmpl",
			"evaluate.tmpl", "evaluation.schema.json", "extra-rules.tmpl", "judge-summary.tmpl", "problem.tmpl", "propose.tmpl", "refine.tmpl",
			"solution.schema.json", "summarize.tmpl", "synthesize-text.tmpl", "synthesize.tmpl", "system.tmpl",
			// The pieces both layouts share, and the cached layout.
			"role.tmpl", "how-to-work.tmpl", "shared-system.tmpl", "judged.tmpl",
			"clarify-task.tmpl", "propose-task.tmpl", "critique-task.tmpl", "refine-task.tmpl",
			"confidence-task.tmpl", "synthesize-task.tmpl", "synthesize-text-task.tmpl",
			"clarify-cached.tmpl", "propose-cached.tmpl", "critique-cached.tmpl", "refine-cached.tmpl",
			"confidence-cached.tmpl", "synthesize-cached.tmpl", "synthesize-text-cached.tmpl",
		},
		"chain-of-debate": {
			"demand.tmpl", "force.tmpl", "insist.tmpl", "message.tmpl", "moderate.tmpl", "remind.tmpl",
			"subject.tmpl", "system.tmpl", "undecided.tmpl", "verdicts.yaml", "watch.tmpl",
		},
		"reasoning": {"answer.schema.json", "answer.tmpl"},
		"judge":     {"grade.tmpl"},
		"protocols": {
			"ce-body.tmpl", "ce-final.tmpl", "ce-item.tmpl", "ce-summarize.tmpl", "ce-turn-final.tmpl", "ce-turn.tmpl",
			"cot.tmpl", "dce-summarize.tmpl", "dce-summarizer-system.tmpl", "dce-system.tmpl", "du-answer.tmpl", "er-aggregate-system.tmpl",
			"er-reason-system.tmpl", "gm-answer.tmpl", "gm-summary.tmpl", "mad-aff.tmpl", "mad-candidates.tmpl",
			"mad-final.tmpl", "mad-moderate.tmpl", "mad-moderator-system.tmpl", "mad-neg.tmpl", "mad-player-system.tmpl", "mcq.tmpl",
			"mp-system.tmpl", "name.tmpl", "rr-system.tmpl", "simple.tmpl", "spp.tmpl", "tm-angel.tmpl", "tm-debater-system.tmpl",
			"tm-devil.tmpl", "tm-judge-final.tmpl", "tm-judge-system.tmpl", "tm-judge.tmpl", "tm-side.tmpl",
		},
	}
	for lib, files := range want {
		entries, err := fs.ReadDir(templates.FS(), lib)
		if err != nil {
			t.Fatalf("reading library %s: %v", lib, err)
		}
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		sort.Strings(got)
		sort.Strings(files)
		if !reflect.DeepEqual(got, files) {
			t.Errorf("library %s holds %v, want %v", lib, got, files)
		}
	}
}

// libraryFiles lists a library's template and schema names (LIB/NAME).
func libraryFiles(t *testing.T, lib string) (tmpls, schemas []string) {
	t.Helper()
	entries, err := fs.ReadDir(templates.FS(), lib)
	if err != nil {
		t.Fatalf("reading library %s: %v", lib, err)
	}
	for _, e := range entries {
		switch n := e.Name(); {
		case strings.HasSuffix(n, ".tmpl"):
			tmpls = append(tmpls, lib+"/"+strings.TrimSuffix(n, ".tmpl"))
		case strings.HasSuffix(n, ".schema.json"):
			schemas = append(schemas, lib+"/"+strings.TrimSuffix(n, ".schema.json"))
		}
	}
	return tmpls, schemas
}

// templateUses are the ways a spec can render a template, one per kind of
// dot: as an ask prompt, a conversation turn, a clarify prompt, a watch
// notice, the history summary, or the prefix of a history turn (an ask
// node's history.prefix). Each gives the node (or history) lines of
// a spec that renders the template T.
var templateUses = []struct {
	name  string
	nodes string
	extra string
}{
	{"ask prompt", "  n: {kind: ask, agents: [a, b], template: T}\n", ""},
	{"conversation turn", "  n: {kind: converse, agents: [a, b], message: {template: T}, verdict: {options: [YES, NO]}}\n", ""},
	{"clarify prompt", "  n: {kind: clarify, agents: [a, b], template: T}\n  p: {kind: ask, agents: [a], template: software-design/propose}\n", ""},
	{"watch notice", "  n: {kind: converse, agents: [a, b], message: {template: chain-of-debate/message}, verdict: {options: [YES, NO]}, watch: [{every: 2, node: w, template: T}]}\n  w: {kind: converse, agents: [a, b], message: {template: chain-of-debate/moderate}, verdict: {options: [YES, NO]}}\n", ""},
	{"history summary", "  n: {kind: ask, agents: [a, b], template: software-design/propose}\n", "history: {summarize: {over_chars: 100, template: T}}\n"},
	{"history turn prefix", "  n: {kind: ask, agents: [a, b], template: software-design/propose, history: {prefix: T}}\n", ""},
	{"judged score", "  n: {kind: ask, agents: [a, b], template: software-design/propose}\n", "score: {judge: {template: T, levels: {bad: B, good: G}}}\n"},
}

// librarySpec is a spec that renders tmpl one way (a templateUse), so that
// the loader parses and type-checks it (and the templates it includes)
// against that dot and the inputs the libraries document.
func librarySpec(lib, tmpl string, use int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nname: check-%s\n", strings.ReplaceAll(lib, "/", "-"))
	b.WriteString("inputs:\n  problem: {required: true}\n  context: {default: \"\"}\n  question: {required: true}\n  run: {required: true}\n")
	fmt.Fprintf(&b, "templates: {use: [%s, software-design, chain-of-debate]}\n", lib)
	b.WriteString("goals: [{id: g, description: G}]\n")
	b.WriteString("agents:\n  a: {name: A, role: architect}\n  b: {name: B, role: security}\n")
	u := templateUses[use]
	b.WriteString(strings.ReplaceAll(u.extra, "T", tmpl))
	b.WriteString("nodes:\n")
	nodes := strings.ReplaceAll(u.nodes, "template: T", "template: "+tmpl)
	b.WriteString(strings.ReplaceAll(nodes, "prefix: T", "prefix: "+tmpl))
	if strings.Contains(u.nodes, "  p:") {
		b.WriteString("flow: [n, p]\n")
	} else {
		b.WriteString("flow: [{foreach: {in: goals, do: [n]}}]\n")
	}
	return b.String()
}

// TestEveryLibraryTemplateChecks: every template of every library
// type-checks cleanly as at least one of the things a spec renders, and
// every schema of a library loads as a node's output schema.
func TestEveryLibraryTemplateChecks(t *testing.T) {
	for _, lib := range templates.Libraries() {
		t.Run(lib, func(t *testing.T) {
			tmpls, schemas := libraryFiles(t, lib)
			if len(tmpls) == 0 {
				t.Fatalf("library %s has no templates", lib)
			}
			for _, tmpl := range tmpls {
				var tried []string
				ok := false
				for i, u := range templateUses {
					_, diags := spec.Compile("check.yaml", []byte(librarySpec(lib, tmpl, i)), nodes.Registry())
					if len(diags) == 0 {
						ok = true
						break
					}
					tried = append(tried, fmt.Sprintf("as a %s:\n%s", u.name, diags.Format()))
				}
				if !ok {
					t.Errorf("template %s checks cleanly as nothing a spec renders:\n%s", tmpl, strings.Join(tried, "\n"))
				}
			}
			for _, name := range schemas {
				src := fmt.Sprintf("version: 1\nname: s\ntemplates: {use: [%s]}\nagents: {a: {}}\nnodes: {n: {kind: ask, agents: [a], template: t/x, output: {format: json, schema_ref: %s}}}\nflow: [n]\n", lib, name)
				src = strings.Replace(src, "templates: {use: [", "templates: {define: {t/x: x}, use: [", 1)
				plan, diags := spec.Compile("check.yaml", []byte(src), nodes.Registry())
				if len(diags) > 0 {
					t.Errorf("schema %s does not load:\n%s", name, diags.Format())
					continue
				}
				if plan.Schemas[name] == nil {
					t.Errorf("schema %s was not loaded", name)
				}
			}
		})
	}
}

// TestCheckReachesIncludedTemplates shows the check above can fail: a broken
// override of a template that propose only includes is still reported, and
// a spec that forgets an input the library needs is told which one.
func TestCheckReachesIncludedTemplates(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{
			name: "broken extra-rules override",
			src: `version: 1
name: t
inputs: {problem: {required: true}, context: {default: ""}}
templates:
  use: [software-design]
  define:
    software-design/extra-rules: "{{.Agent.Nmae}}"
agents: {a: {role: architect}}
nodes: {p: {kind: ask, agents: [a], template: software-design/propose}}
flow: [p]
`,
			want: `no field "Nmae"`,
		},
		{
			name: "context input not declared",
			src: `version: 1
name: t
inputs: {problem: {required: true}}
templates: {use: [software-design]}
agents: {a: {role: architect}}
nodes: {p: {kind: ask, agents: [a], template: software-design/critique}}
flow: [p]
`,
			want: `no input named "context"`,
		},
		{
			name: "problem input not declared",
			src: `version: 1
name: t
inputs: {context: {default: ""}}
templates: {use: [software-design]}
agents: {a: {role: judge}}
nodes: {p: {kind: ask, agents: [a], template: software-design/synthesize}}
flow: [p]
`,
			want: `no input named "problem"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := spec.Compile("t.yaml", []byte(tc.src), nodes.Registry())
			if !diags.HasErrors() {
				t.Fatalf("expected an error containing %q, got none", tc.want)
			}
			if !strings.Contains(diags.Format(), tc.want) {
				t.Fatalf("expected an error containing %q, got:\n%s", tc.want, diags.Format())
			}
		})
	}
}
