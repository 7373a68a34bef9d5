package spectest_test

import (
	"os"
	"testing"

	"github.com/debate-runner/runner/internal/mcptest"
)

// TestMain serves examples/mcp-tools' server when the spec tests of every
// example start this binary as it (command: runner, as runner mcp-demo).
func TestMain(m *testing.M) {
	mcptest.ServeIfDemo()
	os.Exit(m.Run())
}
