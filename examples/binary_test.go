package examples_test

import (
	"testing"

	"github.com/debate-runner/runner/internal/runtest"
)

// bin is the command the package's tests run; TestMain removes it.
var bin runtest.Binary

// runnerBinary builds the command once for the package's tests.
func runnerBinary(t *testing.T) string {
	t.Helper()
	return bin.Path(t, "../cmd/runner")
}

// removeBinary deletes what runnerBinary built.
func removeBinary() { bin.Remove() }
