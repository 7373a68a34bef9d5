package sweep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// These helpers are package runtime's test helpers of the same names, which
// tests of another package cannot reach.

// testKey is the API key tests configure.
const testKey = "sk-sweep-test-key-0123456789"

// noSleep skips retry waits.
func noSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// loadPlan compiles a spec file and fails the test on any error.
func loadPlan(t testing.TB, path string) *spec.Plan {
	t.Helper()
	plan, diags := spec.Load(path, nodes.Registry())
	if diags.HasErrors() {
		t.Fatalf("%s does not compile:\n%s", path, diags.Format())
	}
	return plan
}

// writeSpec writes a spec into dir and returns its path.
func writeSpec(t testing.TB, dir, text string) string {
	t.Helper()
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// envFor returns a Getenv that points the default endpoint at url with
// the test key.
func envFor(url string) func(string) string {
	return func(k string) string {
		switch k {
		case "OPENAI_BASE_URL":
			return url
		case "OPENAI_API_KEY":
			return testKey
		}
		return ""
	}
}

// callKey extracts the KEY= marker the test specs put on the first line of
// every prompt: it names agent and round of the call.
func callKey(r llmtest.Request) string {
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
