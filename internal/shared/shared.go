// Package shared finds ../shared, the folder beside the checkout that holds
// the design documents and the recorded debates some tests replay. It is not
// part of the repository, so a fresh clone has none: a test that needs it
// asks Dir, which skips the test with a message naming ../shared, unless the
// environment requires the folder (CI=true or RUNNER_REQUIRE_SHARED=1; .ci/run
// sets the latter), and then fails it. It imports nothing of the module, so
// any package's tests can use it.
package shared

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Required says whether the environment requires ../shared: CI=true (as CI
// services set it) or RUNNER_REQUIRE_SHARED=1.
func Required(getenv func(string) string) bool {
	ci := getenv("CI")
	return ci == "true" || ci == "1" || getenv("RUNNER_REQUIRE_SHARED") == "1"
}

// Dir is the folder sub (e.g. "data/dialectic") of ../shared beside the
// checkout that holds the test's package. When it is absent, the test is
// skipped, or failed when Required.
func Dir(t testing.TB, sub string) string {
	t.Helper()
	dir, err := find(".", sub)
	if err == nil {
		return dir
	}
	if Required(os.Getenv) {
		t.Fatalf("%v; CI=true or RUNNER_REQUIRE_SHARED=1 requires ../shared (the design documents and recordings beside the checkout)", err)
	}
	t.Skipf("%v: this test needs ../shared (the design documents and recordings beside the checkout, not part of the repository); RUNNER_REQUIRE_SHARED=1 fails it instead", err)
	return ""
}

// find looks for ../shared/sub beside the module that holds the folder
// from: the nearest folder above it with a go.mod.
func find(from, sub string) (string, error) {
	dir, err := filepath.Abs(from)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test's folder, so no ../shared beside it")
		}
		dir = parent
	}
	want := filepath.Join(filepath.Dir(dir), "shared", filepath.FromSlash(sub))
	info, err := os.Stat(want)
	if err != nil {
		return "", fmt.Errorf("../shared/%s not found (looked for %s)", sub, want)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("../shared/%s is not a folder (%s)", sub, want)
	}
	return want, nil
}
