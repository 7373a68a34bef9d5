//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/exitcode"
)

const specialSpec = `version: 1
name: special
inputs:
  x: {required: true}
  context: {default: ""}
agents:
  a: {name: A}
nodes:
  c:
    kind: compute
    value: inputs.x
flow: [c]
outputs:
  x: nodes.c.output
`

// TestSpecialFilesAreRefused: -i NAME=@PATH and --context FILE given a FIFO
// nobody writes to, or a device, are usage errors at once, not a run that
// waits forever (or reads /dev/zero until memory runs out).
func TestSpecialFilesAreRefused(t *testing.T) {
	specPath := writeSpecFile(t, "spec.yaml", specialSpec)
	fifo := filepath.Join(t.TempDir(), "pipe")
	mkfifo(t, fifo)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-i", "x=@" + fifo}, "--input x: " + fifo + " is not a regular file (a named pipe)"},
		{[]string{"-i", "x=1", "--context", fifo}, "--context " + fifo + ": " + fifo + " is not a regular file (a named pipe)"},
		{[]string{"-i", "x=@/dev/zero"}, "--input x: /dev/zero is not a regular file (a device)"},
	}
	for _, tc := range cases {
		done := make(chan struct{})
		var code int
		var stderr string
		go func() {
			defer close(done)
			args := append([]string{"run", specPath, "-q", "--runs-dir", t.TempDir()}, tc.args...)
			code, _, stderr = invoke(t, nil, args...)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("run %v blocked", tc.args)
		}
		if code != exitcode.Usage || !strings.Contains(stderr, tc.want) {
			t.Errorf("run %v: exit %d, stderr %q; want exit %d naming %q", tc.args, code, stderr, exitcode.Usage, tc.want)
		}
	}
}
