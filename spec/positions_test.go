package spec_test

import (
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
)

// validTail completes a spec; cases put their mistake in front of it.
const validTail = `agents:
  a: {name: Alice}
  b: {name: Bob}
templates:
  define:
    t/ask: "Hi {{.Agent.Name}}"
nodes:
  answer: {kind: ask, agents: [a, b], template: t/ask}
flow: [answer]
`

// TestSchemaErrorPositions checks that each schema complaint lands on the
// key or value it is about, with a message in the spec's own words. Line 1
// is "version: 1" and line 2 "name: pos", so the mistakes start on line 3.
func TestSchemaErrorPositions(t *testing.T) {
	tests := []struct {
		name string
		head string // spec lines after version and name
		want string // LINE:COL: MESSAGE of the first error
	}{
		{"id with space", "inputs:\n  \"x y\": {}\n", `4:3: "x y" is not a valid id in inputs (use letters, digits, '_' and '-', starting with a letter or '_')`},
		{"id with slash", "vars:\n  a/b: 1\n", `4:3: "a/b" is not a valid id in vars (use letters, digits, '_' and '-', starting with a letter or '_')`},
		{"id with tilde", "vars:\n  a~b: 1\n", `4:3: "a~b" is not a valid id in vars (use letters, digits, '_' and '-', starting with a letter or '_')`},
		{"id with accent", "vars:\n  café: 1\n", `4:3: "café" is not a valid id in vars (use letters, digits, '_' and '-', starting with a letter or '_')`},
		{"id with percent", "vars:\n  \"100%\": 1\n", `4:3: "100%" is not a valid id in vars (use letters, digits, '_' and '-', starting with a letter or '_')`},
		{"nested value", "models:\n  m: {model: x, temperature: 3}\n", `4:30: models.m.temperature: 3 is too large (at most 2)`},
		{"empty string", "models:\n  m: {model: \"\"}\n", `4:14: models.m.model must not be empty`},
		{"duplicate option", "verdicts:\n  v: [A, B, A]\n", `4:13: verdicts.v: "A" is listed twice`},
		{"empty list", "verdicts:\n  v: []\n", `4:6: verdicts.v must have at least one entry`},
		{"duration", "defaults: {timeout: soon}\n", `3:21: defaults.timeout: "soon" is not a duration such as 90s, 2m or 1m30s`},
		{"env var name", "endpoints:\n  e: {base_url: \"http://127.0.0.1\", api_key_env: A-B}\n", `4:50: endpoints.e.api_key_env: "A-B" is not a valid environment variable name (letters, digits and '_')`},
		{"type in flow mapping", "models:\n  default: gpt\n  m: {model: x, endpoint: e}\nendpoints:\n  e: {base_url: \"http://127.0.0.1\", timeout: 1}\n", `7:46: endpoints.e.timeout: expected a string, found an integer "1"`},
		{"alias value", "description: &d [1, 2]\nvars:\n  v: *d\nhistory: {summarize: *d}\n", `3:14: description: expected a string, found a list`},
		{"unknown top key", "base: &base {name: A}\n", `3:1: unknown key "base" in the spec (did you mean "name"?)`},
		{"list item mapping", "goals:\n  - {id: g1}\n  - description: no id\n", `5:5: goals[1] is missing required key "id"`},
		{"anyOf mapping branch", "history:\n  summarize: {over_chars: 10, templte: x}\n", `4:3: history.summarize is missing required key "template"`},
		{"key with a quote", "inputs:\n  q: {\"it's\": true}\n", `4:7: unknown key "it's" in inputs.q; allowed: default, description, enum, kind, max_bytes, max_chars, maximum, minimum, pattern, required`},
		{"key with a zero-width space", "inputs:\n  q: {description: x, \"\\u200brequired\": true}\n", `4:23: unknown key "\u200brequired" in inputs.q (did you mean "required"?)`},
		{"quoted key", "\"inputs\":\n  q: {requird: true}\n", `4:7: unknown key "requird" in inputs.q (did you mean "required"?)`},
	}
	reg := nodes.Registry()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := "version: 1\nname: pos\n" + tc.head + validTail
			_, diags := spec.Compile("pos.yaml", []byte(src), reg)
			errs := diags.Errors()
			if len(errs) == 0 {
				t.Fatalf("no error for:\n%s", src)
			}
			d := errs[0]
			got := strings.TrimPrefix(d.String(), "pos.yaml:")
			got = strings.Replace(got, " error: ", " ", 1)
			if got != tc.want {
				t.Errorf("got  %s\nwant %s\nall:\n%s", got, tc.want, diags.Error())
			}
		})
	}
}

// TestSchemaErrorsNeverAtOrigin mutates a valid spec in many small ways and
// checks that no schema error falls back to 1:1 when the mistake is
// elsewhere: only complaints about the whole spec may point at its start.
func TestSchemaErrorsNeverAtOrigin(t *testing.T) {
	base := "version: 1\nname: pos\n" + validTail
	mutations := []struct{ old, new string }{
		{"{name: Alice}", "{name: [Alice]}"},
		{"{name: Alice}", "{nmae: Alice}"},
		{"{name: Alice}", "7"},
		{"a: {name", "\"a b\": {name"},
		{"[a, b]", "{a: b}"},
		{"kind: ask", "kind: 3"},
		{"kind: ask", "kind: [ask]"},
		{"template: t/ask", "template: {x: 1}"},
		{"flow: [answer]", "flow: [[answer]]"},
		{"flow: [answer]", "flow: [{loop: {max: x, do: answer}}]"},
		{"flow: [answer]", "flow: [{loop: {do: [answer], as: [x]}}]"},
		{"flow: [answer]", "flow: [{if: [true], then: [answer]}]"},
		{"flow: [answer]", "flow: [{foreach: {in: goals}}]"},
		{"flow: [answer]", "flow: [{while: true}]"},
		{"define:", "define: 3\n    x:"},
		{"t/ask: ", "\"t ask\": "},
		{"version: 1", "version: 1.5"},
		{"name: pos", "name: \"a b\""},
	}
	reg := nodes.Registry()
	for _, m := range mutations {
		src := strings.Replace(base, m.old, m.new, 1)
		if src == base {
			t.Fatalf("mutation %q does not apply", m.old)
		}
		_, diags := spec.Compile("m.yaml", []byte(src), reg)
		if !diags.HasErrors() {
			t.Errorf("%q -> %q: no error", m.old, m.new)
			continue
		}
		for _, d := range diags {
			if d.Pos == (syntax.Pos{Line: 1, Col: 1}) && !strings.HasPrefix(d.Message, "the spec") && !strings.HasPrefix(d.Message, "version") {
				t.Errorf("%q -> %q: reported at 1:1: %s", m.old, m.new, d.Message)
			}
			if d.Pos.Line == 0 {
				t.Errorf("%q -> %q: no position: %s", m.old, m.new, d.Message)
			}
		}
	}
}

// TestMergeKeys checks that keys merged with "<<" reach the plan, not only
// the schema: merged outputs were validated and then dropped.
func TestMergeKeys(t *testing.T) {
	src := `version: 1
name: merge
templates: {define: {t/x: hi}}
models:
  base: &base {model: m, temperature: 0.2}
  judge: {<<: *base, temperature: 0.1}
agents:
  a: {name: A}
  b: {name: B}
nodes:
  n: &ask {kind: ask, agents: [a, b], template: t/x}
  m: {<<: *ask, agents: [b]}
flow: [n, m]
outputs:
  <<: [{first: nodes.n.text, second: "1"}, {first: "2", third: "3"}]
  second: nodes.m.text
`
	plan, diags := spec.Compile("merge.yaml", []byte(src), nodes.Registry())
	if plan == nil {
		t.Fatalf("merges refused:\n%s", diags.Format())
	}
	var outs []string
	for _, o := range plan.Outputs {
		outs = append(outs, o.Name+"="+o.Program.Source)
	}
	if got, want := strings.Join(outs, " "), "first=nodes.n.text third=3 second=nodes.m.text"; got != want {
		t.Errorf("outputs %q, want %q", got, want)
	}
	if m := plan.Models["judge"]; m == nil || m.Model != "m" || m.Temperature == nil || *m.Temperature != 0.1 {
		t.Errorf("merged model: %+v", m)
	}
	if ag := plan.Nodes["m"].Agents; len(ag) != 1 || ag[0].ID != "b" {
		t.Errorf("node m agents: %v", ag)
	}
}
