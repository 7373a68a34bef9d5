package examples_test

import (
	"os"
	"testing"

	"github.com/debate-runner/runner/internal/mcptest"
	"github.com/debate-runner/runner/internal/runtest"
)

// TestMain keeps the response cache of every run these tests make out of
// the user's cache directory, and removes the binary tests built.
func TestMain(m *testing.M) {
	mcptest.ServeIfDemo()
	code := runtest.IsolateCache(m)
	removeBinary()
	os.Exit(code)
}
