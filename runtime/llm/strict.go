package llm

import "encoding/json"

// strictKeywords are the JSON Schema keywords OpenAI's strict structured
// outputs accept. A schema using any other (minLength, default, $schema,
// patternProperties, ...) is sent with strict false rather than changed:
// the reply is checked against the node's schema either way.
var strictKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "enum": true, "const": true, "anyOf": true, "$defs": true, "definitions": true, "$ref": true,
	"description": true, "title": true,
	"pattern": true, "format": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minItems": true, "maxItems": true,
}

// Strictable reports whether a schema can be sent with strict: true as it
// is: an object at the root, every object closed (additionalProperties
// false) with all of its properties required, and only keywords strict mode
// supports.
func Strictable(schema json.RawMessage) bool {
	var v any
	if json.Unmarshal(schema, &v) != nil {
		return false
	}
	root, ok := v.(map[string]any)
	if !ok || root["type"] != "object" {
		return false
	}
	return strictNode(root)
}

func strictNode(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for k := range m {
		if !strictKeywords[k] {
			return false
		}
	}
	if props, ok := m["properties"].(map[string]any); ok || m["type"] == "object" {
		if m["additionalProperties"] != false {
			return false
		}
		required := map[string]bool{}
		list, _ := m["required"].([]any)
		for _, r := range list {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
		for name, p := range props {
			if !required[name] || !strictNode(p) {
				return false
			}
		}
	}
	if items, ok := m["items"]; ok && !strictNode(items) {
		return false
	}
	if any, ok := m["anyOf"].([]any); ok {
		for _, s := range any {
			if !strictNode(s) {
				return false
			}
		}
	}
	for _, key := range []string{"$defs", "definitions"} {
		if defs, ok := m[key].(map[string]any); ok {
			for _, s := range defs {
				if !strictNode(s) {
					return false
				}
			}
		}
	}
	return true
}
