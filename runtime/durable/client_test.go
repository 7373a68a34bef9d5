package durable

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/debate-runner/runner/nodes/tools"
)

// TestReadContext: a run reads its own snapshot or its sweep's, none when
// its record names none, and refuses a record naming any other file.
func TestReadContext(t *testing.T) {
	sweep := t.TempDir()
	run := filepath.Join(sweep, "run-1")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	snap := &tools.Snapshot{Answers: map[string]tools.Answer{"notes.md": {Read: "42"}}}
	for _, dir := range []string{sweep, run} {
		if err := WriteContext(dir, snap); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{ContextFile, SweepContextFile} {
		got, err := ReadContext(run, Record{ContextFile: name})
		if err != nil || got == nil || got.Answers["notes.md"].Read != "42" {
			t.Errorf("ReadContext(%s) = %+v, %v", name, got, err)
		}
	}
	if got, err := ReadContext(run, Record{}); got != nil || err != nil {
		t.Errorf("a record without context gave %+v, %v", got, err)
	}
	if _, err := ReadContext(run, Record{ContextFile: "../../etc/passwd"}); err == nil {
		t.Error("a record naming another file was read")
	}
	if _, err := ReadContext(sweep, Record{ContextFile: SweepContextFile}); err == nil {
		t.Error("a missing snapshot gave no error")
	}
}
