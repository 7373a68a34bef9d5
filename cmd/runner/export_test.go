package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/exitcode"
)

// runner export --format inspect writes a finished run as an eval log
// (its content is checked in runtime/export) and refuses what is no run.
func TestExportInspect(t *testing.T) {
	runs := t.TempDir()
	code, _, stderr := invoke(t, nil, "run", reasoningSpec, "--offline", "-i", "question=What is 2+3?", "--runs-dir", runs, "-q")
	if code != exitcode.OK && code != exitcode.Inconclusive {
		t.Fatalf("offline run: exit %d\n%s", code, stderr)
	}
	dirs, _ := filepath.Glob(filepath.Join(runs, "*", "result.json"))
	if len(dirs) != 1 {
		t.Fatalf("run directories: %v", dirs)
	}
	out := filepath.Join(t.TempDir(), "logs", "run.json")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := invoke(t, nil, "export", "--format", "inspect", filepath.Dir(dirs[0]), "-o", out); code != exitcode.OK {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var log struct {
		Version int    `json:"version"`
		Status  string `json:"status"`
		Eval    struct {
			Task string `json:"task"`
		} `json:"eval"`
		Samples []struct {
			Input    string           `json:"input"`
			Messages []map[string]any `json:"messages"`
		} `json:"samples"`
	}
	if err := json.Unmarshal(data, &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != 2 || log.Status != "success" || log.Eval.Task != "reasoning-debate" || len(log.Samples) != 1 ||
		log.Samples[0].Input != "What is 2+3?" || len(log.Samples[0].Messages) != 7 {
		t.Errorf("eval log: %s", data)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"export", filepath.Dir(dirs[0])}, "--format"},
		{[]string{"export", "--format", "csv", filepath.Dir(dirs[0])}, "csv"},
		{[]string{"export", "--format", "inspect", runs}, runs},
	} {
		code, stdout, stderr := invoke(t, nil, tc.args...)
		if code != exitcode.Usage || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 naming %q", tc.args, code, stderr, stdout, tc.want)
		}
	}
}
