package spectest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/debate-runner/runner/docs"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/spectest"
	"github.com/debate-runner/runner/schemas"
)

func TestPublishedSchemaIsTheLoaders(t *testing.T) {
	if !bytes.Equal(schemas.Test, spectest.Schema()) {
		t.Fatal("schemas/test.schema.json differs from runtime/spectest/schema.json: run `go generate ./schemas`")
	}
}

// TestSchemaMatchesTheTypes keeps the schema and the Go types a test file
// decodes into equal: every property of an object in the schema is a
// yaml field of its type, and every field is in the schema.
func TestSchemaMatchesTheTypes(t *testing.T) {
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Defs       map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
			OneOf      []struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"oneOf"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(spectest.Schema(), &schema); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]json.RawMessage) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	fields := func(v any) []string {
		var out []string
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			if tag, _, _ := strings.Cut(rt.Field(i).Tag.Get("yaml"), ","); tag != "" && tag != "-" {
				out = append(out, tag)
			}
		}
		sort.Strings(out)
		return out
	}
	for _, tc := range []struct {
		name         string
		schema, want []string
	}{
		{"file", keys(schema.Properties), fields(spectest.File{})},
		{"case", keys(schema.Defs["case"].Properties), fields(spectest.Case{})},
		{"entry", keys(schema.Defs["entry"].Properties), fields(spectest.Entry{})},
	} {
		if !reflect.DeepEqual(tc.schema, tc.want) {
			t.Errorf("%s: the schema has %v, the type %v", tc.name, tc.schema, tc.want)
		}
	}
	// A reply as a mapping: every property of the schema decodes.
	reply := keys(schema.Defs["reply"].OneOf[1].Properties)
	want := []string{"completion_tokens", "content", "finish_reason", "message", "prompt_tokens", "raw", "reset", "retry_after", "status", "timeout", "tool_calls"}
	if !reflect.DeepEqual(reply, want) {
		t.Errorf("reply properties %v, the decoder reads %v", reply, want)
	}
	var r spectest.Reply
	if err := yaml.Unmarshal([]byte("{content: c, tool_calls: [{name: t, arguments: {q: x}}], finish_reason: length, prompt_tokens: 3, completion_tokens: 4, status: 429, message: m, retry_after: 1.5, timeout: true, reset: true, raw: r}"), &r); err != nil {
		t.Fatal(err)
	}
	if r.Content != "c" || len(r.ToolCalls) != 1 || r.ToolCalls[0].Arguments != `{"q":"x"}` || r.FinishReason != "length" || r.PromptTokens != 3 || r.CompletionTokens != 4 ||
		r.Status != 429 || r.Message != "m" || r.RetryAfter != "1.5" || !r.Timeout || !r.Reset || r.Raw != "r" {
		t.Errorf("decoded reply: %+v", r)
	}
}

// toolSpec has an agent that may search the history, and streams.
const toolSpec = `version: 1
name: tools
models:
  default: {model: m, stream: true}
agents:
  a: {name: A, tools: [search_history]}
  b: {name: B}
templates:
  define:
    t/ask: "{{.Agent.Name}}, round {{.Round}}: what did the others say?"
nodes:
  talk:
    kind: ask
    agents: [a, b]
    template: t/ask
    record: talk
    output: {format: json, repair: 1}
flow:
  - loop: {as: round, max: 2, do: [talk]}
outputs:
  last: latest("talk")[0].output
`

const toolTest = `replies:
  - {agent: b, reply: '{"said": "hello"}'}
cases:
  - name: a tool call and a malformed stream
    replies:
      - agent: a
        round: 2
        replies:
          - {tool_calls: [{name: search_history, arguments: {query: hello}}]}
          - {raw: "data: {not json\n\n"}
          - '{"found": "b said hello"}'
      - {agent: a, reply: '{"said": "hi"}'}
    expect:
      - status == "completed"
      - any(calls, .key == "talk/round=2/a" && .tools == ["search_history"] && .attempts == 1)
      - len(tool_calls) == 1 && tool_calls[0].tool == "search_history" && tool_calls[0].result contains "hello"
      - any(calls, .agent == "a" && .round == 2 && .attempts == 2 && .statuses == [200, 200] && .reply contains "b said hello")
      - 'outputs.last == {"found": "b said hello"}'
  - name: strict scripts fail unscripted calls
    strict: true
    replies:
      - {agent: a, round: 1, reply: '{"said": "hi"}'}
    expect:
      - status == "failed"
      - error contains "no scripted reply for call talk/round=2/a"
  - name: unscripted calls get stand-ins
    expect:
      - all(filter(calls, .agent == "a"), !.scripted && .reply contains "reply to talk/round=")
      - all(filter(calls, .agent == "b"), .scripted)
`

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runFiles(t *testing.T, dir string) []spectest.FileResult {
	t.Helper()
	files, err := spectest.Find([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	return spectest.Run(context.Background(), files, spectest.Options{Registry: nodes.Registry(), Parallel: 2})
}

func TestToolCallsStreamsAndStrictScripts(t *testing.T) {
	dir := writeFiles(t, map[string]string{"spec.yaml": toolSpec, "spec.test.yaml": toolTest})
	res := runFiles(t, dir)
	if len(res) != 1 || res[0].Err != nil {
		t.Fatalf("%+v", res)
	}
	var out bytes.Buffer
	spectest.WriteFile(&out, res[0], true)
	if res[0].Failed() {
		t.Fatalf("failed:\n%s", out.String())
	}
	if c := res[0].Cases[2]; c.StandIns != 2 || c.Calls != 4 || !strings.Contains(out.String(), "note: 2 of 4 calls were not scripted") {
		t.Errorf("stand-ins: %+v\n%s", c, out.String())
	}
}

func TestAssertionFailuresShowValues(t *testing.T) {
	test := `replies:
  - {reply: '{"said": "x"}'}
cases:
  - name: wrong
    expect:
      - len(calls) == 3 && status == "completed"
      - all(calls, .agent == "a")
      - none(calls, .round == 2)
      - outputs.last.said == "y"
      - 'calls[9].agent == "a"'
`
	dir := writeFiles(t, map[string]string{"spec.yaml": toolSpec, "spec.test.yaml": test})
	res := runFiles(t, dir)
	if len(res) != 1 || len(res[0].Cases) != 1 {
		t.Fatalf("%+v", res)
	}
	fs := res[0].Cases[0].Failures
	if len(fs) != 5 {
		t.Fatalf("failures: %+v", fs)
	}
	path := filepath.Join(dir, "spec.test.yaml")
	for i, want := range []struct{ where, detail string }{
		{":6:9", "len(calls) = 4"},
		{":7:9", "first of calls where it does not hold: the one with key \"talk/round=1/b\"\n    .agent = \"b\""},
		{":8:9", "first of calls where it holds: the one with key \"talk/round=2/a\"\n    .round = 2"},
		{":9:9", `outputs.last.said = "x"`},
		{":10:10", "error: index out of range: 9 (array length is 4)"},
	} {
		if fs[i].Where != path+want.where || !strings.Contains(fs[i].Detail, want.detail) {
			t.Errorf("failure %d: %s %q\n%s", i, fs[i].Where, fs[i].Message, fs[i].Detail)
		}
	}
}

func TestFind(t *testing.T) {
	dir := writeFiles(t, map[string]string{"a.yaml": toolSpec, "a.test.yaml": toolTest, "b.yaml": toolSpec})
	if err := os.MkdirAll(filepath.Join(dir, "runs", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "runs", "x", "old.test.yaml"), []byte("cases: []"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := spectest.Find([]string{dir, filepath.Join(dir, "a.yaml")})
	if err != nil || len(got) != 1 || got[0] != filepath.Join(dir, "a.test.yaml") {
		t.Errorf("Find: %v %v", got, err)
	}
	if _, err := spectest.Find([]string{filepath.Join(dir, "b.yaml")}); err == nil || !strings.Contains(err.Error(), "b.test.yaml") {
		t.Errorf("a spec without a test file: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := spectest.Find([]string{empty}); err == nil || !strings.Contains(err.Error(), "no test files") {
		t.Errorf("a folder without test files: %v", err)
	}
}

func TestGoldenPath(t *testing.T) {
	for in, want := range map[[2]string]string{
		{"x/spec.test.yaml", "a_b"}:         "x/spec.golden/a_b.txt",
		{"x/other.yaml", "c"}:               "x/other.golden/c.txt",
		{"spec.test.yaml", "scores,_1/10?"}: "spec.golden/scores__1_10_.txt",
	} {
		if got := spectest.GoldenPath(in[0], in[1]); got != filepath.FromSlash(want) {
			t.Errorf("GoldenPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestReadmeDocumentsTestFiles keeps the manual's description of test files
// whole: the example it shows in full is the example's test file as it
// is, and every key of the schema is documented.
func TestReadmeDocumentsTestFiles(t *testing.T) {
	doc, err := docs.Page("spec-tests.md")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../../examples/reasoning-debate/spec.test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfterN(string(data), "\n", 3)
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "# yaml-language-server:") {
		t.Fatalf("the example's test file does not start with its modeline and a comment:\n%s", data)
	}
	if !strings.Contains(doc, "```yaml\n"+lines[2]+"```\n") {
		t.Error("docs/spec-tests.md does not show examples/reasoning-debate/spec.test.yaml (after its first two lines) as it is")
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Defs       map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
			OneOf      []struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"oneOf"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(spectest.Schema(), &schema); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for k := range schema.Properties {
		keys[k] = true
	}
	for _, d := range schema.Defs {
		for k := range d.Properties {
			keys[k] = true
		}
		for _, o := range d.OneOf {
			for k := range o.Properties {
				keys[k] = true
			}
		}
	}
	delete(keys, "$schema")
	for k := range keys {
		if !strings.Contains(doc, "`"+k+"`") {
			t.Errorf("docs/spec-tests.md does not document the key %s", k)
		}
	}
	// Every name an assertion sees is in the table.
	rt := reflect.TypeOf(spectest.Env{})
	for i := range rt.NumField() {
		if name := rt.Field(i).Tag.Get("expr"); !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("docs/spec-tests.md does not say what assertions see as %s", name)
		}
	}
}

// checkParallelCasesAreDeterministic compares test files run one case at
// a time with the same run many at once (TestOutputsHaveTheirDeclaredTypes
// runs every example's tests both ways): every case gives the same status,
// result, failures and calls either way (their golden files hold the order
// of the calls), and every case passes.
func checkParallelCasesAreDeterministic(t *testing.T, one, many []spectest.FileResult) {
	t.Helper()
	summary := func(results []spectest.FileResult) []string {
		var out []string
		for _, f := range results {
			if f.Err != nil {
				t.Fatalf("%s: %v", f.Path, f.Err)
			}
			for _, c := range f.Cases {
				line := fmt.Sprintf("%s/%s %s passed=%v failures=%v", f.Path, c.ID, c.Status, c.Passed, c.Failures)
				// A call that fails the run cuts short the calls made
				// with it, some before they were sent.
				if c.Status != "failed" {
					line += fmt.Sprintf(" calls=%d stand-ins=%d", c.Calls, c.StandIns)
				}
				out = append(out, line)
			}
		}
		return out
	}
	a, b := summary(one), summary(many)
	if len(a) != len(b) {
		t.Fatalf("%d cases one at a time, %d at once", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("one at a time:\n  %s\nsixteen at once:\n  %s", a[i], b[i])
		}
	}
	for _, line := range a {
		if !strings.Contains(line, "passed=true") {
			t.Errorf("%s", line)
		}
	}
}

// TestRepliesByPromptAndKey picks replies by patterns on the prompt and
// the call key, and shows that entries are tried in order, the case's
// before the file's, and that replies: is counted per agent.
func TestRepliesByPromptAndKey(t *testing.T) {
	test := `replies:
  - {reply: '{"said": "from the file"}'}
cases:
  - name: patterns
    replies:
      - {prompt: '^B, round 2:', reply: '{"said": "b2 by prompt"}'}
      - {key: 'round=1/a$', reply: '{"said": "a1 by key"}'}
      - {node: talk, replies: ['{"said": "first"}', '{"said": "second"}']}
    expect:
      - 'map(calls, .key + "=" + .reply) == ["talk/round=1/a={\"said\": \"a1 by key\"}", "talk/round=1/b={\"said\": \"first\"}", "talk/round=2/a={\"said\": \"first\"}", "talk/round=2/b={\"said\": \"b2 by prompt\"}"]'
  - name: the file's entry answers what the case's do not
    replies:
      - {agent: a, round: 2, reply: '{"said": "a2"}'}
    expect:
      - 'map(calls, .reply) == ["{\"said\": \"from the file\"}", "{\"said\": \"from the file\"}", "{\"said\": \"a2\"}", "{\"said\": \"from the file\"}"]'
      - all(calls, .scripted)
`
	dir := writeFiles(t, map[string]string{"spec.yaml": toolSpec, "spec.test.yaml": test})
	res := runFiles(t, dir)
	var out bytes.Buffer
	spectest.WriteFile(&out, res[0], true)
	if res[0].Failed() {
		t.Fatalf("failed:\n%s", out.String())
	}
}
