package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/providers"
)

// TestNodeKindsPageIsGenerated fails when a kind's schema or manual.md
// changed, or a kind was added, and docs/node-kinds.md was not regenerated.
func TestNodeKindsPageIsGenerated(t *testing.T) {
	data, err := os.ReadFile("../../" + page)
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate("../..")
	if err != nil {
		t.Fatal(err)
	}
	if want != string(data) {
		t.Errorf("%s is stale: run `go generate ./docs`", page)
	}
	if n, kinds := strings.Count(want, endMarker), len(nodes.Kinds()); n != kinds+1 {
		t.Errorf("%d generated tables, want one per kind and one of the chat keys (%d)", n, kinds+1)
	}
}

// TestRenderRefusesAKindWithoutTable: a new kind must get its table.
func TestRenderRefusesAKindWithoutTable(t *testing.T) {
	data, err := os.ReadFile("../../" + page)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), "<!-- generated from nodes/compute/schema.json", "<!-- from nodes/compute/schema.json", 1)
	if _, err := render("../..", text); err == nil || !strings.Contains(err.Error(), "no table of the kind compute") {
		t.Errorf("render without compute's table: err = %v", err)
	}
}

// TestTableRows checks the words of a few rows: types, defaults and
// required keys come from the schema.
func TestTableRows(t *testing.T) {
	table, err := kindTable("../..", "nodes/ask/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{
		"| `template` | string | required | ",
		"| `each.record` | string | required with `each` | ",
		"| `output.repair` | integer 0-10 or string | 2 | ",
		"| `order` | `concurrent`, `sequential` | `concurrent` | ",
		"| `max_tool_calls` | integer ≥ 0 or string | 4 | ",
		"| `record` | id |  | ",
		"`tags` (`<name>value</name>` fields)",
		"| `thread`, `history`, `examples` | | | chat turns",
	} {
		if !strings.Contains(table, row) {
			t.Errorf("the table of ask has no %q:\n%s", row, table)
		}
	}
}

// TestGenerateNeedsEachKindsSection: a registered kind without a
// manual.md, or one without the table's line, is refused by name.
func TestGenerateNeedsEachKindsSection(t *testing.T) {
	root := t.TempDir()
	dirs := []string{"chat"}
	for _, k := range nodes.Kinds() {
		dirs = append(dirs, k.Name())
	}
	for _, dir := range dirs {
		for _, f := range []string{"manual.md", "schema.json"} {
			data, err := os.ReadFile("../../nodes/" + dir + "/" + f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(root+"/nodes/"+dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(root+"/nodes/"+dir+"/"+f, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := generate(root); err != nil {
		t.Fatalf("generate from the copied sections: %v", err)
	}
	manual := root + "/nodes/compute/manual.md"
	data, _ := os.ReadFile(manual)
	if err := os.WriteFile(manual, []byte(strings.Replace(string(data), placeholder, "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := generate(root); err == nil || !strings.Contains(err.Error(), "nodes/compute/manual.md: write the line") {
		t.Errorf("generate without compute's table line: err = %v", err)
	}
	if err := os.Remove(manual); err != nil {
		t.Fatal(err)
	}
	if _, err := generate(root); err == nil || !strings.Contains(err.Error(), "the kind compute, its section of docs/node-kinds.md") {
		t.Errorf("generate without compute's manual.md: err = %v", err)
	}
}

// TestProviderKindsTableIsGenerated holds docs/providers.md's table of
// provider kinds to the registered kinds: one row each, as generated.
func TestProviderKindsTableIsGenerated(t *testing.T) {
	data, err := os.ReadFile("../../" + providersPage)
	if err != nil {
		t.Fatal(err)
	}
	want, err := renderProviders(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if want != string(data) {
		t.Errorf("the table of provider kinds in %s is stale: run `go generate ./docs`", providersPage)
	}
	for _, p := range providers.Kinds() {
		if !strings.Contains(want, "| `"+p.Name()+"` |") {
			t.Errorf("no row of provider kind %s", p.Name())
		}
	}
}

// TestProviderKindsNameTestsThatExist: every test a provider kind's row
// names is a test function of the repository.
func TestProviderKindsNameTestsThatExist(t *testing.T) {
	var sources strings.Builder
	err := filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sources.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	all := sources.String()
	for _, p := range providers.Kinds() {
		names := regexp.MustCompile("`(Test[A-Za-z0-9_]+)`").FindAllStringSubmatch(p.Doc().Test, -1)
		if len(names) == 0 {
			t.Errorf("provider kind %s names no test", p.Name())
		}
		for _, n := range names {
			if !strings.Contains(all, "func "+n[1]+"(") {
				t.Errorf("provider kind %s names %s, which is no test", p.Name(), n[1])
			}
		}
	}
}
