package spec_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
)

// anchorBomb builds a "billion laughs" document: levels of anchors, each an
// alias list of the previous level repeated width times. Expanded it would
// hold width^levels values.
func anchorBomb(levels, width int) []byte {
	var b bytes.Buffer
	b.WriteString("version: 1\nname: bomb\nl0: &l0 [lol]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [", i, i)
		for j := 0; j < width; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.Bytes()
}

// TestBadFiles checks that inputs which cannot be a spec at all each get one
// clear diagnostic, quickly, and no plan.
func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := bytes.Repeat([]byte("# padding line of a file far too large to be a spec\n"), 10<<20/52+1)
	subdir := filepath.Join(dir, "specs")
	if err := os.Mkdir(subdir, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want string // substring of the one diagnostic
		pos  bool   // whether the diagnostic has a position
	}{
		{"empty", write("empty.yaml", nil), "spec is empty", false},
		{"whitespace", write("blank.yaml", []byte(" \n\t\n  \r\n\n")), "spec is empty", false},
		{"comment only", write("comment.yaml", []byte("# nothing here yet\n")), "spec is empty", true},
		{"null document", write("null.yaml", []byte("~\n")), "a spec must be a mapping", true},
		{"directory", subdir, "is a directory, not a spec file", false},
		{"binary", write("image.png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00")), "binary data (NUL byte at offset 8)", false},
		{"not utf8", write("latin1.yaml", []byte("version: 1\nname: caf\xe9\n")), "not valid UTF-8", false},
		{"10 MB", write("huge.yaml", big), "larger than 2 MiB", false},
		{"nonexistent", filepath.Join(dir, "missing.yaml"), "no such file", false},
		{"anchor bomb", write("bomb.yaml", anchorBomb(9, 9)), "expands to more than", true},
	}
	reg := nodes.Registry()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			plan, diags := spec.Load(tc.path, reg)
			t.Logf("%s: %v", tc.name, time.Since(start))
			if plan != nil {
				t.Error("got a plan")
			}
			if len(diags) != 1 {
				t.Fatalf("got %d diagnostics, want 1:\n%s", len(diags), diags.Error())
			}
			d := diags[0]
			if d.Severity != syntax.Error || d.File != tc.path || !strings.Contains(d.Message, tc.want) {
				t.Errorf("got %s, want an error in %s containing %q", d, tc.path, tc.want)
			}
			if (d.Pos.Line > 0) != tc.pos {
				t.Errorf("position %v, want one: %v", d.Pos, tc.pos)
			}
		})
	}
}

// TestAnchorBombNotExpanded makes sure the bound on alias expansion, not luck,
// stops the bomb: a document of the same shape but harmless size loads
// fine, and the bomb's diagnostic points into the document.
func TestAnchorBombNotExpanded(t *testing.T) {
	small := append(anchorBomb(2, 3), []byte("agents: {a: {}}\nnodes: {n: {kind: ask, agents: [a], template: t/x}}\nflow: [n]\ntemplates: {define: {t/x: hi}}\n")...)
	_, diags := spec.Compile("small.yaml", small, nodes.Registry())
	for _, d := range diags {
		if strings.Contains(d.Message, "expands to more than") {
			t.Fatalf("a small aliased document was refused: %s", d)
		}
	}
	start := time.Now()
	_, diags = spec.Compile("bomb.yaml", anchorBomb(9, 9), nodes.Registry())
	t.Logf("9 levels of 9 aliases refused in %v", time.Since(start))
	if len(diags) != 1 || diags[0].Pos.Line < 3 {
		t.Fatalf("want one diagnostic inside the document, got:\n%s", diags.Error())
	}
}

// TestHostileSpecs loads specs built to be slow or deep rather than wrong
// in any one place: each must load (a regression to exponential or
// quadratic work shows as a test that never ends) with the diagnostics a
// user can act on.
func TestHostileSpecs(t *testing.T) {
	head := "version: 1\nname: hostile\nagents: {a: {name: A}, b: {name: B}}\ntemplates: {define: {t/x: hi}}\n"
	nodesN := func(n int) string {
		var b strings.Builder
		b.WriteString("nodes:\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "  n%d: {kind: ask, agents: [a], template: t/x}\n", i)
		}
		return b.String()
	}
	nest := func(open, mid, close string, n int) string {
		return strings.Repeat(open, n) + mid + strings.Repeat(close, n)
	}
	keys := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf("k%d: 1", i)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	tests := []struct {
		name string
		src  string
		want string // substring of the first error; "" for a valid spec
	}{
		// Each loop walked its body twice to learn what it may run: 2^60.
		{"60 nested loops", head + nodesN(1) + "flow:\n  - " + nest("{loop: {max: 2, do: [", "n0", "]}}", 60) + "\n", ""},
		// Each step copied what had run so far: quadratic.
		{"5000 nodes in a row", head + nodesN(5000) + "flow: [" + strings.TrimSuffix(strings.Repeat("n0, ", 5000), ", ") + "]\n", "is never run"},
		{"3000 ifs in a row", head + nodesN(1) + "flow:\n" + strings.Repeat("  - {if: \"nodes.n0?.text != ''\", then: [n0], else: [n0]}\n", 3000), ""},
		// yaml.v3 checks duplicate keys in quadratic time.
		{"a mapping of 60000 keys", head + "vars: " + keys(60000) + "\n" + nodesN(1) + "flow: [n0]\n", "this mapping has 60000 keys"},
		{"deep nesting", head + "vars: {x: " + nest("[", "", "]", 500) + "}\n" + nodesN(1) + "flow: [n0]\n", "nested more than 200 levels deep"},
		{"300000 values", head + "goals: [" + strings.TrimSuffix(strings.Repeat("{id: g}, ", 101000), ", ") + "]\n" + nodesN(1) + "flow: [n0]\n", "holds more than 200000 values"},
		// The schema compiler is quadratic in a schema's size.
		{"an output schema of 10000 properties", head + "nodes: {n: {kind: ask, agents: [a], template: t/x, output: {format: json, schema: {type: object, properties: " + strings.ReplaceAll(keys(10000), ": 1", ": {type: integer}") + "}}}}\nflow: [n]\n", "schema is too large"},
		{"50000 errors", head + nodesN(1) + "flow: [" + strings.TrimSuffix(strings.Repeat("nope, ", 50000), ", ") + "]\n", "flow runs unknown node"},
	}
	reg := nodes.Registry()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.src) > syntax.MaxSpecBytes {
				t.Fatalf("test spec is %d bytes, over the limit", len(tc.src))
			}
			start := time.Now()
			plan, diags := spec.Compile("hostile.yaml", []byte(tc.src), reg)
			t.Logf("%v, %d diagnostics", time.Since(start), len(diags))
			if len(diags) > 1001 {
				t.Errorf("%d diagnostics: more than a user can read", len(diags))
			}
			if tc.want == "" {
				if plan == nil {
					t.Fatalf("valid spec refused:\n%s", diags.Error())
				}
				return
			}
			errs := diags.Errors()
			if len(errs) == 0 || !strings.Contains(errs[0].Message, tc.want) {
				t.Fatalf("want first error containing %q, got:\n%s", tc.want, firstLines(diags.Error(), 5))
			}
		})
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
