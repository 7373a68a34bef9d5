package nodes_test

import (
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// TestMinAnswersIsChecked: a min_answers the node could never meet, or
// below 1, is an error at its position.
func TestMinAnswersIsChecked(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{"3", `spec.yaml:12:18: error: node "n": min_answers is 3 but the node makes 2 call(s)`},
		{"0", "spec.yaml:12:18"},
		{"2", ""},
	} {
		src := `version: 1
name: t
agents:
  a: {}
  b: {}
templates:
  define: {t/x: hi}
nodes:
  n:
    kind: ask
    agents: [a, b]
    min_answers: ` + tc.value + `
    template: t/x
flow: [n]
`
		_, diags := spec.Compile("spec.yaml", []byte(src), nodes.Registry())
		got := diags.Format()
		if tc.want == "" {
			if diags.HasErrors() {
				t.Errorf("min_answers %s: %s", tc.value, got)
			}
			continue
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("min_answers %s: diagnostics %q, want %q", tc.value, got, tc.want)
		}
	}
}
