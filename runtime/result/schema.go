package result

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/debate-runner/runner/spec/value"
)

// SchemaID is the $id of the published schema of result.json.
const SchemaID = "https://github.com/debate-runner/runner/schemas/result.schema.json"

// externalDocs describe the fields of types this package borrows from
// package spec, which carry no doc tags; keys are "Type.json_name".
var externalDocs = map[string]string{
	"Message.id":         "the message's id (m1, m2, ...), in the order messages were recorded",
	"Message.node":       "the node that recorded it",
	"Message.round":      "the innermost loop's counter (absent outside loops)",
	"Message.goal":       "the goal (absent outside goals)",
	"Message.loops":      "every enclosing loop's iteration and foreach's item number (1-based) by the loop's name (absent outside loops)",
	"Message.turn":       "the conversation's turn (converse)",
	"Message.from":       "the author's agent id (timekeeper for the time keeper's messages)",
	"Message.to":         "the addressee's agent id; absent: everyone",
	"Message.whisper":    "only the author and the addressee saw it",
	"Message.private":    "only the author saw it (private thoughts, history summaries)",
	"Message.record":     "the record it belongs to (proposal, critique, message, private, summary, clarification, interjection, watch, ...)",
	"Message.content":    "the text",
	"Message.output":     "the parsed reply (json, tags, regex formats); absent when it is the trimmed content itself (a text reply)",
	"Message.fields":     "the tags of a tags-formatted reply, by lower-cased name",
	"Message.verdict":    "the verdict given with the message",
	"Message.reasoning":  "the reasons for the verdict",
	"Message.withdrawn":  "the author withdrew from the conversation",
	"Message.carried":    "copied from the author's earlier message without a model call (carry_over)",
	"Message.fallback":   "the output is the node's fallback: the reply could not be read even after its repairs",
	"Message.forced":     "the verdict was forced: the conversation made the author decide (force_verdict)",
	"Message.choice_map": "the option labels the call showed (shuffled choices), mapped to the options' original labels; the output is already mapped back",

	"GoalVerdicts.goal":     "the goal (empty outside goals)",
	"GoalVerdicts.node":     "the node the verdicts were given in",
	"GoalVerdicts.verdicts": "each agent's latest verdict, in the order first given",
	"GoalVerdicts.counts":   "how many agents chose each verdict",
	"GoalVerdicts.percent":  "the same as percentages of the agents with a verdict",

	"AgentVerdict.agent":     "the agent's id",
	"AgentVerdict.verdict":   "its latest verdict",
	"AgentVerdict.reasoning": "the reasons it gave with it",
	"AgentVerdict.withdrawn": "it withdrew from the conversation",
	"AgentVerdict.forced":    "the verdict was forced (force_verdict)",
}

// typeDocs describe the object types of the schema.
var typeDocs = map[string]string{
	"Message":      "a recorded message",
	"GoalVerdicts": "the verdicts given in one node during one goal",
	"AgentVerdict": "an agent's final verdict on a goal",
	"WhisperStat":  "whispers from one agent to another within a goal",
	"ToolCallInfo": "a tool call an agent made",
	"Rejection":    "a reply that broke a conversation's rules and was asked again",
	"UsageReport":  "usage in total, by agent, by node and by model",
	"Usage":        "calls, tokens, latency and cost",
	"Conclusion":   "whether the run reached its purpose, and the values that stood in for answers",
}

// Schema returns the JSON Schema (draft 2020-12) of result.json, made from
// the Result type: a field is required unless it is omitted when empty,
// and every field is described.
func Schema() ([]byte, error) {
	g := &schemaGen{defs: map[string]any{}}
	root, err := g.object(reflect.TypeOf(Result{}))
	if err != nil {
		return nil, err
	}
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["$id"] = SchemaID
	root["title"] = "runner result.json"
	root["description"] = fmt.Sprintf("The result of a run of a runner spec (result.json in the run directory), format version %d.", FormatVersion)
	props := root["properties"].(map[string]any)
	props["format_version"].(map[string]any)["const"] = FormatVersion
	root["$defs"] = g.defs
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

type schemaGen struct {
	defs map[string]any
}

var (
	timeType = reflect.TypeOf(time.Time{})
	anyType  = reflect.TypeOf((*any)(nil)).Elem()
	msgType  = reflect.TypeOf(value.Message{})
)

// typeOf is the schema of a Go type; named struct types go to $defs.
func (g *schemaGen) typeOf(t reflect.Type) (map[string]any, error) {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}, nil
	case t == anyType:
		return map[string]any{}, nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.typeOf(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int, reflect.Int64, reflect.Int32:
		return map[string]any{"type": "integer"}, nil
	case reflect.Float64, reflect.Float32:
		return map[string]any{"type": "number"}, nil
	case reflect.Slice:
		items, err := g.typeOf(t.Elem())
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("result schema: map key %s is not a string", t.Key())
		}
		vals, err := g.typeOf(t.Elem())
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "object", "additionalProperties": vals}, nil
	case reflect.Struct:
		name := t.Name()
		if _, ok := g.defs[name]; !ok {
			g.defs[name] = nil // a placeholder against recursion
			obj, err := g.object(t)
			if err != nil {
				return nil, err
			}
			if d := typeDocs[name]; d != "" {
				obj["description"] = d
			}
			g.defs[name] = obj
		}
		return map[string]any{"$ref": "#/$defs/" + name}, nil
	}
	return nil, fmt.Errorf("result schema: no schema for %s", t)
}

// object is the schema of a struct's JSON object.
func (g *schemaGen) object(t reflect.Type) (map[string]any, error) {
	props := map[string]any{}
	required := []string{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		s, err := g.typeOf(f.Type)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", t.Name(), f.Name, err)
		}
		if _, isRef := s["$ref"]; isRef {
			// Keywords beside $ref apply too in draft 2020-12, but keep
			// the reference alone and describe it through allOf for
			// editors that do not know that.
			s = map[string]any{"allOf": []any{s}}
		}
		doc := f.Tag.Get("doc")
		if doc == "" {
			doc = externalDocs[t.Name()+"."+name]
		}
		if doc == "" {
			return nil, fmt.Errorf("result schema: %s.%s has no description", t.Name(), f.Name)
		}
		s["description"] = doc
		if enum := f.Tag.Get("enum"); enum != "" {
			var vals []any
			for _, v := range strings.Split(enum, ",") {
				vals = append(vals, v)
			}
			s["enum"] = vals
		}
		props[name] = s
		omitted := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		if t == msgType && name == "output" {
			omitted = true // see Result.MarshalJSON
		}
		if !omitted {
			required = append(required, name)
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}, nil
}
