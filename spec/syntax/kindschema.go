package syntax

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// KindSchema is what the schema of a spec needs of a node kind: its name,
// its one-line description and the JSON Schema fragment of its fields (see
// Kind, which the loader's kinds implement).
type KindSchema interface {
	Name() string
	Description() string
	Schema() []byte
}

// Schema is the JSON Schema of a spec for a set of node kinds: the base
// schema with one definition per kind, built and compiled once.
type Schema struct {
	kinds []KindSchema

	once     sync.Once
	schema   []byte
	compiled *jsonschema.Schema
	raw      map[string]any
	err      error
}

// NewSchema returns the schema of a spec whose nodes are of these kinds.
func NewSchema[K KindSchema](kinds ...K) *Schema {
	s := &Schema{}
	for _, k := range kinds {
		s.kinds = append(s.kinds, k)
	}
	return s
}

// JSON is the schema's text (what `runner schema` prints and what
// schemas/spec.schema.json must equal).
func (r *Schema) JSON() ([]byte, error) {
	r.build()
	return r.schema, r.err
}

// commonNodeProperties are the fields every node has, whatever its kind.
var commonNodeProperties = map[string]any{
	"kind":        map[string]any{"type": "string", "description": "What the node does."},
	"agents":      map[string]any{"description": "Agents taking part, by id, in order. A single id is accepted.", "anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": 1}}},
	"description": map[string]any{"type": "string", "description": "What this node is for; shown in graphs and reports."},
}

func (r *Schema) build() {
	r.once.Do(func() {
		var base map[string]any
		// Numbers stay as written: the seeds' 64-bit bounds are not
		// exact as float64.
		dec := json.NewDecoder(bytes.NewReader(baseSchema))
		dec.UseNumber()
		if err := dec.Decode(&base); err != nil {
			r.err = fmt.Errorf("base schema: %w", err)
			return
		}
		defs := base["$defs"].(map[string]any)
		names := make([]string, len(r.kinds))
		for i, k := range r.kinds {
			names[i] = k.Name()
		}
		kindEnum := make([]any, len(names))
		var branches []any
		for i, k := range r.kinds {
			kindEnum[i] = k.Name()
			var frag struct {
				Properties map[string]any `json:"properties"`
				Required   []string       `json:"required"`
			}
			if err := json.Unmarshal(k.Schema(), &frag); err != nil {
				r.err = fmt.Errorf("schema of node kind %q: %w", k.Name(), err)
				return
			}
			props := map[string]any{}
			for name, p := range commonNodeProperties {
				props[name] = p
			}
			for name, p := range frag.Properties {
				props[name] = p
			}
			props["kind"] = map[string]any{"const": k.Name(), "description": k.Description()}
			required := append([]string{"kind"}, frag.Required...)
			sort.Strings(required[1:])
			def := "node_" + k.Name()
			defs[def] = map[string]any{
				"type":                 "object",
				"description":          k.Description(),
				"additionalProperties": false,
				"required":             required,
				"properties":           props,
			}
			branches = append(branches, map[string]any{
				"if":   map[string]any{"properties": map[string]any{"kind": map[string]any{"const": k.Name()}}, "required": []any{"kind"}},
				"then": map[string]any{"$ref": "#/$defs/" + def},
			})
		}
		node := defs["node"].(map[string]any)
		node["properties"] = map[string]any{"kind": map[string]any{
			"description": "What the node does: " + joinNames(names) + ".",
			"enum":        kindEnum,
		}}
		if len(branches) > 0 {
			node["allOf"] = branches
		}
		r.raw = base
		out, err := json.MarshalIndent(base, "", "  ")
		if err != nil {
			r.err = err
			return
		}
		r.schema = append(out, '\n')
		c := jsonschema.NewCompiler()
		c.Draft = jsonschema.Draft2020
		c.AssertFormat = true
		const url = "https://github.com/debate-runner/runner/schemas/spec.schema.json"
		if err := c.AddResource(url, bytesReader(r.schema)); err != nil {
			r.err = err
			return
		}
		r.compiled, r.err = c.Compile(url)
	})
}

func joinNames(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}
