package main

import (
	"bytes"
	"github.com/debate-runner/runner/internal/runtest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The throwaway provider kind
// TestNewProviderTouchesItsPackageTheRegistryAndGeneratedFiles adds: a
// server inside runner that answers every call with its endpoint's prefix
// and the last message, with a setting of its own.
var echoFiles = map[string]string{
	"echo.go": `// Package echo is a throwaway provider kind: it answers in-process with
// its endpoint's prefix and the request's last message.
package echo

import (
	_ "embed"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/spec"
)

//go:embed settings.json
var settings []byte

// Kind is the echo provider kind.
type Kind struct{ llm.ChatCompletions }

func (Kind) Name() string        { return "echo" }
func (Kind) Description() string { return "answers with its prefix and the last message." }
func (Kind) Settings() []byte    { return settings }
func (Kind) Doc() spec.ProviderDoc {
	return spec.ProviderDoc{Speaks: "nothing", Settings: "prefix", Test: "` + "`TestNewProviderTouchesItsPackageTheRegistryAndGeneratedFiles`" + `"}
}
func (Kind) Check(e *spec.EndpointCheck) {
	if _, ok := e.Settings["prefix"]; !ok {
		e.Errorf(e.Pos, "kind echo needs a prefix")
	}
}
func (Kind) Base(string, map[string]string) (*url.URL, error) { return url.Parse("http://echo.localhost") }
func (Kind) Local(string) bool                              { return true }
func (k Kind) URL(base url.URL, s map[string]string, r *llm.Request) string {
	base.RawQuery = url.Values{"prefix": {s["prefix"]}}.Encode()
	return k.ChatCompletions.URL(base, s, r)
}
func (Kind) Transport() http.RoundTripper { return echo{} }

type echo struct{}

func (echo) RoundTrip(r *http.Request) (*http.Response, error) {
	var req struct {
		Messages []struct{ Content string } ` + "`json:\"messages\"`" + `
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	text := r.URL.Query().Get("prefix") + req.Messages[len(req.Messages)-1].Content
	out, _ := json.Marshal(map[string]any{
		"model":   "echo",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
		"usage":   map[string]any{"prompt_tokens": 3, "completion_tokens": 2},
	})
	return &http.Response{StatusCode: 200, Status: "200 OK", Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(string(out))), Request: r, ProtoMajor: 1}, nil
}
`,
	"settings.json": `{
  "properties": {
    "prefix": {"type": "string", "description": "What every reply starts with (kind echo)."}
  }
}
`,
}

const echoSpec = `version: 1
name: echo-provider
endpoints:
  here: {kind: echo, prefix: "ECHOED: "}
models:
  m: {model: anything, endpoint: here}
agents:
  a: {name: A, model: m}
templates:
  define:
    t/ask: "hello there"
nodes:
  answer: {kind: ask, agents: [a], template: t/ask}
flow: [answer]
`

// TestNewProviderTouchesItsPackageTheRegistryAndGeneratedFiles proves what
// docs/adding-a-provider.md promises: in a copy of the repository, a new
// provider kind is its package, one line (and its import) in
// providers/registry.go and what `go generate ./schemas ./docs` writes;
// the tests that keep the schema, the manual and the layout page true then
// pass, a spec with an endpoint of the kind (and its own setting) runs
// through the binary with the kind's replies, and no other file changed.
func TestNewProviderTouchesItsPackageTheRegistryAndGeneratedFiles(t *testing.T) {
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
	dir := copyDir(t, root+"#provider")
	before := runtest.CopyCheckout(t, root, dir)

	for name, text := range echoFiles {
		write(t, filepath.Join(dir, "providers/echo", name), []byte(text))
	}
	reg := string(before["providers/registry.go"])
	reg = strings.Replace(reg, "\t\"github.com/debate-runner/runner/providers/azure\"\n", "\t\"github.com/debate-runner/runner/providers/azure\"\n\t\"github.com/debate-runner/runner/providers/echo\"\n", 1)
	reg = strings.Replace(reg, "\t\toffline.Kind{},\n", "\t\toffline.Kind{},\n\t\techo.Kind{},\n", 1)
	if reg == string(before["providers/registry.go"]) || strings.Count(reg, "echo") != 2 {
		t.Fatal("providers/registry.go no longer has the lines this test adds the kind after")
	}
	write(t, filepath.Join(dir, "providers/registry.go"), []byte(reg))

	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = runtest.CopyEnv("RUNNER_NEW_KIND_COPY=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s in the copy: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("go", "generate", "./schemas", "./docs")
	run("go", "test", "./internal/gendocs", "./docs", "./schemas", "./providers/...")

	// The kind runs: a spec naming it, with its setting, through the
	// binary, in a folder outside the copy so that its files are not
	// counted as changes.
	work := t.TempDir()
	bin := filepath.Join(work, "runner")
	run("go", "build", "-o", bin, "./cmd/runner")
	write(t, filepath.Join(work, "spec.yaml"), []byte(echoSpec))
	cmd := exec.Command(bin, "run", "spec.yaml", "-q")
	cmd.Dir = work
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("runner run with the echo kind: %v\n%s", err, stderr.String())
	}
	results, _ := filepath.Glob(filepath.Join(work, "runs", "*", "result.json"))
	if len(results) != 1 {
		t.Fatalf("the run left %d result.json files, want 1", len(results))
	}
	res, err := os.ReadFile(results[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), "ECHOED: hello there") {
		t.Errorf("result.json lacks the echo kind's reply:\n%s", res)
	}

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
		"docs/providers.md",
		"providers/echo/echo.go",
		"providers/echo/settings.json",
		"providers/registry.go",
		"schemas/spec.schema.json",
	}
	if !slices.Equal(changed, want) {
		t.Errorf("adding a provider kind changed %v, want %v", changed, want)
	}
	text, err := os.ReadFile(filepath.Join(dir, "docs/providers.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "| `echo` | answers with its prefix and the last message. |") {
		t.Errorf("docs/providers.md lacks the new kind's row")
	}
}
