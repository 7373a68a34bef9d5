// Package runtest holds what tests of several packages need to run specs
// against the scripted server of internal/llmtest: compiling specs, an
// environment pointing the default endpoint at the server, the call-key
// marker convention of test specs, an in-memory response cache, and keeping
// the user's response cache out of test runs. It imports neither runtime
// nor cmd, so internal tests of package runtime can use it too.
package runtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/spec"
)

// NoSleep skips retry waits so fault tests run at full speed.
func NoSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// LoadPlan compiles a spec file and fails the test on any error.
func LoadPlan(t testing.TB, path string) *spec.Plan {
	t.Helper()
	plan, diags := spec.Load(path, nodes.Registry())
	if diags.HasErrors() {
		t.Fatalf("%s does not compile:\n%s", path, diags.Format())
	}
	return plan
}

// WriteSpec writes a spec into dir as spec.yaml and returns its path.
func WriteSpec(t testing.TB, dir, text string) string {
	t.Helper()
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Env returns a Getenv that points the default endpoint at url with key.
func Env(url, key string) func(string) string {
	return func(k string) string {
		switch k {
		case "OPENAI_BASE_URL":
			return url
		case "OPENAI_API_KEY":
			return key
		}
		return ""
	}
}

// CallKey extracts the KEY= marker test specs put in every prompt; it names
// the call (agent, round, target, step) so a scripted server can answer by
// call whatever order the calls arrive in.
func CallKey(r llmtest.Request) string {
	last := r.LastUser()
	i := strings.Index(last, "KEY=")
	if i < 0 {
		return ""
	}
	rest := last[i+4:]
	if j := strings.IndexAny(rest, " \n"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// RoundsSpec is a three-agent debate whose round count is the var
// max_rounds; TEMP is replaced by the model temperature. Every prompt starts
// with KEY=agent/rROUND and quotes the history, so later rounds depend on
// earlier replies, as in a real debate.
const RoundsSpec = `version: 1
name: sweepy
inputs:
  question: {required: true}
vars:
  max_rounds: 2
models:
  default: {model: test-model, temperature: TEMP, price: {prompt: 1, completion: 2}}
agents:
  a: {name: A}
  b: {name: B}
  c: {name: C}
templates:
  define:
    answer: "KEY={{.Agent.ID}}/r{{.Round}}\n{{.Inputs.question}}\n{{range .History}}{{.From}}: {{.Content}}\n{{end}}"
nodes:
  answer: {kind: ask, agents: [a, b, c], template: answer, record: answer, output: {format: regex, pattern: 'ANSWER=(-?\d+)'}}
flow:
  - loop: {as: round, max: vars.max_rounds, do: [answer]}
outputs:
  answer: mode(map(latest("answer"), {.output}))
score: outputs.answer == string(expected)
`

// RoundsPlan compiles RoundsSpec at a temperature.
func RoundsPlan(t testing.TB, temp string) *spec.Plan {
	t.Helper()
	return LoadPlan(t, WriteSpec(t, t.TempDir(), strings.ReplaceAll(RoundsSpec, "TEMP", temp)))
}

// AnswerSeven answers 7 to every call, naming the call so replies differ.
func AnswerSeven(r llmtest.Request) llmtest.Reply {
	return llmtest.Reply{Content: fmt.Sprintf("%s: ANSWER=7", CallKey(r))}
}

// arithmeticItem is a question of the arithmetic dataset
// (gen:arithmetic): a+b*c+d-e*f.
var arithmeticItem = regexp.MustCompile(`What is the result of (\d+)\+(\d+)\*(\d+)\+(\d+)-(\d+)\*(\d+)\?`)

// Arithmetic is the right answer to the arithmetic dataset's question
// (gen:arithmetic) in text, for scripted models that answer it; false
// when text asks none.
func Arithmetic(text string) (int, bool) {
	m := arithmeticItem.FindStringSubmatch(text)
	if m == nil {
		return 0, false
	}
	n := make([]int, 6)
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	return n[0] + n[1]*n[2] + n[3] - n[4]*n[5], true
}

// MemCache is a response cache in memory (it satisfies runtime.Cache) that
// counts what it stores.
type MemCache struct {
	mu   sync.Mutex
	m    map[string]kit.Reply
	puts int
}

// NewMemCache returns an empty cache.
func NewMemCache() *MemCache { return &MemCache{m: map[string]kit.Reply{}} }

// Get returns a stored reply.
func (c *MemCache) Get(key string) (kit.Reply, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[key]
	return r, ok
}

// Put stores a reply.
func (c *MemCache) Put(key string, rep kit.Reply) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[key] = rep
	c.puts++
}

// Len is the number of stored replies.
func (c *MemCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// Puts is how many times Put was called.
func (c *MemCache) Puts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.puts
}

// IsolateCache runs a package's tests with RUNNER_CACHE_DIR set to a
// temporary directory, so no run they make (in process, or through a built
// binary, which inherits the environment) writes the user's response cache.
// Call it from TestMain: os.Exit(runtest.IsolateCache(m)).
func IsolateCache(m *testing.M) int {
	dir, err := os.MkdirTemp("", "runner-test-cache-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Setenv("RUNNER_CACHE_DIR", dir)
	return m.Run()
}

// KeyedTransport answers every chat completion at once, in-process, with
// reply(call key) (the key a run puts in each request's context), so that
// benchmarks measure a run's own CPU, with no server or sockets, whatever
// order its calls come in.
type KeyedTransport struct {
	Reply func(key string) string
}

// RoundTrip implements http.RoundTripper.
func (t KeyedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	body, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-instant", "object": "chat.completion", "created": 1, "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": t.Reply(calls.KeyFrom(req.Context()))}}},
		"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150},
	})
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
}

// Binary builds the runner command once for a test package's tests; the
// package's TestMain calls Remove.
type Binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Path builds cmd/runner from pkg (a path relative to the test's package)
// the first time it is called, and returns the binary's path.
func (b *Binary) Path(t testing.TB, pkg string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the runner binary; skipped with -short")
	}
	b.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			b.err = err
			return
		}
		if b.dir, b.err = os.MkdirTemp("", "runner-bin-*"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "runner")
		if out, err := exec.Command(goTool, "build", "-o", b.path, pkg).CombinedOutput(); err != nil {
			b.err = errors.New(string(out))
		}
	})
	if b.err != nil {
		t.Fatalf("building the binary: %v", b.err)
	}
	return b.path
}

// Remove deletes what Path built.
func (b *Binary) Remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// CopyEnv is the environment for go commands run in a copy made by
// CopyCheckout: the test's own, with extra, and with -trimpath added to
// GOFLAGS. Without it every package of the copy compiles afresh, since the
// build cache keys a package by the folder it is in; with it a package
// whose files are unchanged is found in the cache that another copy (or
// an earlier run of these tests) filled, so only what the test changes,
// and what imports it, is compiled again.
func CopyEnv(extra ...string) []string {
	env := os.Environ()
	flags := "-trimpath"
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			if v != "" {
				flags = v + " -trimpath"
			}
			env = append(env[:i:i], env[i+1:]...)
			break
		}
	}
	return append(append(env, "GOFLAGS="+flags), extra...)
}

// CopyCheckout copies every file git lists in the checkout at root
// (tracked, and untracked but not ignored) into dir, and returns each
// file's contents by its path. It skips the test when root is not a git
// checkout. The tests that prove "a new kind, provider or flag touches
// only its own files" compare a changed copy against what it returns.
func CopyCheckout(t testing.TB, root, dir string) map[string][]byte {
	t.Helper()
	list := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout)", err)
	}
	files := map[string][]byte{}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			continue // deleted in the work tree
		}
		files[name] = data
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return files
}
