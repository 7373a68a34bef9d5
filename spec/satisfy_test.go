package spec_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// schemaSpec is a spec whose one ask node replies with JSON of schema
// (a flow mapping).
func schemaSpec(schema string) string {
	return `version: 1
name: s
templates:
  define:
    t/a: Answer.
agents:
  a: {name: A}
nodes:
  n:
    kind: ask
    agents: [a]
    template: t/a
    output: {format: json, schema: ` + schema + `}
flow: [n]
`
}

// TestSatisfiableSchemasPass: schemas a reply can satisfy, some only with
// a value the builder has to work for (bounds, multiples, patterns,
// formats, $ref, allOf, anyOf, uniqueItems), compile without a diagnostic:
// the satisfiability check builds an instance each accepts, and the JSON
// parser reads it back.
func TestSatisfiableSchemasPass(t *testing.T) {
	schemas := []string{
		`{type: object, required: [a], properties: {a: {type: string}}}`,
		`{type: object, required: [n], properties: {n: {type: integer, minimum: 3, maximum: 3}}}`,
		`{type: object, required: [n], properties: {n: {type: number, exclusiveMinimum: 0, exclusiveMaximum: 1}}}`,
		`{type: object, required: [n], properties: {n: {type: integer, multipleOf: 7, minimum: 10}}}`,
		`{type: object, required: [s], properties: {s: {type: string, pattern: '^[A-D]\)$'}}}`,
		`{type: object, required: [s], properties: {s: {type: string, minLength: 5, maxLength: 5}}}`,
		`{type: object, required: [d], properties: {d: {type: string, format: date-time}}}`,
		`{type: object, required: [l], properties: {l: {type: array, minItems: 3, uniqueItems: true, items: {type: string}}}}`,
		`{type: object, required: [x], properties: {x: {$ref: "#/$defs/x"}}, $defs: {x: {type: integer, minimum: 5}}}`,
		`{allOf: [{type: object, required: [a]}, {required: [b], properties: {b: {type: boolean}}}]}`,
		`{oneOf: [{type: string, pattern: '^[0-9]+$'}, {type: integer, minimum: 1}]}`,
		`{type: object, additionalProperties: false, required: [a], properties: {a: {enum: [x, y]}}}`,
		`{type: object, additionalProperties: false, required: [k1], patternProperties: {"^k[0-9]$": {type: integer}}}`,
		`{type: [string, "null"], const: null}`,
		`{type: array, items: {type: object, required: [id], properties: {id: {type: string}}}, minItems: 1}`,
	}
	reg := nodes.Registry()
	for _, s := range schemas {
		_, diags := spec.Compile("s.yaml", []byte(schemaSpec(s)), reg)
		if len(diags) > 0 {
			t.Errorf("schema %s:\n%s", s, diags.Error())
		}
	}
}

// TestUnsatisfiableSchemasRefused: each contradiction is an error at its
// keyword; one in an optional part a warning.
func TestUnsatisfiableSchemasRefused(t *testing.T) {
	cases := []struct{ schema, want string }{
		{`{not: {}}`, "s.yaml:13:42: error: node \"n\": output schema not: `not: {}` rejects every value"},
		{`{type: string, minLength: 4, maxLength: 2}`, "s.yaml:13:62: error: node \"n\": output schema minLength: minLength 4 is above maxLength 2"},
		{`{type: number, minimum: 4, exclusiveMaximum: 4}`, "s.yaml:13:60: error: node \"n\": output schema minimum: minimum 4 and exclusiveMaximum 4 leave no value between them"},
		{`{type: integer, minimum: 0.2, maximum: 0.8}`, "error: node \"n\": output schema minimum: no integer lies in the range"},
		{`{type: array, minItems: 2, maxItems: 1}`, "output schema minItems: minItems 2 is above maxItems 1"},
		{`{type: object, additionalProperties: false, required: [a]}`, `output schema required[0]: property "a" is required, but additionalProperties: false admits only no property`},
		{`{type: object, required: [a, b], maxProperties: 1}`, "output schema maxProperties: maxProperties 1 is less than the 2 required properties"},
		{`{type: string, enum: [1, 2]}`, "output schema enum: no enum value is of the type the schema allows (string)"},
		{`{type: integer, const: x}`, `output schema const: const "x" is a string, but type allows only integer`},
		{`{type: object, required: [a], properties: {a: false}}`, "output schema properties.a: false admits no value"},
		{`{type: object, properties: {a: {type: string, minLength: 2, maxLength: 1}}}`, "warning: node \"n\": output schema properties.a.minLength: minLength 2 is above maxLength 1"},
		{`{type: object, required: [x], properties: {x: {$ref: "#/$defs/x"}}, $defs: {x: {type: integer, minimum: 5, maximum: 1}}}`, "output schema $defs.x.minimum: minimum 5 is above maximum 1"},
	}
	reg := nodes.Registry()
	for _, tc := range cases {
		_, diags := spec.Compile("s.yaml", []byte(schemaSpec(tc.schema)), reg)
		var lines []string
		for _, d := range diags {
			lines = append(lines, d.String())
		}
		got := strings.Join(lines, "\n")
		if !strings.Contains(got, tc.want) {
			t.Errorf("schema %s:\ngot  %s\nwant %s", tc.schema, got, tc.want)
		}
		if strings.Contains(tc.want, "error:") || !strings.Contains(tc.want, "warning:") {
			if !diags.HasErrors() {
				t.Errorf("schema %s: no error", tc.schema)
			}
		} else if diags.HasErrors() {
			t.Errorf("schema %s: an error where a warning is due:\n%s", tc.schema, got)
		}
	}
}

// TestRegexExamples: the generated texts match and are not empty; a
// pattern that matches only empty text is known as such.
func TestRegexExamples(t *testing.T) {
	for _, p := range []string{`ANSWER: (\S+)`, `\\boxed\{([^}]*)\}`, `(?i)final answer is\s*([A-D])`, `(?P<a>\d+)\s*/\s*(?P<b>\d+)`, `ANSWER: (\d*)`, `^\s*(yes|no)\s*$`, `[-+]?\d+(\.\d+)?`} {
		re := regexp.MustCompile(p)
		ex := spec.RegexExamples(re)
		if len(ex) == 0 {
			t.Errorf("no example for %s", p)
		}
		for _, e := range ex {
			if e == "" || !re.MatchString(e) {
				t.Errorf("example %q for %s does not match", e, p)
			}
		}
		if spec.RegexMatchesOnlyEmpty(re) {
			t.Errorf("%s taken to match only empty text", p)
		}
	}
	for _, p := range []string{`^$`, `\b`, `()`, `(?:)*`, `^\s{0}$`} {
		if !spec.RegexMatchesOnlyEmpty(regexp.MustCompile(p)) {
			t.Errorf("%s matches only empty text; not seen", p)
		}
	}
}
