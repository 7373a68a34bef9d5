package examples_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// runnerBinary builds cmd/runner once for the package's tests; TestMain
// removes it.
func runnerBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the runner binary; skipped with -short")
	}
	binOnce.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			binErr = err
			return
		}
		if binDir, binErr = os.MkdirTemp("", "runner-bin-*"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "runner")
		if out, err := exec.Command(goTool, "build", "-o", binPath, "../cmd/runner").CombinedOutput(); err != nil {
			binErr = errors.New(string(out))
		}
	})
	if binErr != nil {
		t.Fatalf("building the binary: %v", binErr)
	}
	return binPath
}

func removeBinary() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}
