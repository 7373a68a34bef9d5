package spec_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/debate-runner/runner/spec/draw"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/templates"
	"github.com/expr-lang/expr/parser"
)

// FuzzLoad feeds arbitrary text to the loader. Whatever the input, the loader
// must return (never panic or hang), every diagnostic must name a place that
// exists, and a spec without errors must yield a plan.
func FuzzLoad(f *testing.F) {
	var seeds []string
	for _, pattern := range []string{"../examples/*/spec.yaml", "../nodes/*/example.yaml", "testdata/invalid/*.yaml", "testdata/graph/*.yaml"} {
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
		// The same spec with Windows line endings and a byte order mark.
		f.Add(append([]byte("\ufeff"), bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n"))...))
	}
	for _, s := range loadSeeds {
		f.Add([]byte(s))
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
			_ = draw.Mermaid(plan)
			_ = draw.Dot(plan)
		}
	})
}

// loadSeeds are small specs that reach the checks a broken spec seldom
// gets to by chance: typed expressions over outputs, template checks, run
// order, numbers at their limits, tags, merges and aliases.
var loadSeeds = []string{
	"version: 1\nname: n\nvars: {a: .inf, b: -.nan, c: 99999999999999999999, d: 0x7fffffffffffffffff, e: 1e19, f: !!int 3, g: !!float 1}\nagents: {a: {}}\nnodes: {n: {kind: ask, agents: [a], template: t/x, max_tool_calls: 2147483648}}\nflow: [{loop: {max: vars.c, do: [n]}}]\ntemplates: {define: {t/x: hi}}\n",
	"version: 1\nname: n\nbase: &b {kind: ask, agents: [a]}\nagents: {a: {}}\nnodes: {n: {<<: *b, template: !include x}, m: {<<: [*b, 1], template: t/x}}\nflow: [n, m]\ntemplates: {define: {t/x: !!binary aGk=}}\n",
	"version: 1\nname: n\nagents: {a: {}, b: {}}\ntemplates:\n  define:\n    t/x: '{{template \"t/y\" .}}{{range .Turn}}{{end}}{{len 1 2}}{{.Nodes.m.output}}'\n    t/y: '{{template \"t/x\" .}}'\nnodes:\n  n: {kind: converse, agents: [a, b], message: {template: t/x}, speaker: {expr: 'turn % 2 == 0 ? \"a\" : 3'}, until: nodes.m.output.score + 1, watch: [{every: 1, node: m}]}\n  m: {kind: ask, agents: [a], template: t/x, output: {format: json, schema: {type: object, properties: {score: {type: integer}}}}}\nflow: [{if: nodes.m.output.score > 3, then: [n]}, {foreach: {in: 3, do: [m]}}]\noutputs: {x: nodes.m.output.scor}\n",
	"version: 1\nname: n\nagents: {a: {}}\ntemplates: {define: {t/x: hi}}\nnodes:\n  v: {kind: compute, set: {m: 'mode([1, 2])', c: nodes.v.output.m + 1}}\n  n: {kind: ask, agents: [a], template: t/x, output: {format: regex, pattern: '(?P<x>\\d+)'}}\nflow: [n, {loop: {max: 3, until: nodes.v.output.c > nodes.n.output.x, do: [v]}}]\n",
	"version: 1\nname: n\nagents: &a {a: *a}\nnodes: *nope\n",
	"version: 1\nname: n\ntemplates:\n  define:\n    t/x: |\n      line\n\tTab\n",
}

var yamlLineBreak = regexp.MustCompile("\r\n|[\r\n\u0085\u2028\u2029]")

// checkDiagnostics asserts the invariants every diagnostic keeps.
func checkDiagnostics(t *testing.T, path string, data []byte, diags syntax.Diagnostics) {
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
		if d.Severity != syntax.Error && d.Severity != syntax.Warning {
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
	{"node with a schema", idRe, func(id string) string {
		// Node ids name the compiled output schema's URL.
		return plain(fmt.Sprintf("nodes: {%s: {kind: ask, agents: [a], template: t/ask, output: {format: json, schema: {type: object, properties: {x: {type: integer}}}}}}\nflow: [%s]\noutputs: {o: %s}\n", q(id), q(id), q("nodes["+q(id)+"].output.x")))
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

	// The same name as the library's folder.
	folder := filepath.Join(dir, id)
	if err := os.Mkdir(folder, 0o755); err != nil {
		return
	}
	if err := os.WriteFile(filepath.Join(folder, "ask.tmpl"), []byte("Hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	src = idSpec("", "  use: ["+q(id)+"]\n", fmt.Sprintf("nodes: {n: {kind: ask, agents: [a], template: %s}}\nflow: [n]\n", q(id+"/ask")))
	plan, diags = spec.Compile(path, []byte(src), reg)
	checkDiagnostics(t, path, []byte(src), diags)
	if templates.Has(id) || id == "lib" {
		return // an embedded library, or the folder above: another test
	}
	if valid && diags.HasErrors() {
		t.Errorf("library folder %q refused:\n%s", id, diags.Error())
	}
	if !valid && plan != nil {
		t.Errorf("library folder %q accepted", id)
	}
}

// blockScalar writes text as the body of a YAML literal block scalar whose
// key is indented by indent spaces: any text YAML can hold survives as is.
func blockScalar(text string, indent int) string {
	pad := strings.Repeat(" ", indent+2)
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pad + l
		}
	}
	return "|2-\n" + strings.Join(lines, "\n") + "\n"
}

// templateSpec renders a template under test from every place a template
// is used: each kind's prompt, a conversation's notices and watchers, an
// agent's system prompt and the history summary.
func templateSpec(text string) string {
	return `version: 1
name: tmpl
history:
  summarize: {over_chars: 100, template: t/x}
agents:
  a: {name: Alice, system: t/x}
  b: {name: Bob}
templates:
  define:
    t/x: ` + blockScalar(text, 4) + `nodes:
  ask: {kind: ask, agents: [a, b], template: t/x}
  talk:
    kind: converse
    agents: [a, b]
    message: {template: t/x}
    until: turn > 2
    interject: [{every: 2, template: t/x}]
    watch: [{every: 2, node: judge, template: t/x}]
  judge: {kind: ask, agents: [b], template: t/x}
  clar: {kind: clarify, agents: [a], template: t/x}
flow: [clar, ask, talk]
`
}

// FuzzTemplate checks any template text the parser accepts (and any it
// refuses) against the data of every place a template is used: the
// checker must return, and its diagnostics name places in the spec.
func FuzzTemplate(f *testing.F) {
	libs, err := filepath.Glob("../templates/*/*.tmpl")
	if err != nil || len(libs) == 0 {
		f.Fatalf("no library templates found (%v)", err)
	}
	for _, p := range libs {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	for _, s := range []string{
		"{{.Agent.Name}} {{.Turn}} {{.Extra.x}} {{.Nodes.ask.Output}}",
		`{{define "t/y"}}{{template "t/x" .}}{{end}}{{template "t/y" .}}`,
		`{{range $i, $m := .History}}{{$m.From}}{{index $.Vars "k"}}{{end}}{{range .Turn}}{{.}}{{end}}`,
		`{{with .Inputs}}{{.q}}{{else}}{{len .}}{{end}}{{printf "%d" 1 2 | len}}{{join ", " 1}}`,
		`{{block "b" .}}{{.Agent}}{{end}}{{if and}}{{end}}{{template "nope"}}{{.Agent.Name.Foo}}`,
		"{{/* c */}}{{- .Round -}}\n{{$x := 1}}{{$x = .Agent}}{{$x.Name}}{{break}}",
	} {
		f.Add(s)
	}
	reg := nodes.Registry()
	path := filepath.Join(f.TempDir(), "tmpl.yaml")
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) || strings.ContainsAny(text, "\r\u0085\u2028\u2029") {
			return // line breaks YAML would change
		}
		if off, _ := disallowed(text); off >= 0 {
			return
		}
		src := templateSpec(text)
		_, diags := spec.Compile(path, []byte(src), reg)
		checkDiagnostics(t, path, []byte(src), diags)
	})
}

// disallowed finds a character YAML text cannot hold.
func disallowed(s string) (int, rune) {
	for i, c := range s {
		if c == '\t' || c == '\n' || c >= 0x20 && c <= 0x7e || c == 0x85 || c >= 0xa0 && c <= 0xd7ff || c >= 0xe000 && c <= 0xfffd || c >= 0x10000 {
			continue
		}
		return i, c
	}
	return -1, 0
}

// FuzzExpr puts any expression text in every place a spec takes one:
// compiling it must return, and a text the expression parser refuses must
// be an error.
func FuzzExpr(f *testing.F) {
	for _, s := range []string{
		"nodes.rate.output.confidence + 1", "nodes.rate?.output ?? 0", "vars.n * 2", "turn % 2 == 0 ? \"a\" : \"b\"",
		"all(participants, {.withdrawn})", "len(latest(\"answer\")) > 0", "mode(map(latest(\"answer\"), {.output}))",
		"let x = 1; x + vars.n", "goals", "inputs.q == \"\"", "verdicts.vote[0]", "1..3", "[1, 2][5]",
		"nodes.rate.outputs.a.score", "filter(transcript, {.From == \"a\"})", "{\"a\": 1}.a", "99999999999999999999999",
		"int(vars.f)", "round", "nodes", "nodes[vars.s].output", "-", "(", "\"\\u00", "1 /",
	} {
		f.Add(s)
	}
	reg := nodes.Registry()
	path := filepath.Join(f.TempDir(), "expr.yaml")
	f.Fuzz(func(t *testing.T, e string) {
		if !utf8.ValidString(e) {
			return
		}
		x := q(e)
		src := `version: 1
name: expr
vars: {n: 2, f: 1.5, s: rate}
inputs: {q: {default: ""}}
goals: [{id: g}]
verdicts: {vote: [YES, NO]}
agents: {a: {name: A}, b: {name: B}}
templates: {define: {t/x: hi}}
nodes:
  rate: {kind: ask, agents: [a, b], template: t/x, record: answer, output: {format: json, schema: {type: object, properties: {confidence: {type: integer}}}}}
  talk: {kind: converse, agents: [a, b], message: {template: t/x}, speaker: {expr: ` + x + `}, until: ` + x + `, verdict: {options: verdicts.vote, rules: [{check: ` + x + `, message: m}]}, interject: [{when: ` + x + `, template: t/x}]}
  calc: {kind: compute, value: ` + x + `}
flow:
  - rate
  - if: ` + x + `
    then: [talk]
  - loop: {max: ` + x + `, until: ` + x + `, do: [calc]}
  - foreach: {in: ` + x + `, do: [rate]}
outputs: {o: ` + x + `}
score: ` + x + `
`
		_, diags := spec.Compile(path, []byte(src), reg)
		checkDiagnostics(t, path, []byte(src), diags)
		if _, err := parser.Parse(e); err != nil && strings.TrimSpace(e) != "" && !diags.HasErrors() {
			t.Errorf("expression %q does not parse (%v) but validated", e, err)
		}
	})
}

// TestFuzzFixtures makes sure the fuzz targets' specs are valid around a
// harmless value, so that what they find is about the value under test.
func TestFuzzFixtures(t *testing.T) {
	reg := nodes.Registry()
	for name, src := range map[string]string{
		"template": templateSpec("Hi {{.Agent.Name}}\n  indented {{.Round}}\n\n"),
		"ids":      idSlots[0].spec("ok"),
	} {
		if _, diags := spec.Compile(name+".yaml", []byte(src), reg); diags.HasErrors() {
			t.Errorf("%s fixture is invalid:\n%s\n%s", name, diags.Format(), src)
		}
	}
}
