package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/llmtest"
)

// A loop of compute nodes that would run two billion times.
const computeLoopSpec = `version: 1
name: runaway
agents:
  a: {name: A}
nodes:
  c:
    kind: compute
    value: 1
  d:
    kind: compute
    value: nodes.c.output + 1
flow:
  - loop: {max: 2000000000, do: [c, d]}
outputs:
  x: nodes.d.output
`

// A template that ranges over a var of two billion.
const templateRangeSpec = `version: 1
name: runaway-template
vars:
  n: 2000000000
templates:
  define:
    t/a: "{{range .Vars.n}}{{end}}Answer."
agents:
  a: {name: A}
nodes:
  n:
    kind: ask
    agents: [a]
    template: t/a
flow: [n]
`

// TestRunawayEvaluationStops: a compute loop with a huge max and a template
// ranging over a huge number neither hang nor fill the disk. The loop stops
// within seconds at its budget, naming the bound (exit 6), and the dry run
// reports that a real run stops there (exit 0); the template fails on
// every path, so validate refuses it at its position before anything runs
// (exit 4), as it refuses a range over a literal number past the bound.
func TestRunawayEvaluationStops(t *testing.T) {
	srv := llmtest.New(t, func(llmtest.Request) llmtest.Reply { return llmtest.Reply{Content: "ok"} })
	cases := []struct {
		name, spec, want string
		run, dry         int
	}{
		{"compute loop", computeLoopSpec, "budget.max_evaluations", exitcode.Budget, 0},
		{"template range", templateRangeSpec, "spec.yaml:7:18: error: node \"n\": executing \"t/a\" at <rangeBound>: error calling rangeBound: range over 2000000000: a template ranges over at most 10000", exitcode.InvalidSpec, exitcode.InvalidSpec},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			specPath := writeSpecFile(t, "spec.yaml", tc.spec)
			for _, dry := range []bool{false, true} {
				runs := t.TempDir()
				args := []string{"run", specPath, "-q", "--no-cache", "--runs-dir", runs}
				if dry {
					args = []string{"run", specPath, "--dry-run"}
				}
				start := time.Now()
				code, stdout, stderr := invoke(t, e2eEnv(srv), args...)
				if took := time.Since(start); took > 60*time.Second {
					t.Errorf("dry=%v took %v", dry, took)
				}
				want := tc.run
				if dry {
					want = tc.dry
				}
				if code != want || !strings.Contains(stdout+stderr, tc.want) {
					t.Errorf("dry=%v: exit %d, stdout %q, stderr %q; want exit %d naming %q", dry, code, stdout, stderr, want, tc.want)
				}
				if dry {
					continue
				}
				var size int64
				_ = filepath.Walk(runs, func(_ string, info os.FileInfo, err error) error {
					if err == nil {
						size += info.Size()
					}
					return nil
				})
				if size > 16<<20 {
					t.Errorf("the run wrote %d bytes", size)
				}
			}
		})
	}
	literal := writeSpecFile(t, "literal.yaml", strings.Replace(templateRangeSpec, "{{range .Vars.n}}", "{{range 2000000000}}", 1))
	code, _, stderr := invoke(t, nil, "validate", literal)
	if code != exitcode.InvalidSpec || !strings.Contains(stderr, "literal.yaml:7:19: error: template t/a: range over 2000000000: a template ranges over at most 10000") {
		t.Errorf("validate of a literal range: exit %d, stderr %q", code, stderr)
	}
}
