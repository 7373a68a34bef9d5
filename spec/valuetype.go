package spec

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// TypeKind is the kind of a value a node outputs.
type TypeKind int

// The kinds of values. AnyType is a value the spec does not describe.
const (
	AnyType TypeKind = iota
	StringType
	IntType
	FloatType
	BoolType
	ListType
	MapType
	ObjectType
)

// Type describes the values a node outputs, as far as the spec tells: a
// JSON reply's schema, a regular expression's named groups, a computed
// expression's result type. Expressions over nodes.ID.output are checked
// against it before a run, so `nodes.rate.output.confidence + 1` used as a
// condition is a validation error and not a failure after calls were paid
// for.
type Type struct {
	Kind TypeKind
	// Elem is the element type of a list or the value type of a map.
	Elem *Type
	// Fields are an object's properties, in the order the spec gave them.
	Fields []Field
}

// Field is a property of an object type.
type Field struct {
	Name string
	Type *Type
}

// Common types.
var (
	TypeAny    = &Type{Kind: AnyType}
	TypeString = &Type{Kind: StringType}
	TypeInt    = &Type{Kind: IntType}
	TypeFloat  = &Type{Kind: FloatType}
	TypeBool   = &Type{Kind: BoolType}
)

// ListOf is the type of lists of elem.
func ListOf(elem *Type) *Type { return &Type{Kind: ListType, Elem: orAny(elem)} }

// MapOf is the type of mappings from text to elem.
func MapOf(elem *Type) *Type { return &Type{Kind: MapType, Elem: orAny(elem)} }

// ObjectOf is the type of objects with these properties.
func ObjectOf(fields ...Field) *Type { return &Type{Kind: ObjectType, Fields: fields} }

func orAny(t *Type) *Type {
	if t == nil {
		return TypeAny
	}
	return t
}

// String names the type for diagnostics.
func (t *Type) String() string {
	if t == nil {
		return "any"
	}
	switch t.Kind {
	case StringType:
		return "string"
	case IntType:
		return "integer"
	case FloatType:
		return "number"
	case BoolType:
		return "boolean"
	case ListType:
		return "list of " + t.Elem.String()
	case MapType:
		return "mapping of " + t.Elem.String()
	case ObjectType:
		names := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			names[i] = f.Name
		}
		return "object {" + strings.Join(names, ", ") + "}"
	}
	return "any"
}

// Field returns the type of an object's property.
func (t *Type) Field(name string) (*Type, bool) {
	if t == nil || t.Kind != ObjectType {
		return nil, false
	}
	for _, f := range t.Fields {
		if f.Name == name {
			return f.Type, true
		}
	}
	return nil, false
}

// Reflect is the Go type expressions are type-checked against: objects
// become structs whose fields carry the property names as expr tags, so expr
// reports an unknown property and a value of the wrong type at validate time.
// The runtime keeps its plain values (JSON objects are maps); this type is
// for checking only.
func (t *Type) Reflect() reflect.Type {
	if t == nil {
		return anyType
	}
	switch t.Kind {
	case StringType:
		return reflect.TypeOf("")
	case IntType:
		return reflect.TypeOf(0)
	case FloatType:
		return reflect.TypeOf(0.0)
	case BoolType:
		return reflect.TypeOf(false)
	case ListType:
		return reflect.SliceOf(t.Elem.Reflect())
	case MapType:
		return reflect.MapOf(reflect.TypeOf(""), t.Elem.Reflect())
	case ObjectType:
		if len(t.Fields) == 0 {
			return reflect.TypeOf(map[string]any{})
		}
		fields := make([]reflect.StructField, len(t.Fields))
		for i, f := range t.Fields {
			fields[i] = reflect.StructField{
				Name: fmt.Sprintf("F%d", i),
				Type: f.Type.Reflect(),
				Tag:  reflect.StructTag(fmt.Sprintf("expr:%q", f.Name)),
			}
		}
		return reflect.StructOf(fields)
	}
	return anyType
}

// ReflectMap is Reflect with objects as the mappings a run holds them as
// (map[string]any): the type an expression is checked against once more
// when expr refuses it over the structs of Reflect, since keys(x), x[k]
// and the like take a mapping and not a struct.
func (t *Type) ReflectMap() reflect.Type {
	if t == nil {
		return anyType
	}
	switch t.Kind {
	case ListType:
		return reflect.SliceOf(t.Elem.ReflectMap())
	case MapType:
		return reflect.MapOf(reflect.TypeOf(""), t.Elem.ReflectMap())
	case ObjectType:
		return reflect.TypeOf(map[string]any{})
	}
	return t.Reflect()
}

var anyType = reflect.TypeOf((*any)(nil)).Elem()

// maxTypeDepth bounds how deep a schema is followed; deeper values are any.
const maxTypeDepth = 16

// TypeOfSchema reads the type of the values a JSON Schema (decoded from
// JSON) accepts. What it cannot pin down (anyOf of different types, $ref,
// no type at all) is any, which expressions may use freely.
func TypeOfSchema(schema any) *Type { return typeOfSchema(schema, 0) }

func typeOfSchema(schema any, depth int) *Type {
	m, ok := schema.(map[string]any)
	if !ok || depth > maxTypeDepth {
		return TypeAny
	}
	if c, ok := m["const"]; ok {
		return typeOfValue(c)
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		t := typeOfValue(e[0])
		for _, v := range e[1:] {
			if typeOfValue(v).Kind != t.Kind {
				return TypeAny
			}
		}
		return t
	}
	var kinds []string
	switch ty := m["type"].(type) {
	case string:
		kinds = []string{ty}
	case []any:
		for _, k := range ty {
			if s, ok := k.(string); ok && s != "null" {
				kinds = append(kinds, s)
			}
		}
	}
	if len(kinds) != 1 {
		for _, key := range []string{"anyOf", "oneOf"} {
			if alts, ok := m[key].([]any); ok && len(alts) > 0 {
				t := typeOfSchema(alts[0], depth+1)
				for _, a := range alts[1:] {
					if typeOfSchema(a, depth+1).Kind != t.Kind {
						return TypeAny
					}
				}
				return t
			}
		}
		if len(kinds) == 0 {
			if _, ok := m["properties"]; ok {
				kinds = []string{"object"}
			}
		}
		if len(kinds) != 1 {
			return TypeAny
		}
	}
	switch kinds[0] {
	case "string":
		return TypeString
	case "integer":
		return TypeInt
	case "number":
		return TypeFloat
	case "boolean":
		return TypeBool
	case "array":
		return ListOf(typeOfSchema(m["items"], depth+1))
	case "object":
		props, _ := m["properties"].(map[string]any)
		if len(props) == 0 {
			if ap, ok := m["additionalProperties"].(map[string]any); ok {
				return MapOf(typeOfSchema(ap, depth+1))
			}
			return MapOf(TypeAny)
		}
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
		t := &Type{Kind: ObjectType}
		for _, n := range names {
			t.Fields = append(t.Fields, Field{Name: n, Type: typeOfSchema(props[n], depth+1)})
		}
		return t
	}
	return TypeAny
}

func typeOfValue(v any) *Type {
	switch x := v.(type) {
	case string:
		return TypeString
	case bool:
		return TypeBool
	case float64:
		if x == float64(int64(x)) {
			return TypeInt
		}
		return TypeFloat
	case int, int64:
		return TypeInt
	}
	return TypeAny
}

// TypeOfGo reads the type of a Go value's type as expressions see it: the
// result type of a compiled expression, say. Structs become objects of their
// expr-tagged fields.
func TypeOfGo(t reflect.Type) *Type { return typeOfGo(t, 0) }

func typeOfGo(t reflect.Type, depth int) *Type {
	if t == nil || depth > maxTypeDepth {
		return TypeAny
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return TypeString
	case reflect.Bool:
		return TypeBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return TypeInt
	case reflect.Float32, reflect.Float64:
		return TypeFloat
	case reflect.Slice, reflect.Array:
		return ListOf(typeOfGo(t.Elem(), depth+1))
	case reflect.Map:
		// A mapping keyed by anything but text is written with text keys
		// (JSONValue), and read back so.
		return MapOf(typeOfGo(t.Elem(), depth+1))
	case reflect.Struct:
		out := &Type{Kind: ObjectType}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name := f.Tag.Get("expr")
			if name == "" {
				name = f.Name
			}
			out.Fields = append(out.Fields, Field{Name: name, Type: typeOfGo(f.Type, depth+1)})
		}
		return out
	}
	return TypeAny
}

// JSONValue is v with every mapping keyed by text, so that the journal can
// write it: expr's groupBy and fromPairs key their mappings by any value
// (groupBy(xs, .score) by numbers), which encoding/json refuses. Keys are
// written as fmt prints them; TypeOfGo types such mappings the same way, so
// expressions that read them are checked against text keys. Values that
// need no change are returned as they are.
func JSONValue(v any) any {
	out, _ := textKeyed(reflect.ValueOf(v), 0)
	if !out.IsValid() {
		return v
	}
	return out.Interface()
}

// textKeyed converts rv; changed is false when rv needed no change (and is
// returned as it was).
func textKeyed(rv reflect.Value, depth int) (out reflect.Value, changed bool) {
	if !rv.IsValid() || depth > 64 {
		return rv, false
	}
	switch rv.Kind() {
	case reflect.Interface, reflect.Pointer:
		if rv.IsNil() {
			return rv, false
		}
		if rv.Kind() == reflect.Pointer {
			return rv, false // structs the run builds: they have their own JSON
		}
		return textKeyed(rv.Elem(), depth+1)
	case reflect.Map:
		stringKeys := rv.Type().Key().Kind() == reflect.String
		conv := map[string]any{}
		changed := !stringKeys
		iter := rv.MapRange()
		for iter.Next() {
			ev, ch := textKeyed(iter.Value(), depth+1)
			changed = changed || ch
			var val any
			if ev.IsValid() {
				val = ev.Interface()
			}
			k := iter.Key()
			if k.Kind() == reflect.Interface && !k.IsNil() {
				k = k.Elem()
			}
			if k.Kind() == reflect.String {
				conv[k.String()] = val
			} else {
				conv[fmt.Sprint(k.Interface())] = val
			}
		}
		if !changed {
			return rv, false
		}
		return reflect.ValueOf(conv), true
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return rv, false
		}
		n := rv.Len()
		items := make([]reflect.Value, n)
		changedAny := false
		for i := 0; i < n; i++ {
			ev, ch := textKeyed(rv.Index(i), depth+1)
			items[i], changedAny = ev, changedAny || ch
		}
		if !changedAny {
			return rv, false
		}
		list := make([]any, n)
		for i, ev := range items {
			if ev.IsValid() {
				list[i] = ev.Interface()
			}
		}
		return reflect.ValueOf(list), true
	}
	return rv, false
}
