package docs

import (
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/debate-runner/runner/"

// packages are the module's packages (as paths relative to the root) with
// the module packages each imports, from go list.
func packages(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		var imports []string
		for _, imp := range fields[1:] {
			if rel, ok := strings.CutPrefix(imp, module); ok {
				imports = append(imports, rel)
			}
		}
		pkgs[strings.TrimPrefix(fields[0], module)] = imports
	}
	return pkgs
}

var code = regexp.MustCompile("`([^`]+)`")

// TestLayoutListsEveryPackage keeps docs/layout.md true to `go list ./...`:
// every package is a row of the table or named (by its path below the
// row's folder) in the row of a folder above it (the node kinds, which the
// registry imports, need not be), every row names a
// folder that holds packages, and the chain of imports it states is the
// one the packages have.
func TestLayoutListsEveryPackage(t *testing.T) {
	page, err := Page("layout.md")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := packages(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list gave %d packages", len(pkgs))
	}
	type row struct {
		names []string
		text  string
	}
	var rows []row
	for _, line := range strings.Split(page, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") || strings.TrimSpace(cells[1]) == "folder" {
			continue
		}
		r := row{text: cells[2]}
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			r.names = append(r.names, m[1])
		}
		rows = append(rows, r)
	}
	holds := func(folder string) bool {
		for p := range pkgs {
			if p == folder || strings.HasPrefix(p, folder+"/") {
				return true
			}
		}
		return false
	}
	for _, r := range rows {
		for _, n := range r.names {
			if !holds(n) {
				t.Errorf("docs/layout.md has a row for %s, which holds no package", n)
			}
		}
	}
	for p := range pkgs {
		listed := false
		for _, r := range rows {
			for _, n := range r.names {
				if p == n {
					listed = true
				} else if below, ok := strings.CutPrefix(p, n+"/"); ok {
					listed = listed || strings.Contains(r.text, "`"+below+"`") || strings.Contains(r.text, "`"+p+"`")
				}
			}
		}
		// The node kinds are the packages below nodes/ that the registry
		// (package nodes) imports: the row of nodes says so instead of
		// naming each, so that a new kind needs no edit of this page.
		if strings.HasPrefix(p, "nodes/") && slices.Contains(pkgs["nodes"], p) {
			listed = true
		}
		// So are the provider kinds, below providers/.
		if strings.HasPrefix(p, "providers/") && slices.Contains(pkgs["providers"], p) {
			listed = true
		}
		if !listed {
			t.Errorf("docs/layout.md does not list the package %s (a row of its own, or `name` in the row of its folder)", p)
		}
	}

	// The chain: groups of packages separated by arrows. A name stands for
	// its package or, when it is a folder without one (cmd), the packages
	// below it.
	_, chain, ok := strings.Cut(page, "Imports flow one way:")
	if !ok {
		t.Fatal(`docs/layout.md has no "Imports flow one way:"`)
	}
	chain, _, _ = strings.Cut(chain, "(")
	var groups [][]string
	for _, part := range strings.Split(chain, "→") {
		var group []string
		for _, m := range code.FindAllStringSubmatch(part, -1) {
			n := m[1]
			if _, ok := pkgs[n]; ok {
				group = append(group, n)
				continue
			}
			found := false
			for p := range pkgs {
				if strings.HasPrefix(p, n+"/") {
					group = append(group, p)
					found = true
				}
			}
			if !found {
				t.Errorf("docs/layout.md's import chain names %s, which is no package", n)
			}
		}
		groups = append(groups, group)
	}
	if len(groups) < 4 {
		t.Fatalf("docs/layout.md's import chain has %d groups", len(groups))
	}
	for i, g := range groups {
		for _, p := range g {
			for _, imp := range pkgs[p] {
				for j := range i {
					if slices.Contains(groups[j], imp) {
						t.Errorf("docs/layout.md says imports flow one way, but %s imports %s, which comes before it", p, imp)
					}
				}
			}
		}
		if i+1 < len(groups) {
			edge := false
			for _, p := range g {
				for _, imp := range pkgs[p] {
					edge = edge || slices.Contains(groups[i+1], imp)
				}
			}
			if !edge {
				t.Errorf("docs/layout.md's import chain has %v → %v, but none of the first imports any of the second", g, groups[i+1])
			}
		}
	}
}
