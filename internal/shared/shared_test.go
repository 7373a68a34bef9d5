package shared

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRequired(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"CI": "true"}, true},
		{map[string]string{"CI": "1"}, true},
		{map[string]string{"CI": "false"}, false},
		{map[string]string{"RUNNER_REQUIRE_SHARED": "1"}, true},
		{map[string]string{"RUNNER_REQUIRE_SHARED": "0"}, false},
	} {
		if got := Required(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("Required(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}

// TestFind lays out a checkout with and without a shared folder beside it.
func TestFind(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	pkg := filepath.Join(repo, "nodes", "converse")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := find(pkg, "data/dialectic"); err == nil || !strings.Contains(err.Error(), "../shared/data/dialectic not found") {
		t.Errorf("without ../shared: err = %v, want one naming ../shared/data/dialectic", err)
	}
	want := filepath.Join(root, "shared", "data", "dialectic")
	if err := os.MkdirAll(want, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := find(pkg, "data/dialectic")
	if err != nil || got != want {
		t.Errorf("with ../shared: find = %q, %v; want %q", got, err, want)
	}
}
