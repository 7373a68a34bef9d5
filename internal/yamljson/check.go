package yamljson

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"
)

// Problem is one thing a schema refuses in a YAML document, placed at the
// value it is about.
type Problem struct {
	Line, Col int
	Pointer   string // the value's JSON pointer, "" for the whole document
	Message   string // the schema's message, without the place
}

// Check validates doc against schema. A document that cannot be converted
// (a merge key, say) is the error; each refusal of the schema is a Problem,
// the most specific ones only (see leaves), in the order of the file, each
// once. A property that is not allowed is placed at its key. pos, when
// not nil, receives every value's place as Convert gives it.
func Check(doc *yaml.Node, what string, schema *jsonschema.Schema, pos map[string][2]int) ([]Problem, error) {
	if pos == nil {
		pos = map[string][2]int{}
	}
	v, err := Convert(doc, what, pos)
	if err != nil {
		return nil, err
	}
	err = schema.Validate(v)
	var ve *jsonschema.ValidationError
	if err == nil || !errors.As(err, &ve) {
		return nil, nil
	}
	var out []Problem
	seen := map[string]bool{}
	for _, l := range leaves(ve) {
		p, ok := pos[l.InstanceLocation]
		if m := notAllowed.FindStringSubmatch(l.Message); m != nil {
			if kp, ok := pos[l.InstanceLocation+"/"+m[1]]; ok {
				p = kp
			}
		}
		if !ok {
			p = [2]int{doc.Line, doc.Column}
		}
		if k := l.InstanceLocation + "\x00" + l.Message; !seen[k] {
			seen[k] = true
			out = append(out, Problem{Line: p[0], Col: p[1], Pointer: l.InstanceLocation, Message: l.Message})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Line != out[j].Line {
			return out[i].Line < out[j].Line
		}
		return out[i].Col < out[j].Col
	})
	return out, nil
}

var notAllowed = regexp.MustCompile(`^additionalProperties '([^']*)' not allowed`)

// leaves are the most specific failures: for a oneOf, those of the branch
// that got furthest into the value; of a text-or-mapping value that is
// neither, only what the mapping lacks when it is a mapping.
func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var all []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		all = append(all, leaves(c)...)
	}
	if !strings.HasSuffix(ve.KeywordLocation, "/oneOf") {
		return all
	}
	deepest := 0
	for _, l := range all {
		deepest = max(deepest, strings.Count(l.InstanceLocation, "/"))
	}
	var keep, notType []*jsonschema.ValidationError
	for _, l := range all {
		if strings.Count(l.InstanceLocation, "/") == deepest {
			keep = append(keep, l)
			if !strings.HasSuffix(l.KeywordLocation, "/type") {
				notType = append(notType, l)
			}
		}
	}
	if len(keep) > 1 && len(notType) > 0 {
		return notType
	}
	return keep
}

// TopKeys reads the YAML file at path and gives the keys of its top-level
// mapping; ok is false for a file that cannot be read or is not a YAML
// mapping (how runner tells specs, test files and study files apart when
// their names do not).
func TopKeys(path string) (keys map[string]any, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	if yaml.Unmarshal(data, &keys) != nil || keys == nil {
		return nil, false
	}
	return keys, true
}

// Describe names a JSON pointer for a message: /cases/2/expect/0 is
// cases[2].expect[0].
func Describe(ptr string) string {
	var b strings.Builder
	for _, part := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		if _, err := strconv.Atoi(part); err == nil {
			b.WriteString("[" + part + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(part)
	}
	return b.String()
}

// Error is a problem of a YAML file (a test file, a study file) at a
// position; Line 0 is the file as a whole.
type Error struct {
	Path      string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.Path, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.Path, e.Line, e.Col, e.Msg)
}

// Errors are the problems of a file, one a line.
type Errors []*Error

func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}
