package runtime

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFileAtomic: the file gets the data and no temporary file is left
// behind, whether the write succeeds or fails (here: the target is a
// directory, so the final rename fails).
func TestWriteFileAtomic(t *testing.T) {
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
			err := writeFileAtomic(path, []byte("new\n"))
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

// TestWriteJSONAtomic: the file holds exactly what json.MarshalIndent gives,
// plus a newline; a value that cannot be encoded leaves no file behind.
func TestWriteJSONAtomic(t *testing.T) {
	tests := []struct {
		name    string
		v       any
		wantErr bool
	}{
		{name: "result-like", v: map[string]any{
			"status": "completed", "text": "a <b> & c\u2028\n", "n": 1.5, "list": []any{1, "x", nil, map[string]any{}},
			"empty": []string{}, "nested": map[string]any{"z": true, "a": []int{}},
		}},
		{name: "struct", v: Manifest{RunID: "r", Inputs: map[string]any{"q": "<?>"}}},
		{name: "not encodable", v: map[string]any{"c": make(chan int)}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "result.json")
			err := writeJSONAtomic(path, tt.v)
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
