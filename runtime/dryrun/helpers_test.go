package dryrun

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

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
