package main

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/debate-runner/runner/examples"
	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/scaffold"
	"github.com/debate-runner/runner/schemas"
)

// The tests of `runner test`, `runner init` and `runner schema --write`
// drive the CLI in-process; TestFirstFiveMinutes runs the built binary
// through a new user's first five minutes.

// allExampleSpecs are the examples' specs at any depth (a folder of
// protocols, say), as runner init finds its starting points.
func allExampleSpecs(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, name := range examples.Names() {
		out = append(out, filepath.Join("../../examples", filepath.FromSlash(name), "spec.yaml"))
	}
	if len(out) == 0 {
		t.Fatal("no examples found")
	}
	return out
}

func TestEveryExampleHasAPassingTest(t *testing.T) {
	for _, s := range allExampleSpecs(t) {
		test := strings.TrimSuffix(s, ".yaml") + ".test.yaml"
		if _, err := os.Stat(test); err != nil {
			t.Errorf("%s has no test file: %v", s, err)
		}
	}
	keep := t.TempDir()
	code, stdout, stderr := invoke(t, nil, "test", "--keep", keep, "-p", "2", "../../examples/")
	if code != exitcode.OK {
		t.Fatalf("runner test --keep examples/: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if strings.Contains(stdout, "?   \t") {
		t.Errorf("runner test examples/ found specs without a test file:\n%s", stdout)
	}
	for _, s := range allExampleSpecs(t) {
		want := "ok  \t" + strings.TrimSuffix(s, ".yaml") + ".test.yaml\t"
		if !strings.Contains(stdout, want) {
			t.Errorf("no %q line:\n%s", want, stdout)
		}
	}
	t.Run("every call shows", func(t *testing.T) { checkEveryExampleCallShows(t, keep) })
}

// aSpec is a small spec under test: two agents answer twice.
const aSpec = `version: 1
name: small
inputs:
  question: {required: true}
agents:
  a: {name: A}
  b: {name: B}
templates:
  define:
    local/answer: |
      Round {{.Round}}. {{.Inputs.question}}
nodes:
  answer:
    kind: ask
    agents: [a, b]
    template: local/answer
    output: {format: regex, pattern: 'ANSWER: (\w+)', repair: 1}
    record: answer
flow:
  - loop: {as: round, max: 2, do: [answer]}
outputs:
  answer: mode(map(latest("answer"), {.output}), "first")
`

const aTest = `inputs: {question: "Yes or no?"}
replies:
  - {node: answer, reply: 'ANSWER: yes'}
cases:
  - name: both say yes
    expect:
      - outputs.answer == "yes"
      - len(calls) == 4
  - name: b says no
    replies:
      - {agent: b, reply: 'ANSWER: no'}
    expect:
      - outputs.answer == "maybe"
      - count(calls, .agent == "b") == 2
`

func writeProject(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestTestReportsFailuresWhereTheyAre(t *testing.T) {
	dir := writeProject(t, map[string]string{"spec.yaml": aSpec, "spec.test.yaml": aTest})
	test := filepath.Join(dir, "spec.test.yaml")
	junit := filepath.Join(dir, "out", "junit.xml")
	code, stdout, stderr := invoke(t, nil, "test", dir, "--junit", junit)
	if code != exitcode.Failure {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"--- FAIL: " + test + "/b_says_no (",
		test + `:13:9: assertion failed: outputs.answer == "maybe"`,
		`        outputs.answer = "yes"`,
		"FAIL\t" + test + "\t",
		"\nFAIL\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "both_say_yes") || strings.Contains(stdout, "--- FAIL: "+test+"/both") {
		t.Errorf("a passing case is reported without -v:\n%s", stdout)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &suites); err != nil {
		t.Fatalf("junit.xml: %v\n%s", err, data)
	}
	if suites.Tests != 2 || suites.Failures != 1 || len(suites.Suites) != 1 || len(suites.Suites[0].Cases) != 2 {
		t.Fatalf("junit.xml counts:\n%s", data)
	}
	c := suites.Suites[0].Cases[1]
	if c.Name != "b_says_no" || c.Failure == nil || !strings.Contains(c.Failure.Text, `outputs.answer = "yes"`) || suites.Suites[0].Cases[0].Failure != nil {
		t.Errorf("junit.xml cases:\n%s", data)
	}

	// -run selects cases as go test's does, and -v shows passing ones.
	code, stdout, _ = invoke(t, nil, "test", "-run", "both", "-v", filepath.Join(dir, "spec.yaml"))
	if code != exitcode.OK || !strings.Contains(stdout, "=== RUN   "+test+"/both_say_yes") || !strings.Contains(stdout, "--- PASS: "+test+"/both_say_yes") || strings.Contains(stdout, "b_says_no") {
		t.Errorf("-run both -v: exit %d\n%s", code, stdout)
	}
	if code, _, stderr := invoke(t, nil, "test", "--run", "(", dir); code != exitcode.Usage || !strings.Contains(stderr, "--run (") {
		t.Errorf("a bad -run pattern: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := invoke(t, nil, "test", filepath.Join(dir, "missing")); code != exitcode.Usage {
		t.Errorf("a missing path: exit %d\n%s", code, stderr)
	}
}

func TestTestFileErrorsNamePositions(t *testing.T) {
	for _, tc := range []struct {
		name, test string
		want       *regexp.Regexp
	}{
		{"unknown key", "cases:\n  - name: x\n    expct: [true]\n", regexp.MustCompile(`spec\.test\.yaml:3:5: cases\[0\]: additionalProperties 'expct' not allowed`)},
		{"no cases", "inputs: {question: q}\n", regexp.MustCompile(`spec\.test\.yaml:1:1: missing properties: 'cases'`)},
		{"bad expression", "cases:\n  - name: x\n    expect:\n      - len(calls) ==\n", regexp.MustCompile(`spec\.test\.yaml:4:21: assertion "len\(calls\) ==": unexpected token EOF`)},
		{"unknown name", "cases:\n  - name: x\n    expect: ['outputs.answer == answer']\n", regexp.MustCompile(`spec\.test\.yaml:3:33: assertion .*unknown name answer`)},
		{"bad field", "cases:\n  - name: x\n    expect: ['any(calls, .agnt == \"a\")']\n", regexp.MustCompile(`spec\.test\.yaml:3:\d+: assertion .*agnt`)},
		{"bad pattern", "cases:\n  - name: x\n    replies:\n      - {prompt: '(', reply: hi}\n", regexp.MustCompile(`spec\.test\.yaml:4:19: invalid regular expression`)},
		{"bad reply", "cases:\n  - name: x\n    replies:\n      - {node: answer, reply: {contnet: hi}}\n", regexp.MustCompile(`spec\.test\.yaml:4:32: cases\[0\]\.replies\[0\]\.reply: additionalProperties 'contnet' not allowed`)},
		{"duplicate case", "cases:\n  - name: x y\n  - name: x_y\n", regexp.MustCompile(`spec\.test\.yaml:3:5: case "x_y" has the name of case 1`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeProject(t, map[string]string{"spec.yaml": aSpec, "spec.test.yaml": tc.test})
			code, stdout, _ := invoke(t, nil, "test", dir)
			if code != exitcode.Failure || !tc.want.MatchString(stdout) || !strings.Contains(stdout, "[setup failed]") {
				t.Errorf("exit %d, want 1 and %s:\n%s", code, tc.want, stdout)
			}
		})
	}
	dir := writeProject(t, map[string]string{"spec.yaml": strings.Replace(aSpec, "agents: [a, b]", "agents: [a, c]", 1), "spec.test.yaml": aTest})
	if code, stdout, _ := invoke(t, nil, "test", dir); code != exitcode.Failure || !strings.Contains(stdout, "is invalid") || !strings.Contains(stdout, "spec.yaml:15:17") {
		t.Errorf("an invalid spec: exit %d\n%s", code, stdout)
	}
}

func TestTestGoldenPrompts(t *testing.T) {
	golden := strings.Replace(aTest, "  - name: both say yes\n", "  - name: both say yes\n    golden: true\n", 1)
	dir := writeProject(t, map[string]string{"spec.yaml": aSpec, "spec.test.yaml": golden})
	args := []string{"test", dir, "-run", "both"}
	if code, stdout, _ := invoke(t, nil, args...); code != exitcode.Failure || !strings.Contains(stdout, "spec.golden/both_say_yes.txt does not exist: run runner test --update") {
		t.Fatalf("no golden file yet: exit %d\n%s", code, stdout)
	}
	code, stdout, _ := invoke(t, nil, append(args, "--update")...)
	path := filepath.Join(dir, "spec.golden", "both_say_yes.txt")
	if code != exitcode.OK || !strings.Contains(stdout, "note: wrote "+path) {
		t.Fatalf("--update: exit %d\n%s", code, stdout)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "=== answer/round=1/a\n--- user\nRound 1. Yes or no?\n") || strings.Index(string(data), "round=1/b") > strings.Index(string(data), "round=2/a") {
		t.Errorf("golden file:\n%s", data)
	}
	if code, stdout, _ := invoke(t, nil, args...); code != exitcode.OK {
		t.Fatalf("after --update: exit %d\n%s", code, stdout)
	}
	// A changed template is a red test that shows the change.
	if err := os.WriteFile(filepath.Join(dir, "spec.yaml"), []byte(strings.Replace(aSpec, "Round {{.Round}}.", "Turn {{.Round}}:", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = invoke(t, nil, args...)
	for _, want := range []string{
		"the prompts differ from " + path + " (runner test --update accepts them)",
		"calls answer/round=1/a, answer/round=1/b:\n",
		"  - Round 1. Yes or no?\n", "  + Turn 1: Yes or no?\n",
	} {
		if code != exitcode.Failure || !strings.Contains(stdout, want) {
			t.Errorf("changed template: exit %d, output lacks %q:\n%s", code, want, stdout)
		}
	}
}

func TestInitStartsEveryExample(t *testing.T) {
	starts := scaffold.Starts()
	if len(starts) < 6 {
		t.Fatalf("starting points: %v", starts)
	}
	code, stdout, _ := invoke(t, nil, "init", "--list")
	for _, s := range starts {
		if code != exitcode.OK || !strings.Contains(stdout, s.Name) {
			t.Errorf("init --list lacks %s:\n%s", s.Name, stdout)
		}
	}
	for _, s := range starts {
		t.Run(s.Name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "project")
			code, stdout, stderr := invoke(t, nil, "init", dir, "--from", s.Name)
			if code != exitcode.OK {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			for _, f := range []string{"spec.yaml", "spec.test.yaml", ".env.example", ".gitignore", "schemas/spec.schema.json", "schemas/test.schema.json"} {
				if !strings.Contains(stdout, filepath.FromSlash(f)) {
					t.Errorf("init did not say it wrote %s:\n%s", f, stdout)
				}
			}
			checkModeline(t, filepath.Join(dir, "spec.yaml"), schemas.Spec)
			checkModeline(t, filepath.Join(dir, "spec.test.yaml"), schemas.Test)
			env, _ := os.ReadFile(filepath.Join(dir, ".env.example"))
			if !strings.Contains(string(env), "OPENAI_API_KEY=\n") {
				t.Errorf(".env.example:\n%s", env)
			}
			if code, _, stderr := invoke(t, nil, "validate", filepath.Join(dir, "spec.yaml")); code != exitcode.OK {
				t.Errorf("the new spec is invalid:\n%s", stderr)
			}
			if code, stdout, _ := invoke(t, nil, "test", dir); code != exitcode.OK {
				t.Errorf("the new project's tests fail:\n%s", stdout)
			}
		})
	}
}

// checkModeline checks that a file's schema modeline points at a file
// holding the schema.
func checkModeline(t *testing.T, path string, schema []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^# yaml-language-server: \$schema=(\S+)$`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("%s has no modeline", path)
	}
	got, err := os.ReadFile(filepath.Join(filepath.Dir(path), string(m[1])))
	if err != nil || string(got) != string(schema) {
		t.Errorf("%s: the modeline's schema %s is missing or stale (%v)", path, m[1], err)
	}
}

func TestInitRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "spec.yaml"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := invoke(t, nil, "init", dir)
	if code != exitcode.Usage || !strings.Contains(stderr, "already has spec.yaml") || !strings.Contains(stderr, "--force") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("init wrote files beside the one it refused to overwrite: %v", entries)
	}
	if code, _, stderr := invoke(t, nil, "init", dir, "--force"); code != exitcode.OK {
		t.Fatalf("--force: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := invoke(t, nil, "init", t.TempDir(), "--from", "nonsense"); code != exitcode.Usage || !strings.Contains(stderr, "reasoning-debate") {
		t.Errorf("unknown starting point: exit %d\n%s", code, stderr)
	}
	// --keep-libraries leaves the spec on the embedded libraries.
	lib := t.TempDir()
	if code, _, stderr := invoke(t, nil, "init", lib, "--from", "hiring-panel", "--keep-libraries"); code != exitcode.OK {
		t.Fatalf("--keep-libraries: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(lib, "templates")); err == nil {
		t.Error("--keep-libraries copied the templates")
	}
	if data, _ := os.ReadFile(filepath.Join(lib, "spec.yaml")); !strings.Contains(string(data), "use: [chain-of-debate@2]") {
		t.Errorf("--keep-libraries changed the spec's libraries:\n%s", data)
	}
}

func TestSchemaWriteAndTest(t *testing.T) {
	code, stdout, _ := invoke(t, nil, "schema", "--test")
	if code != exitcode.OK || stdout != string(schemas.Test) {
		t.Errorf("schema --test: exit %d", code)
	}
	dir := filepath.Join(t.TempDir(), "schemas")
	code, _, stderr := invoke(t, nil, "schema", "--write", "--dir", dir)
	if code != exitcode.OK {
		t.Fatalf("schema --write: exit %d\n%s", code, stderr)
	}
	for name, want := range map[string][]byte{"spec.schema.json": schemas.Spec, "test.schema.json": schemas.Test} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if code, _, _ := invoke(t, nil, "schema", "--write", "--result"); code != exitcode.Usage {
		t.Errorf("--write --result: exit %d", code)
	}
}

// TestFirstFiveMinutes is README's quick start, followed literally with
// the built binary: init a project, run its tests green, break a template
// as README says and see the red test name the assertion and show the
// values and the prompts' diff, mend it, then gate the tests and a dataset
// run as CI would. Every command it runs is checked to be README's.
func TestFirstFiveMinutes(t *testing.T) {
	bin := runnerBinary(t)
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	quick := string(readme)
	if i := strings.Index(quick, "## Quick start\n"); i >= 0 {
		quick = quick[i:]
	}
	if i := strings.Index(quick, "\n### A local model"); i >= 0 {
		quick = quick[:i]
	}
	work := t.TempDir()
	dir := filepath.Join(work, "my-debate")
	runIn := func(wd string, env []string, line string) (int, string) {
		t.Helper()
		if !strings.Contains(quick, "\n"+line+"\n") {
			t.Errorf("README's quick start has no line %q", line)
		}
		args := strings.Fields(strings.TrimPrefix(line, "runner "))
		cmd := exec.Command(bin, args...)
		cmd.Dir = wd
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(out)
	}
	if code, out := runIn(work, nil, "runner init my-debate"); code != 0 || !strings.Contains(out, "runner test") {
		t.Fatalf("init: exit %d\n%s", code, out)
	}
	if !strings.Contains(quick, "\ncd my-debate\n") {
		t.Error("README's quick start does not cd into the project")
	}
	if code, out := runIn(dir, nil, "runner test"); code != 0 || !strings.Contains(out, "ok  \tspec.test.yaml\t") || !strings.Contains(out, "ok  \tbaseline.test.yaml\t") {
		t.Fatalf("test of the new project: exit %d\n%s", code, out)
	}

	// README's broken template: the others' answers replaced by the
	// agent's own.
	tmpl := filepath.Join(dir, "templates", "reasoning", "answer.tmpl")
	data, err := os.ReadFile(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	const good, bad = "\n{{.Content}}\n", "\n{{$.Own.Content}}\n"
	if strings.Count(string(data), good) != 1 || !strings.Contains(quick, "`{{.Content}}`") || !strings.Contains(quick, "`{{$.Own.Content}}`") {
		t.Fatalf("the template has no single line README tells to change:\n%s", data)
	}
	if err := os.WriteFile(tmpl, []byte(strings.Replace(string(data), good, bad, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := runIn(dir, nil, "runner test")
	for _, want := range []string{
		"--- FAIL: spec.test.yaml/majority_answer",
		`spec.test.yaml:21:9: assertion failed: all(filter(calls, .round == 2), .prompt contains "\\boxed{61}")`,
		`first of filter(calls, .round == 2) where it does not hold: the one with key "answer/round=2/a"`,
		"spec.test.yaml:7:5: the prompts differ from spec.golden/majority_answer.txt (runner test --update accepts them)",
		"  - Multiplication first gives 12+49=61. \\boxed{61}\n          + 7*3 is 21, and 12+21 is \\boxed{33}",
	} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("broken template: exit %d, output lacks %q:\n%s", code, want, out)
		}
		// What README shows of the output is what the output says.
		if !strings.Contains(quick, strings.SplitN(want, "\n", 2)[0]) {
			t.Errorf("README's quick start does not show %q", want)
		}
	}
	if err := os.WriteFile(tmpl, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := runIn(dir, nil, "runner test"); code != 0 {
		t.Fatalf("mended template: exit %d\n%s", code, out)
	}

	// CI: the tests with JUnit XML, then the dataset the project came
	// with, gated; the solver is right on 6 of its 10 problems.
	if code, out := runIn(dir, nil, "runner test --junit spec-tests.xml"); code != 0 {
		t.Fatalf("--junit: exit %d\n%s", code, out)
	}
	var suites struct {
		Tests int `xml:"tests,attr"`
	}
	if data, err := os.ReadFile(filepath.Join(dir, "spec-tests.xml")); err != nil || xml.Unmarshal(data, &suites) != nil || suites.Tests != 14 {
		t.Errorf("spec-tests.xml: %v, %d tests", err, suites.Tests)
	}
	srv := llmtest.New(t, solver)
	env := []string{"OPENAI_BASE_URL=" + srv.URL, "OPENAI_API_KEY=sk-test", "RUNNER_CACHE_DIR=" + t.TempDir()}
	if code, out := runIn(dir, env, "runner run spec.yaml --dataset dataset.jsonl --fail-under 0.8"); code != exitcode.Gate || !strings.Contains(out, "gate failed: accuracy 0.600 is below --fail-under 0.8") {
		t.Errorf("gate at 0.8: exit %d\n%s", code, out)
	}
	cmd := exec.Command(bin, "run", "spec.yaml", "--dataset", "dataset.jsonl", "--fail-under", "0.5", "-q")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "gate passed: accuracy 0.600 is at least 0.5") {
		t.Errorf("gate at 0.5: %v\n%s", err, out)
	}
}
