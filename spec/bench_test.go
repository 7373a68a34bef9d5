package spec_test

import (
	"os"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// BenchmarkLoadDesignDebate measures reading, validating and compiling the
// largest example, which is what every `runner validate` and `runner run`
// pays before the first model call.
func BenchmarkLoadDesignDebate(b *testing.B) {
	path := "../examples/design-debate/spec.yaml"
	if _, err := os.Stat(path); err != nil {
		path = "../examples/reasoning-debate/spec.yaml"
	}
	reg := nodes.Registry()
	if _, diags := spec.Load(path, reg); diags.HasErrors() {
		b.Fatalf("%s does not load:\n%s", path, diags.Error())
	}
	b.ReportAllocs()
	for b.Loop() {
		plan, diags := spec.Load(path, reg)
		if plan == nil || diags.HasErrors() {
			b.Fatal("load failed")
		}
	}
}
