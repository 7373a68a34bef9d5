package yamljson

import (
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"
)

const checkSchema = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "name": {"type": "string"},
    "cases": {"type": "array", "items": {
      "oneOf": [
        {"type": "string"},
        {"type": "object", "required": ["id"], "additionalProperties": false,
         "properties": {"id": {"type": "string"}, "n": {"type": "integer"}}}
      ]
    }}
  }
}`

func TestCheckPlacesEachProblem(t *testing.T) {
	c := jsonschema.NewCompiler()
	if err := c.AddResource("s.json", strings.NewReader(checkSchema)); err != nil {
		t.Fatal(err)
	}
	schema := c.MustCompile("s.json")
	var doc yaml.Node
	src := "name: x\nextra: 1\ncases:\n  - fine\n  - {n: 2}\n  - {id: a, n: two}\n"
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	pos := map[string][2]int{}
	got, err := Check(&doc, "test files", schema, pos)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, p := range got {
		lines = append(lines, fmt.Sprintf("%d:%d %s %s", p.Line, p.Col, Describe(p.Pointer), p.Message))
	}
	want := []string{
		"2:1  additionalProperties 'extra' not allowed", // at the key, not the mapping
		"5:5 cases[1] missing properties: 'id'",         // the mapping branch, not "expected string"
		"6:13 cases[2].n expected integer, but got string",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if p := pos["/cases/2/id"]; p != [2]int{6, 6} { // at its key
		t.Errorf("pos of /cases/2/id = %v", p)
	}
}
