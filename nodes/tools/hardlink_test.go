package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadFileRefusesHardLinksLeavingTheFolder: confinement by path cannot
// see a hard link, which is a second name of a file outside the folder;
// read_file (and the snapshot a run takes) refuses a file with a name
// outside the context folder, and reads one whose names are all inside.
func TestReadFileRefusesHardLinksLeavingTheFolder(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("the secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Link(secret, filepath.Join(dir, "innocent.txt")); err != nil {
		t.Skipf("hard links not supported here: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("the notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "notes.md"), filepath.Join(dir, "sub", "again.md")); err != nil {
		t.Fatal(err)
	}

	got, err := Call(Env{Dir: dir}, ReadFile, `{"path": "innocent.txt"}`)
	if err == nil || strings.Contains(got, "the secret") || !strings.Contains(err.Error(), "hard links") {
		t.Errorf("read_file of a hard link to a file outside = %q, %v; want a refusal naming hard links", got, err)
	}
	for _, p := range []string{"notes.md", "sub/again.md"} {
		if got, err := Call(Env{Dir: dir}, ReadFile, `{"path": "`+p+`"}`); err != nil || got != "the notes" {
			t.Errorf("read_file %s (both names inside) = %q, %v", p, got, err)
		}
	}

	snap, err := TakeSnapshot(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := (Env{Snapshot: snap}).call(ReadFile, "innocent.txt"); err == nil || strings.Contains(got, "the secret") {
		t.Errorf("the snapshot answers read_file of the hard link with %q, %v", got, err)
	}
}

func (e Env) call(tool, path string) (string, error) {
	return Call(e, tool, `{"path": "`+path+`"}`)
}
