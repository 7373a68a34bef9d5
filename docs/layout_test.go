package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
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

// rootFileGraph is which files of runtime's root package (its Go files
// other than tests) reference which others, with the names referenced: a
// file references another when it uses a name the other declares (a
// package-level name, a method, a field of a struct). It type-checks the
// package on its own, with every import an empty package, which resolves
// every use of the package's own names.
func rootFileGraph(t *testing.T) (files []string, refs map[string]map[string][]string) {
	t.Helper()
	dir := filepath.Join("..", "runtime")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var parsed []*ast.File
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
		files = append(files, name)
	}
	empty := importerFunc(func(path string) (*types.Package, error) {
		name := path[strings.LastIndex(path, "/")+1:]
		p := types.NewPackage(path, name)
		p.MarkComplete()
		return p, nil
	})
	conf := types.Config{Importer: empty, Error: func(error) {}}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, _ := conf.Check(module+"runtime", fset, parsed, info)
	fileOf := func(p token.Pos) string { return filepath.Base(fset.Position(p).Filename) }
	refs = map[string]map[string][]string{}
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		switch o := obj.(type) {
		case *types.Func:
		case *types.Var:
			if !o.IsField() && o.Parent() != pkg.Scope() {
				continue
			}
		case *types.TypeName, *types.Const:
			if o.Parent() != pkg.Scope() {
				continue
			}
		default:
			continue
		}
		from, to := fileOf(id.Pos()), fileOf(obj.Pos())
		if from == to {
			continue
		}
		if refs[from] == nil {
			refs[from] = map[string][]string{}
		}
		if !slices.Contains(refs[from][to], obj.Name()) {
			refs[from][to] = append(refs[from][to], obj.Name())
		}
	}
	for _, m := range refs {
		for _, names := range m {
			slices.Sort(names)
		}
	}
	return files, refs
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// cycles are the groups of files that reference each other (strongly
// connected components of more than one file), each sorted.
func cycles(files []string, refs map[string]map[string][]string) [][]string {
	index, low := map[string]int{}, map[string]int{}
	var stack []string
	on := map[string]bool{}
	var out [][]string
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		on[v] = true
		for _, w := range slices.Sorted(maps.Keys(refs[v])) {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var group []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				group = append(group, w)
				if w == v {
					break
				}
			}
			if len(group) > 1 {
				slices.Sort(group)
				out = append(out, group)
			}
		}
	}
	for _, f := range files {
		if _, seen := index[f]; !seen {
			visit(f)
		}
	}
	return out
}

// TestRuntimeRootOneWay keeps what docs/layout.md says of runtime's root
// package true: its files reference each other one way, but for the
// Run's orchestration, the one group of files that reference each other,
// which the page lists. A file outside it that comes to reference one of
// it while the orchestration references the file (a reference back up),
// or files that come to reference each other elsewhere, fail; so does a
// file that joins the orchestration without the page saying so, or one
// that left it while the page still lists it.
func TestRuntimeRootOneWay(t *testing.T) {
	page, err := Page("layout.md")
	if err != nil {
		t.Fatal(err)
	}
	_, para, ok := strings.Cut(page, "Inside `runtime`'s root")
	if !ok {
		t.Fatal("docs/layout.md has no paragraph \"Inside `runtime`'s root\"")
	}
	para, _, _ = strings.Cut(para, "\n\n")
	_, list, ok := strings.Cut(para, "the Run's orchestration (")
	if !ok {
		t.Fatal("docs/layout.md's paragraph on runtime's root names no \"the Run's orchestration (\"")
	}
	list, _, _ = strings.Cut(list, ")")
	var listed []string
	for _, m := range code.FindAllStringSubmatch(list, -1) {
		listed = append(listed, m[1])
	}
	slices.Sort(listed)

	// The packages the paragraph puts below the root are imported by it
	// and import nothing that imports it.
	_, below, ok := strings.Cut(para, "are packages below the root (")
	if !ok {
		t.Fatal("docs/layout.md's paragraph on runtime's root names no packages \"below the root (\"")
	}
	below, _, _ = strings.Cut(below, ")")
	pkgs := packages(t)
	reaches := func(from, to string) bool {
		seen := map[string]bool{}
		var walk func(p string) bool
		walk = func(p string) bool {
			if p == to {
				return true
			}
			if seen[p] {
				return false
			}
			seen[p] = true
			return slices.ContainsFunc(pkgs[p], walk)
		}
		return walk(from)
	}
	for _, m := range code.FindAllStringSubmatch(below, -1) {
		p := m[1]
		if _, ok := pkgs[p]; !ok {
			t.Errorf("docs/layout.md puts %s below runtime's root, but it is no package", p)
			continue
		}
		if !slices.Contains(pkgs["runtime"], p) {
			t.Errorf("docs/layout.md puts %s below runtime's root, but the root does not import it", p)
		}
		if reaches(p, "runtime") {
			t.Errorf("%s, below runtime's root, imports it (through its imports): an import back up", p)
		}
	}

	files, refs := rootFileGraph(t)
	if len(files) < 5 || len(refs) < 5 {
		t.Fatalf("runtime's root: %d files, %d of them referencing others", len(files), len(refs))
	}
	groups := cycles(files, refs)
	var core []string
	for _, g := range groups {
		if slices.Contains(g, "run.go") {
			core = g
			continue
		}
		t.Errorf("files of runtime's root reference each other outside the Run's orchestration: %s", strings.Join(g, ", "))
	}
	for _, f := range core {
		if slices.Contains(listed, f) {
			continue
		}
		// Say which references tie it in: those into the orchestration
		// and those back to it.
		var into, back []string
		for _, to := range slices.Sorted(maps.Keys(refs[f])) {
			if slices.Contains(core, to) {
				into = append(into, fmt.Sprintf("%s (%s)", to, strings.Join(refs[f][to], ", ")))
			}
		}
		for _, from := range core {
			if names, ok := refs[from][f]; ok {
				back = append(back, fmt.Sprintf("%s (%s)", from, strings.Join(names, ", ")))
			}
		}
		t.Errorf("runtime/%s is in the cycle of the Run's orchestration, which docs/layout.md does not list it in: it references %s, and is referenced by %s; keep references one way (move what both use below them) or list it", f, strings.Join(into, "; "), strings.Join(back, "; "))
	}
	for _, f := range listed {
		if !slices.Contains(core, f) {
			t.Errorf("docs/layout.md lists runtime/%s in the Run's orchestration, but it is not in its cycle (or not a file of runtime's root): take it off the list", f)
		}
	}
}
