package rundir

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/runtime/result"
)

// TestWriteFile: the file gets the data and no temporary file is left
// behind, whether the write succeeds or fails (here: the target is a
// directory, so the final rename fails).
func TestWriteFile(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, path string)
		wantErr bool
	}{
		{name: "new file"},
		{name: "replaces a file", prepare: func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "target is a directory", wantErr: true, prepare: func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "result.json")
			if tt.prepare != nil {
				tt.prepare(t, path)
			}
			err := WriteFile(path, []byte("new\n"))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			if !tt.wantErr {
				if got, err := os.ReadFile(path); err != nil || string(got) != "new\n" {
					t.Errorf("file holds %q (%v), want %q", got, err, "new\n")
				}
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("directory holds %v, want only result.json", names)
			}
		})
	}
}

// TestWriteJSON: the file holds exactly what json.MarshalIndent gives,
// plus a newline; a value that cannot be encoded leaves no file behind.
func TestWriteJSON(t *testing.T) {
	tests := []struct {
		name    string
		v       any
		wantErr bool
	}{
		{name: "result-like", v: map[string]any{
			"status": "completed", "text": "a <b> & c\u2028\n", "n": 1.5, "list": []any{1, "x", nil, map[string]any{}},
			"empty": []string{}, "nested": map[string]any{"z": true, "a": []int{}},
		}},
		{name: "struct", v: result.Manifest{RunID: "r", Inputs: map[string]any{"q": "<?>"}}},
		{name: "not encodable", v: map[string]any{"c": make(chan int)}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "result.json")
			err := WriteJSON(path, tt.v)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %v", err, tt.wantErr)
			}
			if tt.wantErr {
				if entries, _ := os.ReadDir(dir); len(entries) != 0 {
					t.Errorf("a failed write left %d files", len(entries))
				}
				return
			}
			want, err := json.MarshalIndent(tt.v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want)+"\n" {
				t.Errorf("file holds\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestLock: a run directory is locked by one holder at a time, and free
// again once the holder lets go.
func TestLock(t *testing.T) {
	dir := t.TempDir()
	first, err := TakeLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TakeLock(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: %v, want ErrLocked", err)
	}
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	again, err := TakeLock(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	_ = again.Unlock()
}

// TestCreate: directories are unique, named by time, name and a random
// part, and never reused.
func TestCreate(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "runs")
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	seen := map[string]bool{}
	for range 20 {
		id, dir, err := Create(parent, "sweep-", "my spec/v2", SweepTime, now)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(id, "20261123T100000Z-my-spec-v2-") || filepath.Base(dir) != "sweep-"+id || seen[id] {
			t.Errorf("id %q, dir %q", id, dir)
		}
		seen[id] = true
	}
	if Name("") != "run" || Name("a.b_c-d") != "a-b_c-d" {
		t.Errorf("Name: %q %q", Name(""), Name("a.b_c-d"))
	}
}
