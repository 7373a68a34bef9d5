package runtime

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// TestPathCheckAcceptsShippedSpecs: every shipped example (each has its
// runs tested) passes the path check without an error.
func TestPathCheckAcceptsShippedSpecs(t *testing.T) {
	files, _ := filepath.Glob("../examples/*/spec.yaml")
	more, _ := filepath.Glob("../examples/protocols/*/spec.yaml")
	files = append(files, more...)
	if len(files) < 10 {
		t.Fatalf("found %d examples", len(files))
	}
	for _, f := range files {
		plan, diags := spec.Load(f, nodes.Registry())
		if diags.HasErrors() {
			continue
		}
		began := time.Now()
		got := CheckPaths(plan)
		t.Logf("%s: %v, %d diagnostics", f, time.Since(began).Round(time.Millisecond), len(got))
		for _, d := range got {
			t.Logf("  %s", d)
		}
		if got.HasErrors() {
			t.Errorf("%s refused", f)
		}
	}
}
