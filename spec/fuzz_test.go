package spec_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// FuzzLoad feeds arbitrary text to the loader. Whatever the input, the loader
// must return (never panic or hang), every diagnostic must name a place that
// exists, and a spec without errors must yield a plan.
func FuzzLoad(f *testing.F) {
	var seeds []string
	for _, pattern := range []string{"../examples/*/spec.yaml", "testdata/invalid/*.yaml", "testdata/graph/*.yaml"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, m...)
	}
	if len(seeds) == 0 {
		f.Fatal("no seed specs found")
	}
	for _, p := range seeds {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	reg := nodes.Registry()
	// Specs resolve template folders relative to their own path; an empty
	// folder keeps fuzz inputs from reading the rest of the tree.
	path := filepath.Join(f.TempDir(), "fuzz.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		plan, diags := spec.Compile(path, data, reg)
		checkDiagnostics(t, path, data, diags)
		if diags.HasErrors() && plan != nil {
			t.Fatalf("plan returned despite errors:\n%s", diags.Error())
		}
		if !diags.HasErrors() && plan == nil {
			t.Fatalf("no errors but no plan (diagnostics: %q)", diags.Error())
		}
		if plan != nil {
			// A valid plan must draw without trouble.
			_ = spec.Mermaid(plan)
			_ = spec.Dot(plan)
		}
	})
}

var yamlLineBreak = regexp.MustCompile("\r\n|[\r\n\u0085\u2028\u2029]")

// checkDiagnostics asserts the invariants every diagnostic keeps.
func checkDiagnostics(t *testing.T, path string, data []byte, diags spec.Diagnostics) {
	t.Helper()
	// YAML counts CR, LF, CRLF, NEL, LS and PS as line breaks.
	lines := len(yamlLineBreak.Split(string(data), -1))
	for _, d := range diags {
		if d.Message == "" {
			t.Errorf("diagnostic without message: %+v", d)
		}
		if d.File == "" {
			t.Errorf("diagnostic without file: %+v", d)
		}
		if d.Pos.Line < 0 || d.Pos.Col < 0 {
			t.Errorf("negative position: %s", d)
		}
		if d.Pos.Line == 0 && d.Pos.Col != 0 {
			t.Errorf("column without line: %s", d)
		}
		if d.File == path && d.Pos.Line > lines {
			t.Errorf("line %d is past the end of the spec (%d lines): %s", d.Pos.Line, lines, d)
		}
		if d.Severity != spec.Error && d.Severity != spec.Warning {
			t.Errorf("unknown severity %d: %s", d.Severity, d)
		}
	}
}
