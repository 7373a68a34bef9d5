package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"github.com/debate-runner/runner/internal/runtest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gofrs/flock"
)

// copyDir is an empty folder for the copy of the repository at root, at
// the same path every time for the same root, so that the go command's
// cache serves the copy's packages from one run of the test to the next
// as it serves the checkout's (a package's path is part of its cache key;
// -trimpath would remove it, but also keys the standard library and every
// dependency apart from the checkout's builds, which from a cold cache
// cost CI most of a minute compiling them again). The folder is locked
// while the test uses it, since two test processes may run at once, and
// removed at the end.
func copyDir(t *testing.T, root string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(os.TempDir(), "runner-new-kind-"+hex.EncodeToString(sum[:6]))
	lock := flock.New(dir + ".lock")
	if err := lock.Lock(); err != nil {
		t.Fatalf("locking %s: %v", dir, err)
	}
	clean := func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing the copy: %v", err)
		}
	}
	clean()
	t.Cleanup(func() {
		clean()
		lock.Unlock()
	})
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The throwaway kind TestNewKindTouchesItsPackageTheRegistryAndGeneratedFiles
// adds: a node that shouts a text, without a model call.
var shoutFiles = map[string]string{
	"kind.go": `// Package shout is a throwaway node kind: its output is its text in
// capitals.
package shout

import (
	"context"
	_ "embed"
	"strings"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"
)

//go:embed schema.json
var schema []byte

//go:embed example.yaml
var example string

// Kind is the shout node kind.
type Kind struct{}

func (Kind) Name() string        { return "shout" }
func (Kind) Description() string { return "Its output is its text in capitals." }
func (Kind) Schema() []byte      { return schema }
func (Kind) Example() string     { return example }
func (Kind) PromptData() any     { return nil }

type rawConfig struct {
	Text syntax.Str ` + "`yaml:\"text\"`" + `
}

// Config is a compiled shout node.
type Config struct{ Text string }

func (Kind) Compile(c *spec.NodeContext, raw *rawConfig) *Config {
	c.SetOutput(spec.TypeString, nil)
	return &Config{Text: raw.Text.V}
}

func (Kind) Execute(_ context.Context, _ kit.Host, _ *spec.NodePlan, cfg *Config) (value.NodeResult, error) {
	up := strings.ToUpper(cfg.Text)
	return value.NodeResult{Output: up, Outputs: map[string]any{}, Text: up}, nil
}
`,
	"schema.json": `{
  "required": ["text"],
  "properties": {
    "text": {"type": "string", "description": "The words to shout (the node's output, in capitals)."}
  }
}
`,
	"example.yaml": `version: 1
name: shout-example
agents:
  a: {name: A}
nodes:
  hello:
    kind: shout
    text: hello
flow: [hello]
outputs:
  loud: nodes.hello.output
`,
	"manual.md": `## kind: shout

Its output is its text in capitals, without a model call.

<!-- table of keys -->
`,
}

// TestNewKindTouchesItsPackageTheRegistryAndGeneratedFiles proves what
// docs/adding-a-kind.md promises: in a copy of the repository, a new kind
// is its package, one line (and its import) in nodes/registry.go and what
// `go generate ./schemas ./docs` writes; the tests that keep the schema,
// the manual and the layout page true then pass, and no other file
// changed.
func TestNewKindTouchesItsPackageTheRegistryAndGeneratedFiles(t *testing.T) {
	if os.Getenv("RUNNER_NEW_KIND_COPY") != "" {
		t.Skip("running inside the copy this test made")
	}
	if testing.Short() {
		t.Skip("builds a copy of the repository; skipped with -short")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git lists the repository's files: not found")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := copyDir(t, root)
	before := runtest.CopyCheckout(t, root, dir)

	// The kind's package and its registry line.
	for name, text := range shoutFiles {
		write(t, filepath.Join(dir, "nodes/shout", name), []byte(text))
	}
	reg := string(before["nodes/registry.go"])
	reg = strings.Replace(reg, "\t\"github.com/debate-runner/runner/nodes/kit\"\n", "\t\"github.com/debate-runner/runner/nodes/kit\"\n\t\"github.com/debate-runner/runner/nodes/shout\"\n", 1)
	reg = strings.Replace(reg, "\t\tkit.Typed(compute.Kind{}),\n", "\t\tkit.Typed(compute.Kind{}),\n\t\tkit.Typed(shout.Kind{}),\n", 1)
	if reg == string(before["nodes/registry.go"]) || strings.Count(reg, "shout") != 2 {
		t.Fatal("nodes/registry.go no longer has the lines this test adds the kind after")
	}
	write(t, filepath.Join(dir, "nodes/registry.go"), []byte(reg))

	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = runtest.CopyEnv("RUNNER_NEW_KIND_COPY=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in the copy: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("generate", "./schemas", "./docs")
	run("test", "./internal/gendocs", "./docs", "./schemas", "./nodes")

	var changed []string
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name, _ := filepath.Rel(dir, path)
		name = filepath.ToSlash(name)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if old, ok := before[name]; !ok || !bytes.Equal(old, data) {
			changed = append(changed, name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(changed)
	want := []string{
		"docs/node-kinds.md",
		"nodes/registry.go",
		"nodes/shout/example.yaml",
		"nodes/shout/kind.go",
		"nodes/shout/manual.md",
		"nodes/shout/schema.json",
		"schemas/spec.schema.json",
	}
	if !slices.Equal(changed, want) {
		t.Errorf("adding a kind changed %v, want %v", changed, want)
	}
	text, err := os.ReadFile(filepath.Join(dir, page))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "## kind: shout") || !strings.Contains(string(text), "| `text` | string | required | The words to shout") {
		t.Errorf("the generated page lacks the new kind's section and table:\n%s", text)
	}
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
