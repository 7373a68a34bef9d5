package examples_test

import (
	"fmt"
	"os"
	"testing"
)

// TestMain keeps the response cache of every run these tests make (in
// process or through the built binary, which inherits the environment) in a
// temporary directory instead of the user's cache.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "runner-test-cache-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("RUNNER_CACHE_DIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
