// Package study runs a study: several specs (a protocol and its baselines)
// times several models over one dataset, each pair a sweep (package
// runtime/sweep), and puts them in one table with each spec's paired
// difference from the baseline (package runtime/paired), its p-value
// adjusted for the number of comparisons (Holm). A study directory records
// which sweep is which, so a killed study continues where it stopped.
package study

import (
	"bytes"
	_ "embed"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/debate-runner/runner/internal/yamljson"
	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"
)

//go:embed schema.json
var schemaSource []byte

// Schema returns the JSON Schema (draft 2020-12) of study files, as
// published in schemas/study.schema.json.
func Schema() []byte { return append([]byte(nil), schemaSource...) }

// File is a study file as written.
type File struct {
	Schema      string      `yaml:"$schema" json:"-"`
	Version     int         `yaml:"version" json:"version"`
	Name        string      `yaml:"name" json:"name"`
	Description string      `yaml:"description" json:"description,omitempty"`
	Dataset     string      `yaml:"dataset" json:"dataset"`
	Specs       []SpecEntry `yaml:"specs" json:"specs"`
	Baseline    string      `yaml:"baseline" json:"baseline"`
	Models      []string    `yaml:"models" json:"models,omitempty"`
	Repeat      int         `yaml:"repeat" json:"repeat,omitempty"`
	Parallel    int         `yaml:"parallel" json:"parallel,omitempty"`
	Resamples   int         `yaml:"resamples" json:"resamples,omitempty"`
	Seed        uint64      `yaml:"seed" json:"seed,omitempty"`
	OwnSamples  bool        `yaml:"own_samples" json:"own_samples,omitempty"`
	// Batch sends each sweep's calls as provider batches (sweep.Options.Batch).
	Batch bool `yaml:"batch" json:"batch,omitempty"`
	// EqualCompute, when set, adds to every protocol a self-consistency
	// cell given the protocol's compute (see EqualCompute).
	EqualCompute *EqualCompute `yaml:"equal_compute" json:"equal_compute,omitempty"`

	// Path is the file's path; spec paths and a dataset file are relative
	// to its folder.
	Path string `yaml:"-" json:"-"`
	// positions of the values errors found after the schema are about.
	specPos     [][2]int
	baselinePos [2]int
	ecPos       [2]int
}

// EqualCompute is the equal-compute baseline of a study: for each
// protocol (every spec but the baseline) and model, a sweep of a
// self-consistency spec (one agent sampled N times, the majority of its
// answers) over the same items, with N set so that it spends what the
// protocol spent per item.
type EqualCompute struct {
	// Spec is the self-consistency spec, relative to the study file.
	Spec string `yaml:"spec" json:"spec"`
	// Var is the spec's var that sets its number of samples (default
	// "samples").
	Var string `yaml:"var" json:"var,omitempty"`
	// Match is what is made equal: "calls" (default), the protocol's mean
	// calls per item, or "tokens", its mean tokens per item over the mean
	// tokens of one call of the study's baseline.
	Match string `yaml:"match" json:"match,omitempty"`
	// Label names the cells in the table (default "self-consistency").
	Label string `yaml:"label" json:"label,omitempty"`
}

// VarName is the var that sets the number of samples.
func (e *EqualCompute) VarName() string {
	if e.Var == "" {
		return "samples"
	}
	return e.Var
}

// Matched is what is made equal: "calls" or "tokens".
func (e *EqualCompute) Matched() string {
	if e.Match == "" {
		return "calls"
	}
	return e.Match
}

// LabelOr is the cells' label.
func (e *EqualCompute) LabelOr() string {
	if e.Label == "" {
		return "self-consistency"
	}
	return e.Label
}

// SpecEntry is one spec of a study: a path, its label in the table, the
// vars its sweep sets (as --set does: a panel chosen by name), and the
// personas its panel seats, for a study over panels.
type SpecEntry struct {
	Path     string            `yaml:"path" json:"path"`
	Label    string            `yaml:"label" json:"label,omitempty"`
	Set      map[string]string `yaml:"set" json:"set,omitempty"`
	Personas []string          `yaml:"personas" json:"personas,omitempty"`
}

// Sets are the entry's vars as --set takes them, sorted by name.
func (s SpecEntry) Sets() []string {
	out := make([]string, 0, len(s.Set))
	for _, k := range slices.Sorted(maps.Keys(s.Set)) {
		out = append(out, k+"="+s.Set[k])
	}
	return out
}

// UnmarshalYAML takes a spec as a path alone or as {path, label}.
func (s *SpecEntry) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		s.Path = n.Value
		return nil
	}
	type plain SpecEntry
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*s = SpecEntry(p)
	return nil
}

// Load reads and checks a study file against its schema; errors name
// FILE:LINE:COL.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line := 0
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
		return nil, yamljson.Errors{{Path: path, Line: line, Col: 1, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	if len(doc.Content) == 0 {
		return nil, yamljson.Errors{{Path: path, Msg: "the file is empty: a study names its version, name, dataset, specs and baseline"}}
	}
	pos := map[string][2]int{}
	if errs := validate(path, &doc, pos); len(errs) > 0 {
		return nil, errs
	}
	var f File
	if err := doc.Decode(&f); err != nil {
		return nil, yamljson.Errors{{Path: path, Line: doc.Line, Col: doc.Column, Msg: err.Error()}}
	}
	f.Path = path
	for i := range f.Specs {
		p := pos["/specs/"+strconv.Itoa(i)]
		if q, ok := pos["/specs/"+strconv.Itoa(i)+"/path"]; ok {
			p = q
		}
		f.specPos = append(f.specPos, p)
	}
	f.baselinePos = pos["/baseline"]
	f.ecPos = pos["/equal_compute"]
	if p, ok := pos["/equal_compute/spec"]; ok {
		f.ecPos = p
	}
	return &f, nil
}

// errorAt is an error of the file at a position.
func (f *File) errorAt(p [2]int, format string, a ...any) *yamljson.Error {
	return &yamljson.Error{Path: f.Path, Line: p[0], Col: p[1], Msg: fmt.Sprintf(format, a...)}
}

// resolve is a path of the file, relative to the file's folder.
func (f *File) resolve(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(f.Path), p)
}

// DatasetSource is the dataset as --dataset takes it: a file relative to
// the study file, or a generator or hub dataset as written.
func (f *File) DatasetSource() string {
	d := f.Dataset
	if strings.HasPrefix(d, "gen:") || strings.HasPrefix(d, "hf:") {
		return d
	}
	return f.resolve(d)
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

var compiledSchema = sync.OnceValue(func() *jsonschema.Schema {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource("study.schema.json", bytes.NewReader(schemaSource)); err != nil {
		panic("study: " + err.Error())
	}
	return c.MustCompile("study.schema.json")
})

// validate checks a study file's YAML against the schema, reporting each
// problem at the position of the value it is about.
func validate(path string, doc *yaml.Node, pos map[string][2]int) yamljson.Errors {
	problems, err := yamljson.Check(doc, "study files", compiledSchema(), pos)
	if err != nil {
		return yamljson.Errors{{Path: path, Line: doc.Line, Col: doc.Column, Msg: err.Error()}}
	}
	var errs yamljson.Errors
	for _, pr := range problems {
		msg := pr.Message
		if pr.Pointer != "" {
			msg = yamljson.Describe(pr.Pointer) + ": " + msg
		}
		errs = append(errs, &yamljson.Error{Path: path, Line: pr.Line, Col: pr.Col, Msg: msg})
	}
	return errs
}
