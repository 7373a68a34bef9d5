package spec_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// schemaGen writes random JSON Schemas from the keywords that speak of
// types and values (type, const, enum, allOf, anyOf, oneOf, not, $ref into
// $defs); with narrow set, also keywords that narrow values in other ways
// (minLength, maximum, items, required...).
type schemaGen struct {
	rnd    *rand.Rand
	narrow bool
}

// pool are the values consts and enums take; universe adds, for each
// type, values none of them is, so that over type-and-value schemas some
// value of the universe is admitted whenever any value is.
var (
	pool     = []any{nil, true, false, 0.0, 1.0, 1.5, "a", "b", []any{}, map[string]any{}}
	universe = append(append([]any{}, pool...), 2.0, -7.0, 2.5, "", "zz", []any{1.0}, []any{"a", "b"}, map[string]any{"k": 1.0}, map[string]any{"x": "y"})
	jsTypes  = []string{"null", "boolean", "integer", "number", "string", "array", "object"}
)

func (g *schemaGen) value() any { return pool[g.rnd.Intn(len(pool))] }

func (g *schemaGen) leaf() map[string]any {
	m := map[string]any{}
	switch g.rnd.Intn(6) {
	case 0, 1:
		m["type"] = jsTypes[g.rnd.Intn(len(jsTypes))]
	case 2:
		m["type"] = []any{jsTypes[g.rnd.Intn(len(jsTypes))], jsTypes[g.rnd.Intn(len(jsTypes))]}
	case 3:
		m["const"] = g.value()
	case 4:
		var e []any
		for i := 0; i < 1+g.rnd.Intn(3); i++ {
			e = append(e, g.value())
		}
		m["enum"] = e
	}
	if g.narrow && g.rnd.Intn(3) == 0 {
		switch g.rnd.Intn(5) {
		case 0:
			m["minLength"] = float64(g.rnd.Intn(3))
		case 1:
			m["maximum"] = float64(g.rnd.Intn(3))
		case 2:
			m["items"] = g.schema(2)
		case 3:
			m["required"] = []any{"x"}
		case 4:
			m["minItems"] = float64(g.rnd.Intn(2))
		}
	}
	return m
}

func (g *schemaGen) schema(depth int) any {
	if depth <= 0 || g.rnd.Intn(3) == 0 {
		if g.rnd.Intn(12) == 0 {
			return g.rnd.Intn(2) == 0
		}
		return g.leaf()
	}
	m := map[string]any{}
	if g.rnd.Intn(2) == 0 {
		m = g.leaf()
	}
	branches := func() []any {
		var bs []any
		for i := 0; i < 1+g.rnd.Intn(3); i++ {
			bs = append(bs, g.schema(depth-1))
		}
		return bs
	}
	switch g.rnd.Intn(5) {
	case 0:
		m["allOf"] = branches()
	case 1:
		m["anyOf"] = branches()
	case 2:
		m["oneOf"] = branches()
	case 3:
		m["not"] = g.schema(depth - 1)
	case 4:
		m["$ref"] = fmt.Sprintf("#/$defs/d%d", g.rnd.Intn(3))
	}
	return m
}

// TestSchemaKeywordsTogether is the property of the satisfiability check
// over what types and values a schema admits: for random schemas of
// type, const, enum, allOf, anyOf, oneOf, not and $ref, validate refuses
// the output schema exactly when no value satisfies it (decided by the
// JSON Schema validator over values of every type), and otherwise accepts
// it with an instance it builds; with keywords that narrow values in other
// ways mixed in, a refused schema still admits no value of the universe
// (no false refusal). Failures found are kept in testdata/schemaset/.
func TestSchemaKeywordsTogether(t *testing.T) {
	reg := nodes.Registry()
	check := func(t *testing.T, name string, x, defs any, narrow bool) (refused bool) {
		t.Helper()
		root := map[string]any{"type": "object", "required": []any{"x"}, "properties": map[string]any{"x": x}, "$defs": defs}
		data, err := json.Marshal(root)
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		c.Draft = jsonschema.Draft2020
		if err := c.AddResource("mem:///s.json", strings.NewReader(string(data))); err != nil {
			t.Fatal(err)
		}
		sch, err := c.Compile("mem:///s.json")
		if err != nil {
			return false // not a schema the validator takes: not this property's
		}
		var admitted any = nil
		some := false
		for _, u := range universe {
			if sch.Validate(map[string]any{"x": u}) == nil {
				admitted, some = u, true
				break
			}
		}
		_, diags := spec.Compile("s.yaml", []byte(schemaSpec(string(data))), reg)
		refused = diags.HasErrors()
		switch {
		case refused && some:
			t.Errorf("%s: refused, but x = %s satisfies it:\n%s\n%s", name, mustJSON(admitted), data, diags.Error())
		case !narrow && !refused && !some:
			t.Errorf("%s: accepted, but no value satisfies it:\n%s\n%s", name, data, diags.Error())
		case !narrow && !refused && strings.Contains(diags.Error(), "could not build"):
			// (warnings on dead optional parts are right: the schema is
			// satisfiable; one that no instance was found for is not)
			t.Errorf("%s: accepted, but validate found no instance:\n%s\n%s", name, data, diags.Error())
		}
		return refused
	}
	kept, _ := os.ReadDir("testdata/schemaset")
	for _, e := range kept {
		data, err := os.ReadFile("testdata/schemaset/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			X, Defs any
			Narrow  bool
		}
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		check(t, e.Name(), c.X, c.Defs, c.Narrow)
	}
	seed := rand.Int63()
	if s := os.Getenv("SCHEMASET_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (SCHEMASET_SEED to repeat)", seed)
	n := 400
	if testing.Short() || raceEnabled {
		n = 50 // a new seed each run
	}
	refused := map[bool]int{}
	total := map[bool]int{}
	for i := 0; i < n && !t.Failed(); i++ {
		narrow := i%3 == 2
		g := &schemaGen{rnd: rand.New(rand.NewSource(seed + int64(i))), narrow: narrow}
		defs := map[string]any{}
		for k := 0; k < 3; k++ {
			defs[fmt.Sprintf("d%d", k)] = g.schema(2)
		}
		x := g.schema(3)
		total[narrow]++
		if check(t, fmt.Sprintf("seed %d", seed+int64(i)), x, defs, narrow) {
			refused[narrow]++
		}
		if t.Failed() {
			data, _ := json.Marshal(map[string]any{"x": x, "defs": defs, "narrow": narrow})
			t.Logf("keep it: testdata/schemaset/seed-%d.json:\n%s", seed+int64(i), data)
		}
	}
	t.Logf("type-and-value schemas: %d, %d refused; with other keywords: %d, %d refused", total[false], refused[false], total[true], refused[true])
	if n >= 100 && (refused[false] == 0 || refused[false] == total[false]) {
		t.Errorf("the generator made no refused or no accepted schema: it proves nothing")
	}
}

func mustJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}
