// Package spectest runs spec test files (`runner test`): each case runs a
// spec offline, its model calls answered by a script at the HTTP level
// (runtime/scripted), and checks the run with expr assertions and,
// optionally, golden files of the rendered prompts.
package spectest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"

	"github.com/debate-runner/runner/internal/yamljson"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/scripted"
)

// Suffix ends the name of a test file: spec.test.yaml tests spec.yaml.
const Suffix = ".test.yaml"

//go:embed schema.json
var schemaSource []byte

// Schema returns the JSON Schema (draft 2020-12) of test files, as
// published in schemas/test.schema.json.
func Schema() []byte { return append([]byte(nil), schemaSource...) }

// File is a test file as written.
type File struct {
	Schema  string         `yaml:"$schema"`
	Spec    string         `yaml:"spec"`
	Strict  bool           `yaml:"strict"`
	Golden  bool           `yaml:"golden"`
	Inputs  map[string]any `yaml:"inputs"`
	Vars    map[string]any `yaml:"vars"`
	Replies []Entry        `yaml:"replies"`
	Cases   []Case         `yaml:"cases"`
}

// Case is one test case as written.
type Case struct {
	Name        string            `yaml:"name"`
	Description string            `yaml:"description"`
	Inputs      map[string]any    `yaml:"inputs"`
	Vars        map[string]any    `yaml:"vars"`
	Seed        *int64            `yaml:"seed"`
	Answers     map[string]string `yaml:"answers"`
	Strict      *bool             `yaml:"strict"`
	Golden      *bool             `yaml:"golden"`
	Replies     []Entry           `yaml:"replies"`
	Expect      []Source          `yaml:"expect"`

	line, col int
}

// UnmarshalYAML keeps the case's position.
func (c *Case) UnmarshalYAML(n *yaml.Node) error {
	type plain Case
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*c = Case(p)
	c.line, c.col = n.Line, n.Column
	return nil
}

// Source is a text of the file with the place it starts at: an assertion
// or a pattern, so that errors about it name FILE:LINE:COL.
type Source struct {
	Text string
	// Line and Col are where the text's first character is.
	Line, Col int
	// Block is set for a block scalar, whose text starts on the next line.
	Block bool
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (s *Source) UnmarshalYAML(n *yaml.Node) error {
	if err := n.Decode(&s.Text); err != nil {
		return err
	}
	s.Line, s.Col = n.Line, n.Column
	switch n.Style {
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		s.Col++
	case yaml.LiteralStyle, yaml.FoldedStyle:
		s.Block = true
		s.Line++
		s.Col = n.Column + 2
	}
	return nil
}

// at is the position of the text's character at line and col (1-based,
// within the text).
func (s Source) at(line, col int) (int, int) {
	if line <= 1 {
		return s.Line, s.Col + max(col, 1) - 1
	}
	return s.Line + line - 1, max(col, 1)
}

// Entry is a reply entry as written.
type Entry struct {
	Node    string  `yaml:"node"`
	Agent   string  `yaml:"agent"`
	Round   *int    `yaml:"round"`
	Goal    string  `yaml:"goal"`
	Key     *Source `yaml:"key"`
	Prompt  *Source `yaml:"prompt"`
	Reply   *Reply  `yaml:"reply"`
	Replies []Reply `yaml:"replies"`

	line, col int
}

// UnmarshalYAML keeps the entry's position.
func (e *Entry) UnmarshalYAML(n *yaml.Node) error {
	type plain Entry
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*e = Entry(p)
	e.line, e.col = n.Line, n.Column
	return nil
}

// Reply is a reply as written: a text, or a mapping.
type Reply struct {
	scripted.Reply
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (r *Reply) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return n.Decode(&r.Content)
	}
	var w struct {
		Content   string `yaml:"content"`
		ToolCalls []struct {
			Name      string    `yaml:"name"`
			ID        string    `yaml:"id"`
			Arguments yaml.Node `yaml:"arguments"`
		} `yaml:"tool_calls"`
		FinishReason     string   `yaml:"finish_reason"`
		PromptTokens     int      `yaml:"prompt_tokens"`
		CompletionTokens int      `yaml:"completion_tokens"`
		Status           int      `yaml:"status"`
		Message          string   `yaml:"message"`
		RetryAfter       *float64 `yaml:"retry_after"`
		Timeout          bool     `yaml:"timeout"`
		Reset            bool     `yaml:"reset"`
		Raw              string   `yaml:"raw"`
	}
	if err := n.Decode(&w); err != nil {
		return err
	}
	r.Reply = scripted.Reply{Content: w.Content, FinishReason: w.FinishReason, PromptTokens: w.PromptTokens, CompletionTokens: w.CompletionTokens,
		Status: w.Status, Message: w.Message, Timeout: w.Timeout, Reset: w.Reset, Raw: w.Raw}
	if w.RetryAfter != nil {
		r.RetryAfter = strconv.FormatFloat(*w.RetryAfter, 'f', -1, 64)
	}
	for _, tc := range w.ToolCalls {
		args := "{}"
		switch {
		case tc.Arguments.Kind == 0:
		case tc.Arguments.Kind == yaml.ScalarNode && tc.Arguments.Tag == "!!str":
			args = tc.Arguments.Value
		default:
			var v any
			if err := tc.Arguments.Decode(&v); err != nil {
				return err
			}
			data, err := json.Marshal(yamljson.Value(v))
			if err != nil {
				return fmt.Errorf("line %d: tool call arguments: %w", tc.Arguments.Line, err)
			}
			args = string(data)
		}
		r.ToolCalls = append(r.ToolCalls, kit.ToolCall{ID: tc.ID, Name: tc.Name, Arguments: args})
	}
	return nil
}

// Test is a loaded test file: its cases with their scripts and compiled
// assertions, not yet bound to the spec.
type Test struct {
	// Path is the test file, SpecPath the spec it tests.
	Path, SpecPath string
	File           File
}

// maxFileBytes bounds a test file; scripts of long debates are large, but
// not this large.
const maxFileBytes = 16 << 20

// Load reads and checks a test file against its schema.
func Load(path string) (*Test, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileBytes {
		return nil, &yamljson.Error{Path: path, Msg: fmt.Sprintf("the file is larger than %d MiB", maxFileBytes>>20)}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &yamljson.Error{Path: path, Line: yamlErrorLine(err), Col: 1, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if len(root.Content) == 0 {
		return nil, &yamljson.Error{Path: path, Msg: "the file is empty; it needs cases"}
	}
	doc := root.Content[0]
	if errs := validate(path, doc); len(errs) > 0 {
		return nil, errs
	}
	t := &Test{Path: path}
	if err := doc.Decode(&t.File); err != nil {
		return nil, &yamljson.Error{Path: path, Line: yamlErrorLine(err), Col: 1, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	spec := t.File.Spec
	if spec == "" {
		base := filepath.Base(path)
		if !strings.HasSuffix(base, Suffix) {
			return nil, &yamljson.Error{Path: path, Line: doc.Line, Col: doc.Column, Msg: "the file does not end in " + Suffix + ", so it must name its spec with spec:"}
		}
		spec = strings.TrimSuffix(base, Suffix) + ".yaml"
	}
	t.SpecPath = spec
	if !filepath.IsAbs(spec) {
		t.SpecPath = filepath.Join(filepath.Dir(path), spec)
	}
	seen := map[string]int{}
	for i, c := range t.File.Cases {
		id := CaseID(c.Name)
		if j, dup := seen[id]; dup {
			return nil, &yamljson.Error{Path: path, Line: c.line, Col: c.col, Msg: fmt.Sprintf("case %q has the name of case %d (%q)", c.Name, j+1, t.File.Cases[j].Name)}
		}
		seen[id] = i
	}
	return t, nil
}

// CaseID is a case's name as -run matches it and files are named after
// it: spaces become underscores, as go test names subtests.
func CaseID(name string) string {
	return strings.Join(strings.Fields(name), "_")
}

// script builds a case's script: its own entries, then the file's.
func (t *Test) script(c *Case) (scripted.Script, error) {
	s := scripted.Script{Strict: t.File.Strict}
	if c.Strict != nil {
		s.Strict = *c.Strict
	}
	var errs yamljson.Errors
	for _, list := range [][]Entry{c.Replies, t.File.Replies} {
		for _, e := range list {
			se := scripted.Entry{Where: fmt.Sprintf("%s:%d:%d", t.Path, e.line, e.col)}
			se.Match = scripted.Match{Node: e.Node, Agent: e.Agent, Goal: e.Goal, Round: e.Round}
			for _, p := range []struct {
				src *Source
				re  **regexp.Regexp
			}{{e.Key, &se.Match.Key}, {e.Prompt, &se.Match.Prompt}} {
				if p.src == nil {
					continue
				}
				re, err := regexp.Compile(p.src.Text)
				if err != nil {
					errs = append(errs, &yamljson.Error{Path: t.Path, Line: p.src.Line, Col: p.src.Col, Msg: "invalid regular expression: " + err.Error()})
					continue
				}
				*p.re = re
			}
			if e.Reply != nil {
				se.Always = true
				se.Replies = []scripted.Reply{e.Reply.Reply}
			}
			for _, r := range e.Replies {
				se.Replies = append(se.Replies, r.Reply)
			}
			s.Entries = append(s.Entries, se)
		}
	}
	if len(errs) > 0 {
		return s, errs
	}
	return s, nil
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

func yamlErrorLine(err error) int {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// validate checks a test file's YAML against the schema, reporting each
// problem at the position of the value it is about.
func validate(path string, doc *yaml.Node) yamljson.Errors {
	problems, err := yamljson.Check(doc, "test files", compiledSchema(), nil)
	if err != nil {
		return yamljson.Errors{{Path: path, Line: doc.Line, Col: doc.Column, Msg: err.Error()}}
	}
	var errs yamljson.Errors
	for _, pr := range problems {
		msg := pr.Message
		// `a: b` in a plain scalar is a mapping to YAML: an assertion
		// comparing with a mapping literal, or a pattern with ": ".
		if strings.HasSuffix(msg, "expected string, but got object") {
			msg += ` (YAML reads a text holding ": " as a mapping; quote the text with ' or write it as a block after |)`
		}
		if pr.Pointer != "" {
			msg = yamljson.Describe(pr.Pointer) + ": " + msg
		}
		errs = append(errs, &yamljson.Error{Path: path, Line: pr.Line, Col: pr.Col, Msg: msg})
	}
	return errs
}

var compiledSchema = sync.OnceValue(func() *jsonschema.Schema {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource("test.schema.json", bytes.NewReader(schemaSource)); err != nil {
		panic("spectest: " + err.Error())
	}
	return c.MustCompile("test.schema.json")
})
