package spec_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// FuzzLoad feeds arbitrary text to the loader. Whatever the input, the loader
// must return (never panic or hang), every diagnostic must name a place that
// exists, and a spec without errors must yield a plan.
func FuzzLoad(f *testing.F) {
	var seeds []string
	for _, pattern := range []string{"../examples/*/spec.yaml", "testdata/invalid/*.yaml", "testdata/graph/*.yaml"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, m...)
	}
	if len(seeds) == 0 {
		f.Fatal("no seed specs found")
	}
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	reg := nodes.Registry()
	// Specs resolve template folders relative to their own path; an empty
	// folder keeps fuzz inputs from reading the rest of the tree.
	path := filepath.Join(f.TempDir(), "fuzz.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		plan, diags := spec.Compile(path, data, reg)
		checkDiagnostics(t, path, data, diags)
		if diags.HasErrors() && plan != nil {
			t.Fatalf("plan returned despite errors:\n%s", diags.Error())
		}
		if !diags.HasErrors() && plan == nil {
			t.Fatalf("no errors but no plan (diagnostics: %q)", diags.Error())
		}
		if plan != nil {
			// A valid plan must draw without trouble.
			_ = spec.Mermaid(plan)
			_ = spec.Dot(plan)
		}
	})
}

var yamlLineBreak = regexp.MustCompile("\r\n|[\r\n\u0085\u2028\u2029]")

// checkDiagnostics asserts the invariants every diagnostic keeps.
func checkDiagnostics(t *testing.T, path string, data []byte, diags spec.Diagnostics) {
	t.Helper()
	// YAML counts CR, LF, CRLF, NEL, LS and PS as line breaks.
	lines := len(yamlLineBreak.Split(string(data), -1))
	for _, d := range diags {
		if d.Message == "" {
			t.Errorf("diagnostic without message: %+v", d)
		}
		if d.File == "" {
			t.Errorf("diagnostic without file: %+v", d)
		}
		if d.Pos.Line < 0 || d.Pos.Col < 0 {
			t.Errorf("negative position: %s", d)
		}
		if d.Pos.Line == 0 && d.Pos.Col != 0 {
			t.Errorf("column without line: %s", d)
		}
		if d.File == path && d.Pos.Line > lines {
			t.Errorf("line %d is past the end of the spec (%d lines): %s", d.Pos.Line, lines, d)
		}
		if d.Severity != spec.Error && d.Severity != spec.Warning {
			t.Errorf("unknown severity %d: %s", d.Severity, d)
		}
	}
}

// hostileIDs are names that could break a JSON pointer (/ ~ %), a URL (#
// ? %), a file name (/ .. NUL), a journal or call key (/ = #), a template
// error position (:), YAML, or a terminal.
var hostileIDs = []string{
	"ok_id", "a/b", "a~b", "a~1b", "a%2Fb", "100%", "rate#1", "a?b=c", "..", ".", "",
	"a:1:2", "a b", " a", "a\n", "a\x00b", "\t", "-a", "1a", "_", "a.b", "é", "a\u202eb",
	"{{.X}}", "a\"b", "a'b", "a`b", "a\\b", "*a", "&a", "!a", "<a>", "a,b", "[a]",
	"con", "a\u2028b", "\ufeffa", strings.Repeat("x", 300),
}

// idSlot is a place of a spec that takes a name, and the names it accepts.
type idSlot struct {
	name  string
	valid *regexp.Regexp // nil: any name is accepted
	spec  func(id string) string
}

func plain(rest string) string { return idSpec("", "", rest) }

var (
	idRe       = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)
	optionRe   = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	tmplNameRe = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$`)
	tagRe      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:-]*$`)
	computeRe  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// idSpec builds a valid spec around extra agents, templates and the rest
// (nodes and flow), where the name under test stands.
func idSpec(agents, defines, rest string) string {
	return "version: 1\nname: ids\nagents:\n  a: {name: Alice}\n  b: {name: Bob}\n" + agents +
		"templates:\n  define:\n    t/ask: \"Hi {{.Agent.Name}}\"\n    t/turn: \"Turn {{.Turn}}\"\n" + defines + rest
}

// q quotes a name as a YAML double-quoted scalar.
func q(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r >= 0x20 && r < 0x7f, r >= 0xa0 && r <= 0xd7ff && r != 0x2028 && r != 0x2029, r >= 0xe000 && r <= 0xfffd, r >= 0x10000:
			b.WriteRune(r)
		case r <= 0xffff:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			fmt.Fprintf(&b, "\\U%08x", r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

var idSlots = []idSlot{
	{"node", idRe, func(id string) string {
		return plain(fmt.Sprintf("nodes: {%s: {kind: ask, agents: [a], template: t/ask}}\nflow: [%s]\n", q(id), q(id)))
	}},
	{"agent", idRe, func(id string) string {
		return idSpec(fmt.Sprintf("  %s: {name: Carol}\n", q(id)), "", fmt.Sprintf("nodes: {n: {kind: ask, agents: [a, %s], template: t/ask}}\nflow: [n]\n", q(id)))
	}},
	{"goal", idRe, func(id string) string {
		return plain(fmt.Sprintf("goals: [{id: %s}]\nnodes: {n: {kind: ask, agents: [a], template: t/ask}}\nflow: [{foreach: {in: goals, do: [n]}}]\n", q(id)))
	}},
	{"record", idRe, func(id string) string {
		return plain(fmt.Sprintf("nodes:\n  n: {kind: ask, agents: [a, b], template: t/ask, record: %s}\n  m: {kind: ask, agents: [a, b], template: t/ask, each: {record: %s}}\nflow: [n, m]\n", q(id), q(id)))
	}},
	{"verdict set", idRe, func(id string) string {
		return plain(fmt.Sprintf("verdicts: {%s: [YES, NO]}\nnodes: {n: {kind: converse, agents: [a, b], message: {template: t/turn}, verdict: {options: %s}}}\nflow: [n]\n", q(id), q("verdicts."+id)))
	}},
	{"verdict option", optionRe, func(id string) string {
		return plain(fmt.Sprintf("verdicts: {v: [%s, NO]}\nnodes: {n: {kind: converse, agents: [a, b], message: {template: t/turn}, verdict: {options: verdicts.v}}}\nflow: [n]\n", q(id)))
	}},
	{"inline option", optionRe, func(id string) string {
		return plain(fmt.Sprintf("nodes: {n: {kind: converse, agents: [a, b], message: {template: t/turn}, verdict: {options: [%s, NO]}}}\nflow: [n]\n", q(id)))
	}},
	{"input", idRe, func(id string) string {
		return plain(fmt.Sprintf("inputs: {%s: {default: x}}\nnodes: {n: {kind: ask, agents: [a], template: t/ask}}\nflow: [n]\n", q(id)))
	}},
	{"var", idRe, func(id string) string {
		return plain(fmt.Sprintf("vars: {%s: 2}\nnodes: {n: {kind: ask, agents: [a], template: t/ask}}\nflow: [{loop: {max: %s, do: [n]}}]\n", q(id), q("vars["+q(id)+"]")))
	}},
	{"template", tmplNameRe, func(id string) string {
		return idSpec("", fmt.Sprintf("    %s: hi\n", q(id)), fmt.Sprintf("nodes: {n: {kind: ask, agents: [a], template: %s}}\nflow: [n]\n", q(id)))
	}},
	{"loop as", idRe, func(id string) string {
		return plain(fmt.Sprintf("nodes: {n: {kind: ask, agents: [a], template: t/ask}}\nflow: [{loop: {as: %s, max: 2, do: [n]}}]\n", q(id)))
	}},
	{"output", idRe, func(id string) string {
		return plain(fmt.Sprintf("nodes: {n: {kind: ask, agents: [a], template: t/ask}}\nflow: [n]\noutputs: {%s: nodes.n.text}\n", q(id)))
	}},
	{"compute set", computeRe, func(id string) string {
		return plain(fmt.Sprintf("nodes: {n: {kind: compute, set: {%s: \"1 + 1\"}}}\nflow: [n]\n", q(id)))
	}},
	{"endpoint and model", idRe, func(id string) string {
		return plain(fmt.Sprintf("endpoints: {%s: {base_url: \"http://127.0.0.1:1/v1\"}}\nmodels: {%s: {model: m, endpoint: %s}}\nnodes: {n: {kind: ask, agents: [a], template: t/ask, model: %s}}\nflow: [n]\n", q(id), q(id), q(id), q(id)))
	}},
	{"tag field", tagRe, func(id string) string {
		return plain(fmt.Sprintf("nodes: {n: {kind: ask, agents: [a], template: t/ask, output: {format: tags, fields: [%s]}}}\nflow: [n]\n", q(id)))
	}},
	{"schema property", nil, func(id string) string {
		return plain(fmt.Sprintf("nodes: {n: {kind: ask, agents: [a], template: t/ask, output: {format: json, schema: {type: object, properties: {%s: {type: integer}}, required: [%s]}}}}\nflow: [n]\noutputs: {x: nodes.n.output != nil}\n", q(id), q(id)))
	}},
	{"fallback key", nil, func(id string) string {
		return plain(fmt.Sprintf("nodes: {n: {kind: ask, agents: [a], template: t/ask, output: {format: json, fallback: {%s: 1}}}}\nflow: [n]\n", q(id)))
	}},
	{"unknown key", regexp.MustCompile(`^$.`), func(id string) string {
		// Never valid: the error must land on this key's line (11),
		// whatever the key does to JSON pointers.
		return plain(fmt.Sprintf("nodes:\n  n: {kind: ask, agents: [a], template: t/ask, %s: 1}\nflow: [n]\n", q(id)))
	}},
}

// fixtureNames are the names idSpec and the slots use themselves: a name
// under test equal to one of them may clash (an agent listed twice).
var fixtureNames = map[string]bool{"a": true, "b": true, "n": true, "m": true, "v": true, "x": true, "t/ask": true, "t/turn": true, "YES": true, "NO": true}

// FuzzIDs builds specs around hostile names in every place a spec takes
// one. Whatever the name, validation must return with sane diagnostics; a
// name the place accepts must validate, and any other must be an error.
func FuzzIDs(f *testing.F) {
	for _, id := range hostileIDs {
		f.Add(id)
	}
	reg := nodes.Registry()
	path := filepath.Join(f.TempDir(), "ids.yaml")
	f.Fuzz(func(t *testing.T, id string) {
		if !utf8.ValidString(id) {
			return // a spec is UTF-8 text
		}
		for _, slot := range idSlots {
			src := slot.spec(id)
			plan, diags := spec.Compile(path, []byte(src), reg)
			checkDiagnostics(t, path, []byte(src), diags)
			valid := slot.valid == nil || slot.valid.MatchString(id)
			if fixtureNames[id] && slot.valid != nil {
				valid = !diags.HasErrors() // a clash with the fixture: either way
			}
			switch {
			case valid && diags.HasErrors():
				t.Errorf("%s %q: valid name refused:\n%s", slot.name, id, diags.Error())
			case !valid && plan != nil:
				t.Errorf("%s %q: invalid name accepted", slot.name, id)
			}
			if slot.name == "unknown key" {
				onLine := false
				for _, d := range diags {
					onLine = onLine || d.Pos.Line == 11
				}
				if !onLine {
					t.Errorf("unknown key %q not reported on its line:\n%s", id, diags.Error())
				}
			}
		}
		checkLibraryFileName(t, reg, id)
	})
}

// checkLibraryFileName puts a template and a schema file named after id
// in a template folder: a name that cannot be a template's is an error at
// the use of the folder, never a panic or a garbled position.
func checkLibraryFileName(t *testing.T, reg *spec.Registry, id string) {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, "/\x00\\") || len(id) > 200 {
		return // not a file name on any system
	}
	dir := t.TempDir()
	lib := filepath.Join(dir, "lib")
	if err := os.Mkdir(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lib, id+".tmpl"), []byte("Hi {{.Agent.Name}}"), 0o644); err != nil {
		return // the file system refuses the name
	}
	if err := os.WriteFile(filepath.Join(lib, id+".schema.json"), []byte(`{"type": "object"}`), 0o644); err != nil {
		return
	}
	src := idSpec("", "  use: [lib]\n", fmt.Sprintf("nodes: {n: {kind: ask, agents: [a], template: %s, output: {format: json, schema_ref: %s}}}\nflow: [n]\n", q("lib/"+id), q("lib/"+id)))
	path := filepath.Join(dir, "spec.yaml")
	plan, diags := spec.Compile(path, []byte(src), reg)
	checkDiagnostics(t, path, []byte(src), diags)
	valid := regexp.MustCompile(`^[A-Za-z0-9_.-]+$`).MatchString(id)
	if valid && diags.HasErrors() {
		t.Errorf("library file %q refused:\n%s", id, diags.Error())
	}
	if !valid && plan != nil {
		t.Errorf("library file %q accepted", id)
	}
}
