package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/spec/value"
)

// contextDir builds a context folder inside a temporary directory, with a
// secret file beside it and links pointing in and out.
func contextDir(t *testing.T) (dir, secret string) {
	t.Helper()
	tmp := t.TempDir()
	dir = filepath.Join(tmp, "ctx")
	files := map[string]string{
		"ctx/notes.md":        "NOTES",
		"ctx/sub/rooms.csv":   "room,device",
		"ctx/big.txt":         strings.Repeat("x", MaxFileBytes+10),
		"outside/secret.txt":  "TOP-SECRET",
		"ctx/empty/.keep-out": "",
	}
	for name, text := range files {
		p := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(dir, "empty", ".keep-out")); err != nil {
		t.Fatal(err)
	}
	secret = filepath.Join(tmp, "outside", "secret.txt")
	links := map[string]string{
		"out.txt":     secret,                        // absolute, outside
		"up.txt":      "../outside/secret.txt",       // relative, outside
		"in.txt":      "notes.md",                    // inside
		"sub/back.md": "../notes.md",                 // inside, through a folder
		"outdir":      filepath.Join(tmp, "outside"), // a folder outside
	}
	for link, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Skipf("symbolic links unavailable: %v", err)
		}
	}
	return dir, secret
}

func TestFileTools(t *testing.T) {
	dir, secret := contextDir(t)
	tests := []struct {
		name, tool, args string
		want             string // the result contains it
		err              string // the error contains it ("" for success)
	}{
		{"read", ReadFile, `{"path": "notes.md"}`, "NOTES", ""},
		{"read in a folder", ReadFile, `{"path": "sub/rooms.csv"}`, "room,device", ""},
		{"dot segments that stay inside", ReadFile, `{"path": "sub/../notes.md"}`, "NOTES", ""},
		{"link inside", ReadFile, `{"path": "in.txt"}`, "NOTES", ""},
		{"link inside through a folder", ReadFile, `{"path": "sub/back.md"}`, "NOTES", ""},
		{"truncated", ReadFile, `{"path": "big.txt"}`, "[truncated: the file is", ""},
		{"parent", ReadFile, `{"path": "../outside/secret.txt"}`, "", "leaves the context directory"},
		{"parent after a folder", ReadFile, `{"path": "sub/../../outside/secret.txt"}`, "", "leaves the context directory"},
		{"just parent", ListFiles, `{"path": ".."}`, "", "leaves the context directory"},
		{"absolute", ReadFile, `{"path": "` + secret + `"}`, "", "is an absolute path"},
		{"absolute link out", ReadFile, `{"path": "out.txt"}`, "", "leaves the context directory"},
		{"relative link out", ReadFile, `{"path": "up.txt"}`, "", "leaves the context directory"},
		{"folder link out", ReadFile, `{"path": "outdir/secret.txt"}`, "", "leaves the context directory"},
		{"list folder link out", ListFiles, `{"path": "outdir"}`, "", "leaves the context directory"},
		{"missing", ReadFile, `{"path": "nope.md"}`, "", `cannot open "nope.md"`},
		{"folder", ReadFile, `{"path": "sub"}`, "", "is a folder; use list_files"},
		{"list root", ListFiles, `{}`, "big.txt\nempty/\nin.txt (link)\nnotes.md\nout.txt (link)\noutdir (link)\nsub/\nup.txt (link)", ""},
		{"list with no arguments", ListFiles, ``, "notes.md", ""},
		{"list sub", ListFiles, `{"path": "sub"}`, "back.md (link)\nrooms.csv", ""},
		{"list empty", ListFiles, `{"path": "empty"}`, "(empty folder)", ""},
		{"list a file", ListFiles, `{"path": "notes.md"}`, "", "cannot list"},
		{"bad JSON", ReadFile, `{"path": `, "", "arguments are not a JSON object"},
		{"JSON not an object", ReadFile, `["notes.md"]`, "", "arguments are not a JSON object"},
		{"unknown tool", "delete_file", `{"path": "notes.md"}`, "", `unknown tool "delete_file"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Call(Env{Dir: dir}, tc.tool, tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("result %q, error %v; want an error containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("result %q, want it to contain %q", got, tc.want)
			}
			if strings.Contains(got, "TOP-SECRET") {
				t.Errorf("read a file outside the context directory: %q", got)
			}
		})
	}
	if got, _ := Call(Env{Dir: dir}, ReadFile, `{"path": "big.txt"}`); len(got) > MaxFileBytes+200 {
		t.Errorf("read_file returned %d bytes, more than its limit of %d", len(got), MaxFileBytes)
	}
}

func TestFileToolsNeedADirectory(t *testing.T) {
	for _, tool := range []string{ReadFile, ListFiles} {
		if _, err := Call(Env{}, tool, `{"path": "notes.md"}`); err == nil || !strings.Contains(err.Error(), "--context DIR") {
			t.Errorf("%s without a context directory: error %v", tool, err)
		}
	}
	if _, err := Call(Env{Dir: filepath.Join(t.TempDir(), "gone")}, ListFiles, `{}`); err == nil {
		t.Error("a missing context directory gave no error")
	}
}

func TestSearchHistory(t *testing.T) {
	msgs := []*value.Message{
		{ID: "m1", From: "arch", Record: "proposal", Round: 1, Content: "Use PostgreSQL with an exclusion constraint per practitioner."},
		{ID: "m2", From: "sec", To: "arch", Record: "critique", Round: 1, Content: "The exclusion constraint is fine; audit every read. " + strings.Repeat("Padding words here. ", 30)},
		{ID: "m3", From: "perf", Record: "proposal", Round: 1, Content: "Cache free slots in Redis."},
	}
	tests := []struct {
		name, args string
		want       []string
		not        []string
		err        string
	}{
		{"newest first", `{"query": "EXCLUSION constraint"}`, []string{"[m2] sec to arch (critique, round 1): ...The exclusion constraint", "[m1] arch (proposal, round 1)"}, []string{"[m3]"}, ""},
		{"limit", `{"query": "exclusion", "limit": 1}`, []string{"[m2]"}, []string{"[m1]"}, ""},
		{"excerpt around the match", `{"query": "audit every read"}`, []string{"audit every read"}, []string{strings.Repeat("Padding words here. ", 30)}, ""},
		{"no match", `{"query": "Kafka"}`, []string{`no message contains "Kafka"`}, nil, ""},
		{"query required", `{"limit": 3}`, nil, nil, `"query" is required`},
		{"blank query", `{"query": "  "}`, nil, nil, `"query" is required`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Call(Env{Visible: msgs}, SearchHistory, tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("result lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(got, w) {
					t.Errorf("result has %q:\n%s", w, got)
				}
			}
		})
	}
	if i, j := strings.Index(mustCall(t, msgs), "[m2]"), strings.Index(mustCall(t, msgs), "[m1]"); i < 0 || j < i {
		t.Error("newer messages do not come first")
	}
}

func mustCall(t *testing.T, msgs []*value.Message) string {
	t.Helper()
	got, err := Call(Env{Visible: msgs}, SearchHistory, `{"query": "exclusion"}`)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestDefinitions(t *testing.T) {
	defs := Definitions([]string{SearchHistory, "no_such_tool", ReadFile, ListFiles})
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
		var schema map[string]any
		if err := json.Unmarshal(d.Parameters, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s: parameters are not a JSON object schema: %v", d.Name, err)
		}
		if d.Description == "" {
			t.Errorf("%s has no description", d.Name)
		}
	}
	if strings.Join(names, ",") != "search_history,read_file,list_files" {
		t.Errorf("definitions for %v", names)
	}
}

func TestMerge(t *testing.T) {
	if got := Merge([]string{"read_file", "search_history"}, []string{"search_history", "list_files"}); fmt.Sprint(got) != "[read_file search_history list_files]" {
		t.Errorf("Merge = %v", got)
	}
}
