package main

import (
	"context"
	"os"
	"testing"

	"github.com/debate-runner/runner/internal/mcptest"
	"github.com/debate-runner/runner/internal/runtest"
)

// TestMain keeps the response cache of every run these tests make out of
// the user's cache directory, and removes the binary tests built.
func TestMain(m *testing.M) {
	mcptest.ServeIfDemo()
	if os.Getenv("RUNNER_MCPTEST_STDIO") != "" {
		// The test binary started again as the MCP server of a spec.
		_ = mcptest.ServeStdio(context.Background(), os.Getenv("MCPTEST_COUNT"))
		os.Exit(0)
	}
	code := runtest.IsolateCache(m)
	removeBinary()
	os.Exit(code)
}
