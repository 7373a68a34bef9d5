package examples_test

import (
	"path/filepath"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// BenchmarkValidateProtocols: validating the twelve protocol specs (each
// loads the embedded protocols library and type-checks every template and
// expression), against the baseline of validating reasoning-debate, the
// smallest example, twelve times.
func BenchmarkValidateProtocols(b *testing.B) {
	protocols, err := filepath.Glob("protocols/*/spec.yaml")
	if err != nil || len(protocols) != 12 {
		b.Fatalf("want the 12 protocol specs, found %d (%v)", len(protocols), err)
	}
	baseline := make([]string, len(protocols))
	for i := range baseline {
		baseline[i] = "reasoning-debate/spec.yaml"
	}
	for _, bc := range []struct {
		name  string
		paths []string
	}{{"baseline=reasoning-debate-x12", baseline}, {"protocols-12", protocols}} {
		b.Run(bc.name, func(b *testing.B) {
			reg := nodes.Registry()
			for b.Loop() {
				for _, p := range bc.paths {
					if _, diags := spec.Load(p, reg); diags.HasErrors() {
						b.Fatal(diags.Format())
					}
				}
			}
		})
	}
}
