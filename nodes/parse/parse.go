// Package parse turns model replies into structured outputs (text, json,
// tags, regex) and explains, for repair prompts, why a reply was rejected.
package parse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/debate-runner/runner/internal/tags"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Spec says how to parse a reply.
type Spec struct {
	Format string // text (default), json, tags, regex
	Schema *jsonschema.Schema
	// Pattern, then Patterns, are tried in order for format regex: the
	// first that matches gives the output.
	Pattern  *regexp.Regexp
	Patterns []*regexp.Regexp
	Fields   []string
}

// Output is a parsed reply.
type Output struct {
	Value  any
	Fields map[string]string
}

// Parse parses a reply. The error says what is wrong in words a model can act on.
func (s Spec) Parse(reply string) (Output, error) {
	switch s.Format {
	case "", "text":
		text := strings.TrimSpace(reply)
		if text == "" {
			return Output{}, errors.New("the reply is empty")
		}
		return Output{Value: text}, nil
	case "json":
		v, err := JSON(reply)
		if err != nil {
			return Output{}, err
		}
		if s.Schema != nil {
			if err := s.Schema.Validate(v); err != nil {
				return Output{}, fmt.Errorf("the JSON does not match the required schema: %s", schemaError(err))
			}
		}
		return Output{Value: v}, nil
	case "tags":
		res := tags.Parse(reply, s.Fields...)
		fields := map[string]string{}
		for _, f := range res.Fields {
			k := strings.ToLower(f.Name)
			if _, dup := fields[k]; !dup {
				fields[k] = f.Value
			}
		}
		var missing []string
		for _, f := range s.Fields {
			if _, ok := fields[strings.ToLower(f)]; !ok {
				missing = append(missing, "<"+f+">")
			}
		}
		if len(missing) > 0 {
			return Output{}, fmt.Errorf("the reply lacks the required tag(s) %s", strings.Join(missing, ", "))
		}
		out := map[string]any{}
		for k, v := range fields {
			out[k] = v
		}
		return Output{Value: out, Fields: fields}, nil
	case "regex":
		patterns := s.Patterns
		if s.Pattern != nil {
			patterns = append([]*regexp.Regexp{s.Pattern}, patterns...)
		}
		if len(patterns) == 0 {
			return Output{}, errors.New("no pattern configured")
		}
		var re *regexp.Regexp
		var all [][]string
		for _, p := range patterns {
			if all = p.FindAllStringSubmatch(reply, -1); len(all) > 0 {
				re = p
				break
			}
		}
		if re == nil {
			if len(patterns) == 1 {
				return Output{}, fmt.Errorf("the reply does not contain the required form (pattern %s)", patterns[0])
			}
			forms := make([]string, len(patterns))
			for i, p := range patterns {
				forms[i] = p.String()
			}
			return Output{}, fmt.Errorf("the reply does not contain the required form (patterns %s)", strings.Join(forms, ", "))
		}
		m := all[len(all)-1] // the final answer is the last one given
		names := re.SubexpNames()
		named := map[string]any{}
		for i, n := range names {
			if n != "" && i < len(m) {
				named[n] = strings.TrimSpace(m[i])
			}
		}
		if len(named) > 0 {
			return Output{Value: named}, nil
		}
		if len(m) > 1 {
			return Output{Value: strings.TrimSpace(m[1])}, nil
		}
		return Output{Value: strings.TrimSpace(m[0])}, nil
	}
	return Output{}, fmt.Errorf("unknown output format %q", s.Format)
}

// JSON extracts a JSON value from a reply: the whole reply, a fenced code
// block, or the outermost {...} or [...] span.
func JSON(reply string) (any, error) {
	candidates := []string{strings.TrimSpace(reply)}
	if i := strings.Index(reply, "```"); i >= 0 {
		rest := reply[i+3:]
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			rest = rest[nl+1:]
		}
		if j := strings.Index(rest, "```"); j >= 0 {
			candidates = append(candidates, strings.TrimSpace(rest[:j]))
		}
	}
	for _, open := range []string{"{", "["} {
		close := map[string]string{"{": "}", "[": "]"}[open]
		if i, j := strings.Index(reply, open), strings.LastIndex(reply, close); i >= 0 && j > i {
			candidates = append(candidates, reply[i:j+1])
		}
	}
	var firstErr error
	for _, c := range candidates {
		if c == "" {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(c)))
		var v any
		if err := dec.Decode(&v); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if dec.More() {
			continue
		}
		return v, nil
	}
	if firstErr == nil {
		firstErr = errors.New("no JSON found")
	}
	return nil, fmt.Errorf("the reply is not valid JSON (%v)", firstErr)
}

func schemaError(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var msgs []string
	var walk func(v *jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) == 0 {
			loc := v.InstanceLocation
			if loc == "" {
				loc = "/"
			}
			msgs = append(msgs, fmt.Sprintf("at %s: %s", loc, v.Message))
			return
		}
		for _, c := range v.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(msgs) > 5 {
		msgs = append(msgs[:5], fmt.Sprintf("and %d more", len(msgs)-5))
	}
	return strings.Join(msgs, "; ")
}

// TruncatedError is a reply that could not be used and was cut off at the
// token limit: its fault is its length, not its form, and the repair asks
// for less.
type TruncatedError struct{ Err error }

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("the reply was truncated at the token limit (finish_reason length) before it was complete (%v)", e.Err)
}

func (e *TruncatedError) Unwrap() error { return e.Err }

// Truncated wraps err, the reason a reply could not be used, in a
// *TruncatedError when the server says the reply was cut off (finish
// reason "length"); otherwise, or for nil, it returns err.
func Truncated(finishReason string, err error) error {
	if err == nil || finishReason != "length" {
		return err
	}
	return &TruncatedError{Err: err}
}

// RepairPrompt asks the model to fix a rejected reply.
func RepairPrompt(format string, err error) string {
	var te *TruncatedError
	if errors.As(err, &te) {
		return "Your previous reply was cut off at the length limit before it was complete. Reply again, much more briefly, so that the whole answer fits; keep the required form."
	}
	what := map[string]string{
		"json":  "Reply again with only the corrected JSON, no other text.",
		"tags":  "Reply again using the required tags.",
		"regex": "Reply again and give your final answer in the required form.",
	}[format]
	if what == "" {
		what = "Reply again."
	}
	return fmt.Sprintf("Your previous reply could not be used: %v. %s", err, what)
}
