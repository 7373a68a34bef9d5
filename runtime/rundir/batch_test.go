package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBatch: staged files are written in place, replaced ones through a
// temporary file that is gone afterwards, each with its data; a batch that
// cannot write one of its files fails and leaves no temporary file and
// no replaced file changed.
func TestBatch(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "lib")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "old.json"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.Stage(filepath.Join(sub, "a.tmpl"), []byte("A"))
	b.Replace(filepath.Join(dir, "old.json"), []byte("new"))
	b.Replace(filepath.Join(dir, "fresh.md"), []byte("fresh"))
	b.Folder(dir)
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"lib/a.tmpl": "A", "old.json": "new", "fresh.md": "fresh"} {
		got, err := os.ReadFile(filepath.Join(dir, path))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", path, got, err, want)
		}
	}
	noTemporary(t, dir)

	b.Replace(filepath.Join(dir, "old.json"), []byte("newer"))
	b.Replace(filepath.Join(dir, "missing", "x.json"), []byte("x"))
	if err := b.Sync(); err == nil {
		t.Fatal("a batch with a file in a missing folder succeeded")
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "old.json")); string(got) != "new" {
		t.Errorf("a failed batch replaced old.json with %q", got)
	}
	noTemporary(t, dir)
}

func noTemporary(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}
