package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/debate-runner/runner/docs"
	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/schemas"
)

// The tests in this file drive the CLI in-process through run() (see invoke
// in run_test.go), except TestBinary, which builds and runs the real binary
// to check that exit codes survive os.Exit.

const reasoningSpec = "../../examples/reasoning-debate/spec.yaml"

// commandNames lists the subcommands as kong sees them, so a command added
// to the cli struct is covered by the help tests without editing them.
func commandNames(t *testing.T) []string {
	t.Helper()
	parser, err := kong.New(&cli{}, kong.Name("runner"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range parser.Model.Children {
		names = append(names, c.Name)
	}
	if len(names) == 0 {
		t.Fatal("the CLI has no commands")
	}
	return names
}

// exampleSpecs returns every examples/*/spec.yaml.
func exampleSpecs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../examples/*/spec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no examples found")
	}
	return files
}

// writeSpecFile writes a spec into a fresh temporary directory.
func writeSpecFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// examplesSection matches an "Examples:" heading followed by at least one
// indented runner command.
var examplesSection = regexp.MustCompile(`(?m)^Examples:\n(\s*\n)*\s+runner( |$)`)

func TestHelp(t *testing.T) {
	cmds := commandNames(t)
	cases := [][]string{nil, {"--help"}, {"-h"}}
	for _, c := range cmds {
		cases = append(cases, []string{c, "--help"}, []string{"--help", c})
	}
	for _, args := range cases {
		t.Run(strings.Join(append([]string{"runner"}, args...), " "), func(t *testing.T) {
			code, stdout, stderr := invoke(t, nil, args...)
			if code != exitcode.OK {
				t.Fatalf("exit %d, want 0\nstderr:\n%s", code, stderr)
			}
			if !strings.Contains(stdout, "Usage: runner") {
				t.Errorf("no usage line in stdout:\n%s", stdout)
			}
			if !examplesSection.MatchString(stdout) {
				t.Errorf("no Examples: section with a runner command in stdout:\n%s", stdout)
			}
			if len(args) <= 1 {
				// The top-level help lists every command.
				for _, c := range cmds {
					if !regexp.MustCompile(`(?m)^\s+` + c + `\s`).MatchString(stdout) {
						t.Errorf("top-level help does not list %q:\n%s", c, stdout)
					}
				}
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"unknown command", []string{"bogus"}, "bogus"},
		{"unknown top-level flag", []string{"--bogus"}, "--bogus"},
		{"unknown command flag", []string{"validate", "--bogus", reasoningSpec}, "--bogus"},
		{"validate without a file", []string{"validate"}, "FILE"},
		{"graph without a file", []string{"graph"}, "FILE"},
		{"graph with an unknown format", []string{"graph", reasoningSpec, "--format", "png"}, "png"},
		{"run without a file", []string{"run"}, "FILE"},
		{"resume without a run directory", []string{"resume"}, "RUN_DIR"},
		{"schema with an argument", []string{"schema", "extra"}, "extra"},
		{"version with an argument", []string{"version", "extra"}, "extra"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := invoke(t, nil, tc.args...)
			if code != exitcode.Usage {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitcode.Usage, stdout, stderr)
			}
			if !strings.HasPrefix(stderr, "runner: ") || !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr should start with \"runner: \" and mention %q:\n%s", tc.want, stderr)
			}
			if !strings.Contains(stderr, "--help") {
				t.Errorf("stderr should point at --help:\n%s", stderr)
			}
		})
	}
}

func TestValidateExamples(t *testing.T) {
	files := exampleSpecs(t)
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			code, stdout, stderr := invoke(t, nil, "validate", f)
			if code != exitcode.OK {
				t.Fatalf("exit %d, want 0\nstderr:\n%s", code, stderr)
			}
			if stdout != f+": ok\n" {
				t.Errorf("stdout = %q, want %q", stdout, f+": ok\n")
			}
			if strings.Contains(stderr, "error:") {
				t.Errorf("stderr has errors:\n%s", stderr)
			}
		})
	}
	t.Run("all at once", func(t *testing.T) {
		code, stdout, stderr := invoke(t, nil, append([]string{"validate"}, files...)...)
		if code != exitcode.OK {
			t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
		}
		if n := strings.Count(stdout, ": ok\n"); n != len(files) {
			t.Errorf("%d ok lines for %d files:\n%s", n, len(files), stdout)
		}
	})
	t.Run("quiet", func(t *testing.T) {
		code, stdout, stderr := invoke(t, nil, "validate", "-q", files[0])
		if code != exitcode.OK || stdout != "" {
			t.Errorf("exit %d, stdout %q, want 0 and nothing\nstderr:\n%s", code, stdout, stderr)
		}
	})
}

// brokenSpecs are invalid specs with the first error each must report.
var brokenSpecs = []struct {
	name      string
	text      string
	line, col int
	message   string
}{
	{
		name: "misspelt key",
		text: `version: 1
name: broken
agents:
  a: {name: Agent A, modle: gpt-4o}
nodes:
  n: {kind: ask, agents: [a], template: t/x}
templates: {define: {t/x: hello}}
flow: [n]
`,
		line: 4, col: 22, message: `unknown key "modle" in agents.a (did you mean "model"?)`,
	},
	{
		name: "unknown agent",
		text: `version: 1
name: broken
templates: {define: {t/x: hello}}
agents: {a: {name: A}}
nodes:
  n:
    kind: ask
    agents: [a, b]
    template: t/x
flow: [n]
`,
		line: 8, col: 17, message: `unknown agent "b"`,
	},
	{
		name: "unknown node kind",
		text: `version: 1
name: broken
agents: {a: {name: A}}
nodes:
  n: {kind: debate, agents: [a]}
flow: [n]
`,
		line: 5, col: 13, message: `"debate" is not one of ask, converse, clarify`,
	},
	{
		name: "unclosed flow mapping",
		text: `version: 1
name: broken
agents: {a: {name: A}}
nodes:
  n: {kind: ask, agents: [a], template: t/x
flow: [n]
`,
		line: 5, col: 6, message: "YAML syntax",
	},
	{
		name: "template field typo",
		text: `version: 1
name: broken
templates: {define: {t/x: "hi {{.Agent.Nmae}}"}}
agents: {a: {name: A}}
nodes:
  n: {kind: ask, agents: [a], template: t/x}
flow: [n]
`,
		line: 3, col: 39, message: `has no field "Nmae" (did you mean "Name"?)`,
	},
	{
		name: "condition of the wrong type",
		text: `version: 1
name: broken
templates: {define: {t/x: hello}}
vars: {title: hello}
agents: {a: {name: A}}
nodes:
  n: {kind: ask, agents: [a], template: t/x}
flow:
  - if: vars.title
    then: [n]
`,
		line: 9, col: 9, message: "condition must be a boolean",
	},
	{
		name: "unfinished expression",
		text: `version: 1
name: broken
templates: {define: {t/x: hello}}
agents: {a: {name: A}}
nodes:
  n: {kind: ask, agents: [a], template: t/x}
flow:
  - loop: {max: 2, until: "nodes.n.output ==", do: [n]}
`,
		line: 8, col: 44, message: "syntax error",
	},
	{
		name: "unknown node in an expression",
		text: `version: 1
name: broken
templates: {define: {t/x: hello}}
agents: {a: {name: A}}
nodes:
  answer: {kind: ask, agents: [a], template: t/x}
flow:
  - loop: {max: 2, until: nodes.answr.output == "x", do: [answer]}
`,
		line: 8, col: 33, message: `unknown node "answr" (did you mean "answer"?)`,
	},
}

// diagLine matches the first line of a diagnostic.
func diagLine(file string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(file) + `:(\d+):(\d+): error: (.+)$`)
}

func TestValidateInvalid(t *testing.T) {
	for _, tc := range brokenSpecs {
		t.Run(tc.name, func(t *testing.T) {
			path := writeSpecFile(t, "spec.yaml", tc.text)
			code, stdout, stderr := invoke(t, nil, "validate", path)
			if code != exitcode.InvalidSpec {
				t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitcode.InvalidSpec, stderr)
			}
			if strings.Contains(stdout, "ok") {
				t.Errorf("stdout claims success: %q", stdout)
			}
			m := diagLine(path).FindStringSubmatch(stderr)
			if m == nil {
				t.Fatalf("no FILE:LINE:COL: error: diagnostic on stderr:\n%s", stderr)
			}
			line, _ := strconv.Atoi(m[1])
			col, _ := strconv.Atoi(m[2])
			if line != tc.line || col != tc.col || !strings.Contains(m[3], tc.message) {
				t.Errorf("first diagnostic = %d:%d %q, want %d:%d containing %q\nstderr:\n%s",
					line, col, m[3], tc.line, tc.col, tc.message, stderr)
			}
			// The offending line is quoted with a caret under the column.
			lines := strings.Split(tc.text, "\n")
			quoted := strings.TrimRight(lines[tc.line-1], " ")
			if !strings.Contains(stderr, "| "+quoted+"\n") {
				t.Errorf("stderr does not quote line %d (%q):\n%s", tc.line, quoted, stderr)
			}
			if !strings.Contains(stderr, "| "+strings.Repeat(" ", tc.col-1)+"^\n") {
				t.Errorf("stderr has no caret at column %d:\n%s", tc.col, stderr)
			}
			if !strings.HasSuffix(stderr, "runner: 1 spec is invalid\n") {
				t.Errorf("stderr does not end with the summary:\n%s", stderr)
			}
		})
	}
}

func TestValidateReportsEveryError(t *testing.T) {
	path := writeSpecFile(t, "spec.yaml", `version: 1
name: broken
agents:
  a: {name: Agent A, modle: gpt-4o}
nodes:
  answer:
    kind: ask
    agents: [a, b]
    template: reasoning/answer
flow:
  - loop: {max: 2, until: nodes.answr.output == "x", do: [answer]}
`)
	code, _, stderr := invoke(t, nil, "validate", path)
	if code != exitcode.InvalidSpec {
		t.Fatalf("exit %d, want %d", code, exitcode.InvalidSpec)
	}
	var got []string
	for _, m := range diagLine(path).FindAllStringSubmatch(stderr, -1) {
		got = append(got, m[1]+":"+m[2])
	}
	want := []string{"4:22", "8:17", "9:15", "11:33"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("diagnostics at %v, want %v (every problem, in file order)\nstderr:\n%s", got, want, stderr)
	}
}

func TestValidateMixed(t *testing.T) {
	bad := writeSpecFile(t, "bad.yaml", brokenSpecs[0].text)
	code, stdout, stderr := invoke(t, nil, "validate", reasoningSpec, bad)
	if code != exitcode.InvalidSpec {
		t.Fatalf("exit %d, want %d", code, exitcode.InvalidSpec)
	}
	if stdout != reasoningSpec+": ok\n" {
		t.Errorf("stdout = %q: the valid spec should still be reported ok", stdout)
	}
	if !diagLine(bad).MatchString(stderr) {
		t.Errorf("no diagnostic for %s:\n%s", bad, stderr)
	}
}

func TestValidateMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	code, _, stderr := invoke(t, nil, "validate", missing)
	if code != exitcode.InvalidSpec {
		t.Fatalf("exit %d, want %d", code, exitcode.InvalidSpec)
	}
	if !strings.Contains(stderr, missing+": error:") {
		t.Errorf("stderr does not name the file:\n%s", stderr)
	}
}

// jsonDiagnostic is the shape validate --json prints.
type jsonDiagnostic struct {
	File string `json:"file"`
	Pos  struct {
		Line int `json:"line"`
		Col  int `json:"col"`
	} `json:"pos"`
	Severity json.RawMessage `json:"severity"`
	Message  string          `json:"message"`
	Snippet  string          `json:"snippet"`
}

func TestValidateJSON(t *testing.T) {
	bad := writeSpecFile(t, "spec.yaml", brokenSpecs[0].text)
	for _, tc := range []struct {
		name  string
		files []string
		code  int
		n     int // diagnostics expected
	}{
		{"valid", []string{reasoningSpec}, exitcode.OK, 0},
		{"invalid", []string{bad}, exitcode.InvalidSpec, 1},
		{"both", []string{reasoningSpec, bad}, exitcode.InvalidSpec, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := invoke(t, nil, append([]string{"validate", "--json"}, tc.files...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstderr:\n%s", code, tc.code, stderr)
			}
			if !strings.HasPrefix(strings.TrimSpace(stdout), "[") {
				t.Fatalf("stdout is not a JSON array:\n%s", stdout)
			}
			var diags []jsonDiagnostic
			if err := json.Unmarshal([]byte(stdout), &diags); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
			}
			if len(diags) != tc.n {
				t.Fatalf("%d diagnostics, want %d:\n%s", len(diags), tc.n, stdout)
			}
			for _, d := range diags {
				if d.File != bad || d.Pos.Line != brokenSpecs[0].line || d.Pos.Col != brokenSpecs[0].col ||
					!strings.Contains(d.Message, "modle") || d.Snippet == "" || len(d.Severity) == 0 {
					t.Errorf("diagnostic = %+v", d)
				}
			}
			// With --json nothing but the summary goes to stderr.
			if strings.Contains(stderr, "error:") {
				t.Errorf("diagnostics leaked to stderr:\n%s", stderr)
			}
		})
	}
}

func TestSchema(t *testing.T) {
	code, stdout, stderr := invoke(t, nil, "schema")
	if code != exitcode.OK {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	published, err := os.ReadFile("../../schemas/spec.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if stdout != string(published) {
		t.Error("runner schema differs from schemas/spec.schema.json")
	}
	generated, err := nodes.Registry().Schema()
	if err != nil {
		t.Fatal(err)
	}
	if stdout != string(generated) {
		t.Error("runner schema differs from the registry's schema: run go generate ./schemas")
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %v", doc["$schema"])
	}
}

// TestSchemaResult: `runner schema --result` prints the published schema of
// result.json, which is what package runtime/result makes, and the
// result.json of a real run matches it (see also TestResultShape).
func TestSchemaResult(t *testing.T) {
	code, stdout, stderr := invoke(t, nil, "schema", "--result")
	if code != exitcode.OK {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	published, err := os.ReadFile("../../schemas/result.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	generated, err := result.Schema()
	if err != nil {
		t.Fatal(err)
	}
	if stdout != string(published) || stdout != string(generated) {
		t.Error("runner schema --result differs from schemas/result.schema.json or from result.Schema(): run go generate ./schemas")
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	props, _ := doc["properties"].(map[string]any)
	if v, _ := props["format_version"].(map[string]any); v["const"] != float64(result.FormatVersion) {
		t.Errorf("format_version = %v, want const %d", props["format_version"], result.FormatVersion)
	}
}

// blockAround returns the lines from the one containing open up to the
// first line after it equal (trimmed) to closer: the body of a subgraph.
func blockAround(out, open, closer string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.Contains(l, open) {
			continue
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " "))]
		for j := i + 1; j < len(lines); j++ {
			if lines[j] == indent+closer {
				return strings.Join(lines[i:j+1], "\n")
			}
		}
	}
	return ""
}

func TestGraph(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		first        string
		open, closer string
		body         []string // inside the loop's box
		outside      []string // after it
	}{
		{
			args:    []string{"graph", reasoningSpec},
			first:   "flowchart TD",
			open:    `subgraph c1["loop round"]`,
			closer:  "end",
			body:    []string{"round = 1..vars.rounds", "answer (ask)<br/>a, b, c", `-->|"next"|`},
			outside: []string{"start -->", "--> finish"},
		},
		{
			args:    []string{"graph", "--format", "mermaid", reasoningSpec},
			first:   "flowchart TD",
			open:    `subgraph c1["loop round"]`,
			closer:  "end",
			body:    []string{"answer (ask)"},
			outside: []string{"--> finish"},
		},
		{
			args:    []string{"graph", "-f", "dot", reasoningSpec},
			first:   `digraph "reasoning-debate" {`,
			open:    "subgraph cluster_",
			closer:  "}",
			body:    []string{`label="loop round"`, "round = 1..vars.rounds", `answer (ask)\na, b, c`, `[label="next"]`},
			outside: []string{"start ->", "-> finish;"},
		},
	} {
		t.Run(strings.Join(tc.args[1:len(tc.args)-1], " "), func(t *testing.T) {
			code, stdout, stderr := invoke(t, nil, tc.args...)
			if code != exitcode.OK {
				t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
			}
			if !strings.HasPrefix(stdout, tc.first+"\n") {
				t.Errorf("output does not start with %q:\n%s", tc.first, stdout)
			}
			block := blockAround(stdout, tc.open, tc.closer)
			if block == "" {
				t.Fatalf("no loop box (%q ... %q):\n%s", tc.open, tc.closer, stdout)
			}
			for _, w := range tc.body {
				if !strings.Contains(block, w) {
					t.Errorf("loop box lacks %q:\n%s", w, block)
				}
			}
			rest := strings.Replace(stdout, block, "", 1)
			for _, w := range tc.outside {
				if !strings.Contains(rest, w) {
					t.Errorf("graph lacks %q outside the loop:\n%s", w, stdout)
				}
			}
			if strings.Contains(rest, "answer (ask)") {
				t.Errorf("the node is drawn outside the loop:\n%s", stdout)
			}
		})
	}
}

func TestGraphInvalid(t *testing.T) {
	bad := writeSpecFile(t, "spec.yaml", brokenSpecs[0].text)
	code, stdout, stderr := invoke(t, nil, "graph", bad)
	if code != exitcode.InvalidSpec {
		t.Fatalf("exit %d, want %d", code, exitcode.InvalidSpec)
	}
	if stdout != "" {
		t.Errorf("a graph was drawn for an invalid spec:\n%s", stdout)
	}
	if !diagLine(bad).MatchString(stderr) {
		t.Errorf("no diagnostic on stderr:\n%s", stderr)
	}
}

func TestVersion(t *testing.T) {
	code, stdout, stderr := invoke(t, nil, "version")
	if code != exitcode.OK {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	if !regexp.MustCompile(`^runner \S+\ncommit: \S+.*\nspec language: 1\ngo: go\S+ \S+/\S+\n$`).MatchString(stdout) {
		t.Errorf("stdout = %q, want the version, commit, spec language and Go version", stdout)
	}
	// --version says the same as the command.
	code, flag, stderr := invoke(t, nil, "--version")
	if code != exitcode.OK || flag != stdout {
		t.Errorf("runner --version: exit %d, stdout %q (want %q)\nstderr:\n%s", code, flag, stdout, stderr)
	}
}

// TestBinary builds the real command and checks that exit codes reach the
// shell, which in-process tests cannot show.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH")
	}
	bin := filepath.Join(t.TempDir(), "runner")
	build := exec.Command(goTool, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	bad := writeSpecFile(t, "bad.yaml", brokenSpecs[0].text)
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string // substring
		stderr string // substring
	}{
		{nil, exitcode.OK, "Usage: runner", ""},
		{[]string{"version"}, exitcode.OK, "runner ", ""},
		{[]string{"--version"}, exitcode.OK, "\nspec language: 1\ngo: go1.", ""},
		{[]string{"version", "--json"}, exitcode.OK, `"spec_language":1`, ""},
		{[]string{"validate", reasoningSpec}, exitcode.OK, reasoningSpec + ": ok", ""},
		{[]string{"validate", bad}, exitcode.InvalidSpec, "", bad + ":4:22: error: "},
		{[]string{"graph", bad}, exitcode.InvalidSpec, "", bad + ":4:22: error: "},
		{[]string{"--bogus"}, exitcode.Usage, "", "unknown flag --bogus"},
		{[]string{"bogus"}, exitcode.Usage, "", "bogus"},
	} {
		t.Run(strings.Join(append([]string{"runner"}, tc.args...), " "), func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstderr:\n%s", code, tc.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, stdout.String())
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, stderr.String())
			}
		})
	}
}

// backtickWords returns every word written inside `code` spans of a Markdown
// text, including flags such as --runs-dir.
func backtickWords(markdown string) map[string]bool {
	words := map[string]bool{}
	word := regexp.MustCompile(`-{0,2}[A-Za-z_$][A-Za-z0-9_-]*`)
	for _, span := range regexp.MustCompile("`[^`\n]+`").FindAllString(markdown, -1) {
		for _, w := range word.FindAllString(span, -1) {
			words[w] = true
		}
	}
	return words
}

// schemaKeys collects every property name in a JSON Schema document.
func schemaKeys(v any, into map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		if props, ok := x["properties"].(map[string]any); ok {
			for k := range props {
				into[k] = true
			}
		}
		for _, child := range x {
			schemaKeys(child, into)
		}
	case []any:
		for _, child := range x {
			schemaKeys(child, into)
		}
	}
}

// TestManualCoversCLIAndSchema keeps the manual (docs/) from drifting:
// every key of the spec schema, every command and flag, and every exit code
// must be documented there.
func TestManualCoversCLIAndSchema(t *testing.T) {
	pages, err := docs.Pages()
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, text := range pages {
		all.WriteString(text)
	}
	words := backtickWords(all.String())

	var schema any
	if err := json.Unmarshal(schemas.Spec, &schema); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	schemaKeys(schema, keys)
	if len(keys) < 50 {
		t.Fatalf("only %d schema keys found; the walk is broken", len(keys))
	}
	for k := range keys {
		if !words[k] {
			t.Errorf("docs/ does not document the spec key %q (write it in `code`)", k)
		}
	}

	parser, err := kong.New(&cli{}, kong.Name("runner"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range parser.Model.Children {
		if !strings.Contains(pages["commands.md"], "\n## `runner "+c.Name) {
			t.Errorf("docs/commands.md has no section \"## `runner %s ...`\"", c.Name)
		}
		for _, f := range c.Flags {
			if !words["--"+f.Name] {
				t.Errorf("docs/ does not document %s --%s", c.Name, f.Name)
			}
		}
	}

	// The spec shown in full must be the example file as it is.
	const marker = "This is the whole of `examples/reasoning-debate/spec.yaml`:\n\n```yaml\n"
	example, err := os.ReadFile(reasoningSpec)
	if err != nil {
		t.Fatal(err)
	}
	if _, rest, ok := strings.Cut(pages["spec-language.md"], marker); !ok {
		t.Error("docs/spec-language.md no longer shows examples/reasoning-debate/spec.yaml in full")
	} else if shown, _, _ := strings.Cut(rest, "```\n"); shown != string(example) {
		t.Error("the copy of examples/reasoning-debate/spec.yaml in docs/spec-language.md differs from the file")
	}

	for _, code := range []int{exitcode.OK, exitcode.Failure, exitcode.Usage, exitcode.Endpoint, exitcode.InvalidSpec, exitcode.Waiting, exitcode.Budget, exitcode.Gate, exitcode.Inconclusive} {
		if !strings.Contains(pages["exit-codes.md"], fmt.Sprintf("\n| %d | ", code)) {
			t.Errorf("docs/exit-codes.md's table lacks %d", code)
		}
	}
}
