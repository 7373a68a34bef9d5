package rundir

import (
	"errors"
	"fmt"
	"io"
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

// TestBatchReplaceWith: files whose bytes a function streams are replaced
// like the others, each with what was written to its writer, and a
// function's error fails the batch with no file of it, nor of the batch,
// in place and no temporary file left.
func TestBatchReplaceWith(t *testing.T) {
	dir := t.TempDir()
	var b Batch
	b.ReplaceWith([]string{filepath.Join(dir, "a.md"), filepath.Join(dir, "a.html")}, func(w []io.Writer) error {
		for i := range 3 {
			fmt.Fprintf(w[0], "md %d\n", i)
			fmt.Fprintf(w[1], "html %d\n", i)
		}
		return nil
	})
	b.Replace(filepath.Join(dir, "run.json"), []byte("{}"))
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"a.md": "md 0\nmd 1\nmd 2\n", "a.html": "html 0\nhtml 1\nhtml 2\n", "run.json": "{}"} {
		if got, err := os.ReadFile(filepath.Join(dir, path)); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", path, got, err, want)
		}
	}
	noTemporary(t, dir)

	b.ReplaceWith([]string{filepath.Join(dir, "b.md"), filepath.Join(dir, "b.html")}, func(w []io.Writer) error {
		fmt.Fprint(w[0], "half")
		return errors.New("the report failed")
	})
	b.Replace(filepath.Join(dir, "run.json"), []byte("{\"new\": true}"))
	if err := b.Sync(); err == nil || !strings.Contains(err.Error(), "the report failed") {
		t.Fatalf("Sync = %v, want the fill's error", err)
	}
	for _, name := range []string{"b.md", "b.html"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s exists after a failed batch (%v)", name, err)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "run.json")); string(got) != "{}" {
		t.Errorf("a failed batch replaced run.json with %q", got)
	}
	noTemporary(t, dir)
}
