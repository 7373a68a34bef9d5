package examples_test

import (
	"os"
	"testing"

	"github.com/debate-runner/runner/internal/runtest"
)

// TestMain keeps the response cache of every run these tests make out of
// the user's cache directory.
func TestMain(m *testing.M) { os.Exit(runtest.IsolateCache(m)) }
