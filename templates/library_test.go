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
	want := []string{"chain-of-debate", "reasoning", "software-design"}
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
			"solution.schema.json", "summarize.tmpl", "synthesize.tmpl", "system.tmpl",
		},
		"chain-of-debate": {
			"demand.tmpl", "force.tmpl", "insist.tmpl", "message.tmpl", "moderate.tmpl", "remind.tmpl",
			"subject.tmpl", "system.tmpl", "undecided.tmpl", "verdicts.yaml", "watch.tmpl",
		},
		"reasoning": {"answer.schema.json", "answer.tmpl"},
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

// librarySpec is a spec that names every template and schema of a library
// from a node of its own, so that the loader parses and field-checks each
// one (including the templates they include) against PromptData and the
// inputs the libraries document.
func librarySpec(lib string, tmpls, schemas []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nname: check-%s\n", lib)
	b.WriteString("inputs:\n  problem: {required: true}\n  context: {default: \"\"}\n  question: {required: true}\n  run: {required: true}\n")
	fmt.Fprintf(&b, "templates: {use: [%s]}\n", lib)
	b.WriteString("agents:\n  a: {name: A, role: architect}\n  b: {name: B, role: security}\n")
	b.WriteString("nodes:\n")
	var ids []string
	for i, name := range tmpls {
		id := fmt.Sprintf("t%d", i)
		ids = append(ids, id)
		fmt.Fprintf(&b, "  %s: {kind: ask, agents: [a, b], template: %s}\n", id, name)
	}
	for i, name := range schemas {
		id := fmt.Sprintf("s%d", i)
		ids = append(ids, id)
		fmt.Fprintf(&b, "  %s: {kind: ask, agents: [a], template: %s, output: {format: json, schema_ref: %s}}\n", id, tmpls[0], name)
	}
	fmt.Fprintf(&b, "flow: [%s]\n", strings.Join(ids, ", "))
	return b.String()
}

func TestEveryLibraryTemplateChecks(t *testing.T) {
	for _, lib := range templates.Libraries() {
		t.Run(lib, func(t *testing.T) {
			tmpls, schemas := libraryFiles(t, lib)
			if len(tmpls) == 0 {
				t.Fatalf("library %s has no templates", lib)
			}
			src := librarySpec(lib, tmpls, schemas)
			plan, diags := spec.Compile("check.yaml", []byte(src), nodes.Registry())
			if len(diags) > 0 {
				t.Fatalf("library %s does not check cleanly:\n%s\nspec:\n%s", lib, diags.Format(), src)
			}
			for _, name := range schemas {
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
