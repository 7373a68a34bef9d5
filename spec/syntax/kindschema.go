package syntax

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
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

// ProviderSchema is what the schema of a spec needs of a provider kind:
// its name, its one-line description and the JSON Schema fragment of the
// endpoint settings only it takes.
type ProviderSchema interface {
	Name() string
	Description() string
	Settings() []byte
}

// Schema is the JSON Schema of a spec for a set of node kinds and provider
// kinds: the base schema with one definition per node kind, and the
// endpoint's kinds and settings from the provider kinds, built and
// compiled once.
type Schema struct {
	kinds     []KindSchema
	providers []ProviderSchema

	once     sync.Once
	schema   []byte
	compiled *jsonschema.Schema
	raw      map[string]any
	err      error
}

// NewSchema returns the schema of a spec whose nodes are of these kinds
// and whose endpoints are of these provider kinds.
func NewSchema[K KindSchema, P ProviderSchema](kinds []K, providers []P) *Schema {
	s := &Schema{}
	for _, k := range kinds {
		s.kinds = append(s.kinds, k)
	}
	for _, p := range providers {
		s.providers = append(s.providers, p)
	}
	return s
}

// FragmentProperties are the names of the properties of a schema fragment
// ({"properties": {...}}), sorted; none when it has none or is not JSON.
func FragmentProperties(frag []byte) []string {
	var f struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if len(frag) == 0 || json.Unmarshal(frag, &f) != nil {
		return nil
	}
	return SortedKeys(f.Properties)
}

// SortedKeys are a map's keys, sorted.
func SortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// endpointSchema puts the provider kinds into the endpoint's definition:
// the enum of `kind:` with each kind's description, and each kind's own
// settings beside the settings every endpoint has.
func (r *Schema) endpointSchema(defs map[string]any) error {
	ep, ok := defs["endpoint"].(map[string]any)
	if !ok {
		return fmt.Errorf("base schema: no endpoint definition")
	}
	props := ep["properties"].(map[string]any)
	enum := make([]any, len(r.providers))
	var desc []string
	var branches []any
	for i, p := range r.providers {
		enum[i] = p.Name()
		desc = append(desc, p.Name()+": "+p.Description())
		var frag struct {
			Properties map[string]any `json:"properties"`
			Required   []any          `json:"required"`
		}
		if s := p.Settings(); len(s) > 0 {
			dec := json.NewDecoder(bytes.NewReader(s))
			dec.UseNumber()
			if err := dec.Decode(&frag); err != nil {
				return fmt.Errorf("endpoint settings of provider kind %q: %w", p.Name(), err)
			}
		}
		for name, s := range frag.Properties {
			if _, dup := props[name]; dup {
				return fmt.Errorf("provider kind %q declares endpoint setting %q, which another kind or every endpoint has", p.Name(), name)
			}
			props[name] = s
		}
		if len(frag.Required) > 0 {
			// The first kind is that of an endpoint without kind:, which
			// the condition (kind absent, or this kind) holds for.
			cond := map[string]any{"properties": map[string]any{"kind": map[string]any{"const": p.Name()}}}
			if i > 0 {
				cond["required"] = []any{"kind"}
			}
			branches = append(branches, map[string]any{"if": cond, "then": map[string]any{"required": frag.Required}})
		}
	}
	delete(ep, "required")
	if len(branches) > 0 {
		ep["allOf"] = branches
	}
	kind := map[string]any{"type": "string", "description": "The endpoint's provider kind."}
	if len(enum) > 0 {
		kind["enum"], kind["description"] = enum, strings.Join(desc, " ")
	}
	props["kind"] = kind
	return nil
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
		if err := r.endpointSchema(defs); err != nil {
			r.err = err
			return
		}
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
		r.compiled, r.err = compileAsDraft7(base)
	})
}

// draft7 is the meta-schema the spec schema is compiled against.
const draft7 = "http://json-schema.org/draft-07/schema#"

// compileAsDraft7 compiles the spec schema, published as draft 2020-12,
// declared as draft-07. Compiling a schema validates it against its
// meta-schema first, and 2020-12's (dynamic references, vocabularies) made
// that three quarters of the compile: some 20 ms of every command that
// reads a spec. The schema uses only keywords that mean the same in both
// drafts and no $ref beside other assertions (Draft7Keywords, which
// TestSpecSchemaMeansTheSameInDraft7 holds it to), so the two validate
// every document alike; the test also checks it against 2020-12's
// meta-schema, as the compile did.
func compileAsDraft7(base map[string]any) (*jsonschema.Schema, error) {
	doc := maps.Clone(base)
	doc["$schema"] = draft7
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft7
	c.AssertFormat = true
	const url = "https://github.com/debate-runner/runner/schemas/spec.schema.json"
	if err := c.AddResource(url, bytesReader(data)); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// Draft7Keywords are the keywords of JSON Schema that validate, or
// annotate, alike in drafts 07 and 2020-12 when $ref stands alone (other
// keywords beside a $ref are ignored in draft-07) and items is one
// schema. $defs is no keyword in draft-07, but a $ref's JSON pointer
// reaches into it all the same.
var Draft7Keywords = map[string]bool{
	"$schema": true, "$id": true, "$ref": true, "$defs": true, "$comment": true,
	"title": true, "description": true, "default": true, "examples": true,
	"type": true, "enum": true, "const": true,
	"properties": true, "additionalProperties": true, "required": true, "propertyNames": true,
	"minProperties": true, "maxProperties": true, "patternProperties": true,
	"items": true, "minItems": true, "maxItems": true, "uniqueItems": true, "contains": true,
	"minLength": true, "maxLength": true, "pattern": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"allOf": true, "anyOf": true, "oneOf": true, "not": true, "if": true, "then": true, "else": true,
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
