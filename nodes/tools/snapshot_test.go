package tools

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSnapshotAnswersLikeTheDirectory holds a snapshot to the tools' own
// answers on the directory, for paths inside, outside, through links and
// missing, spelled in several ways, after a trip through JSON (it travels
// with a run).
func TestSnapshotAnswersLikeTheDirectory(t *testing.T) {
	dir, _ := contextDir(t)
	snap, err := TakeSnapshot(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	var back Snapshot
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	paths := []string{"", ".", "./", "notes.md", "./notes.md", "sub", "sub/", "sub/rooms.csv", "sub/back.md", "sub/../notes.md",
		"big.txt", "in.txt", "out.txt", "up.txt", "outdir", "outdir/secret.txt", "empty", "missing.md", "sub/missing",
		"../outside/secret.txt", "/etc/passwd", "notes.md/x"}
	for _, p := range paths {
		for _, tool := range []string{ReadFile, ListFiles} {
			args, _ := json.Marshal(map[string]string{"path": p})
			want, wantErr := Call(Env{Dir: dir}, tool, string(args))
			got, gotErr := Call(Env{Snapshot: &back}, tool, string(args))
			if got != want || errText(gotErr) != errText(wantErr) {
				if p == "notes.md/x" && strings.Contains(errText(wantErr), "not a directory") {
					continue // a path under a file: the snapshot knows no such path
				}
				t.Errorf("%s(%q): snapshot says %q, %v; the directory says %q, %v", tool, p, got, gotErr, want, wantErr)
			}
		}
	}
	if _, err := TakeSnapshot(dir, 1000); err == nil || !strings.Contains(err.Error(), "too much to send") {
		t.Errorf("a snapshot over its limit: %v", err)
	}
}
