package spec_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// TestBlockScalarExprPositions: an expression written as a block scalar
// (| or >, any chomping and indentation), a sum over several lines with one
// bad term (an unknown name, an unknown node), is refused at the unknown
// name's line and column in the file.
func TestBlockScalarExprPositions(t *testing.T) {
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewSource(seed))
	reg := nodes.Registry()
	for i := 0; i < 60; i++ {
		bad := []string{"nosuch", "len(nodes.nosuch.text)"}[rnd.Intn(2)]
		n := 2 + rnd.Intn(5)
		at := rnd.Intn(n)
		indent := strings.Repeat(" ", 6+rnd.Intn(4))
		var b strings.Builder
		b.WriteString(indent)
		for k := 0; k < n; k++ {
			if k > 0 {
				b.WriteString(" +")
				if rnd.Intn(2) == 0 {
					b.WriteString("\n" + indent + strings.Repeat(" ", rnd.Intn(3)))
				} else {
					b.WriteString(" ")
				}
			}
			if k == at {
				b.WriteString(bad)
			} else {
				b.WriteString([]string{"len(vars.xs)", "2", "vars.xs[0]"}[rnd.Intn(3)])
			}
		}
		ind := []string{"|", ">"}[rnd.Intn(2)] + []string{"", "-", "+"}[rnd.Intn(3)]
		src := fmt.Sprintf(`version: 1
name: s
agents:
  a: {name: A}
vars:
  xs: [1, 2]
nodes:
  n:
    kind: compute
    value: %s
%s
flow: [n]
`, ind, b.String())
		_, diags := spec.Compile("s.yaml", []byte(src), reg)
		lines := strings.Split(src, "\n")
		found := false
		for _, d := range diags.Errors() {
			if d.Pos.Line >= 1 && d.Pos.Line <= len(lines) && d.Pos.Col >= 1 && strings.HasPrefix(lines[d.Pos.Line-1][min(d.Pos.Col-1, len(lines[d.Pos.Line-1])):], "nosuch") {
				found = true
			}
		}
		if !found {
			t.Fatalf("%s is not refused at its place:\n%s\n%s", bad, src, diags.Error())
		}
	}
}
