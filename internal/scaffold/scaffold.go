// Package scaffold writes a new project from a shipped example (`runner
// init`): the spec with its prompt templates copied beside it so they can
// be edited, its test file and golden prompts, the files it reads, a
// .env.example of the variables its endpoints need, and the JSON Schemas
// its editor modelines point to.
package scaffold

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/debate-runner/runner/examples"
	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime/rundir"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/templates"
)

// Default is the starting point used when none is named: the smallest
// spec, cheap to run.
const Default = "reasoning-debate"

// Starts lists the starting points with a line about each.
func Starts() []Start {
	var out []Start
	for _, name := range examples.Names() {
		s := Start{Name: name}
		if data, err := fs.ReadFile(examples.FS(), path.Join(name, "spec.yaml")); err == nil {
			var head struct {
				Description string `yaml:"description"`
			}
			if yaml.Unmarshal(data, &head) == nil {
				s.Description = strings.Join(strings.Fields(head.Description), " ")
			}
		}
		out = append(out, s)
	}
	return out
}

// Start is a starting point.
type Start struct {
	Name, Description string
}

// Find resolves a starting point's name: its path below examples/ or,
// when that is unambiguous, its last element.
func Find(name string) (string, error) {
	names := examples.Names()
	var byBase []string
	for _, n := range names {
		if n == name {
			return n, nil
		}
		if path.Base(n) == name {
			byBase = append(byBase, n)
		}
	}
	if len(byBase) == 1 {
		return byBase[0], nil
	}
	return "", fmt.Errorf("no starting point %q: choose one of %s", name, strings.Join(names, ", "))
}

// Options say how to write a project.
type Options struct {
	// From is the starting point (see Find).
	From string
	// KeepLibraries leaves the spec on the embedded template libraries
	// instead of copying them into templates/.
	KeepLibraries bool
	// Force overwrites files that exist.
	Force bool
	// Registry compiles the spec, to check it and to find the variables
	// its endpoints read.
	Registry *spec.Registry
	// Schemas are the files to write under schemas/, by name.
	Schemas map[string][]byte
}

// Write writes a project into dir and returns the files written,
// relative to dir. Nothing is written when a file would be overwritten
// without Force.
func Write(dir string, opts Options) ([]string, error) {
	from, err := Find(opts.From)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "--from %s: %v", opts.From, err)
	}
	files, err := projectFiles(from, opts)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files)+1)
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	if !opts.Force {
		var exist []string
		for _, name := range append(names, ".env.example") {
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name))); err == nil {
				exist = append(exist, name)
			}
		}
		if len(exist) > 0 {
			return nil, &ExistsError{Dir: dir, Files: exist}
		}
	}
	for _, name := range names {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := WriteFile(p, files[name]); err != nil {
			return nil, err
		}
	}
	specPath := filepath.Join(dir, "spec.yaml")
	plan, diags := spec.Load(specPath, opts.Registry)
	if diags.HasErrors() {
		return names, fmt.Errorf("the new spec does not validate (a bug in runner init; please report it):\n%s", diags.Errors().Format())
	}
	if err := WriteFile(filepath.Join(dir, ".env.example"), envExample(plan)); err != nil {
		return names, err
	}
	names = append(names, ".env.example")
	ignore := filepath.Join(dir, ".gitignore")
	if _, err := os.Stat(ignore); errors.Is(err, fs.ErrNotExist) {
		if err := WriteFile(ignore, []byte("# Run directories and secrets stay out of git.\nruns/\n.env\n")); err != nil {
			return names, err
		}
		names = append(names, ".gitignore")
	}
	sort.Strings(names)
	return names, nil
}

// ExistsError refuses to overwrite files.
type ExistsError struct {
	Dir   string
	Files []string
}

// ExitCode is a usage error's: the command line asks to overwrite.
func (e *ExistsError) ExitCode() int { return exitcode.Usage }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("%s already has %s; choose another folder or use --force to overwrite", e.Dir, strings.Join(e.Files, ", "))
}

// Modelines of the written spec and test file: the schemas sit in
// schemas/ beside them.
const (
	specModeline = "# yaml-language-server: $schema=schemas/spec.schema.json"
	testModeline = "# yaml-language-server: $schema=schemas/test.schema.json"
)

// projectFiles gathers the files of a project from a starting point, by
// their slash-separated path in the project.
func projectFiles(from string, opts Options) (map[string][]byte, error) {
	files := map[string][]byte{}
	fsys := examples.FS()
	err := fs.WalkDir(fsys, from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, from), "/")
		if d.IsDir() {
			// The starting point's own files and its golden prompts;
			// not the examples below it, nor tools (gen/).
			if p != from && !strings.HasSuffix(d.Name(), ".golden") {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		files[rel] = data
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, ok := files["spec.yaml"]; !ok {
		return nil, fmt.Errorf("starting point %s has no spec.yaml", from)
	}
	// Every spec of the starting point (a baseline beside the spec, say)
	// and every test file points at the schemas in schemas/ and, unless
	// the libraries are kept, at the templates copied into templates/.
	libs := map[string]bool{}
	for name, data := range files {
		switch {
		case strings.HasSuffix(name, ".test.yaml"):
			data = []byte(strings.ReplaceAll(string(data), "examples/"+from+"/", ""))
			data = []byte(strings.ReplaceAll(string(data), "examples/"+from, "."))
			files[name] = setModeline(data, testModeline)
		case strings.HasSuffix(name, ".yaml") && isSpec(data):
			data = setModeline(data, specModeline)
			if !opts.KeepLibraries {
				var used []string
				data, used, err = ejectLibraries(data)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				for _, lib := range used {
					libs[lib] = true
				}
			}
			files[name] = data
		case name == "README.md":
			files[name] = localPaths(data, from)
		}
	}
	for ref := range libs {
		// The version the example names (its newest when unpinned) is
		// what the project gets a copy of.
		lib, v, pinned, _ := templates.Split(ref)
		if !pinned {
			v = templates.Newest(lib)
		}
		fsys, err := templates.VersionFS(lib, v)
		if err != nil {
			return nil, err
		}
		err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			files["templates/"+lib+"/"+p] = data
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for name, data := range opts.Schemas {
		files["schemas/"+name] = data
	}
	return files, nil
}

// isSpec says whether a YAML file is a spec: its top level has version,
// nodes and flow.
func isSpec(data []byte) bool {
	var top map[string]yaml.Node
	if yaml.Unmarshal(data, &top) != nil {
		return false
	}
	_, v := top["version"]
	_, n := top["nodes"]
	_, f := top["flow"]
	return v && n && f
}

// localPaths rewrites an example's README for the project: the example's
// files are named as they are in the project (examples/NAME/spec.yaml is
// spec.yaml), and a first line says where the project came from. Go
// commands of the runner repository (go run ./examples/...) are left as
// they are, with the note that they run in a clone of runner.
func localPaths(data []byte, from string) []byte {
	prefix := "examples/" + from + "/"
	lines := strings.SplitAfter(string(data), "\n")
	repo := false
	for i, l := range lines {
		if strings.Contains(l, "./"+prefix) {
			repo = true
			continue
		}
		lines[i] = strings.ReplaceAll(l, prefix, "")
	}
	note := fmt.Sprintf("<!-- Written by runner init from runner's example %s. -->\n", from)
	if repo {
		note += "<!-- Commands that start with go run ./examples/, and the Go tools they run, are in a clone of the runner repository. -->\n"
	}
	return []byte(note + strings.Join(lines, ""))
}

// setModeline replaces a file's yaml-language-server modeline, or puts
// one first.
func setModeline(data []byte, line string) []byte {
	lines := strings.SplitAfter(string(data), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "# yaml-language-server:") {
			lines[i] = line + "\n"
			return []byte(strings.Join(lines, ""))
		}
	}
	return append([]byte(line+"\n"), data...)
}

// ejectLibraries points the spec's uses of embedded template libraries at
// copies in templates/ (templates/NAME keeps the library's name, so every
// template name stays the same) and returns the libraries to copy.
func ejectLibraries(data []byte) ([]byte, []string, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, nil, err
	}
	if len(root.Content) == 0 {
		return data, nil, nil
	}
	var uses []*yaml.Node
	if tmpl := valueOf(root.Content[0], "templates"); tmpl != nil {
		if use := valueOf(tmpl, "use"); use != nil {
			switch use.Kind {
			case yaml.ScalarNode:
				uses = append(uses, use)
			case yaml.SequenceNode:
				uses = append(uses, use.Content...)
			}
		}
	}
	lines := strings.SplitAfter(string(data), "\n")
	var libs []string
	// From the last to the first, so that earlier positions hold.
	for i := len(uses) - 1; i >= 0; i-- {
		n := uses[i]
		base, _, _, ok := templates.Split(n.Value)
		if n.Kind != yaml.ScalarNode || !ok || !templates.Has(base) || n.Line < 1 || n.Line > len(lines) {
			continue
		}
		line := lines[n.Line-1]
		start := n.Column - 1
		if n.Style == yaml.DoubleQuotedStyle || n.Style == yaml.SingleQuotedStyle {
			start++
		}
		end := start + len(n.Value)
		if end > len(line) || line[start:end] != n.Value {
			return nil, nil, fmt.Errorf("cannot find template library %q at line %d of the spec", n.Value, n.Line)
		}
		lines[n.Line-1] = line[:start] + "templates/" + base + line[end:]
		libs = append(libs, n.Value)
	}
	sort.Strings(libs)
	return []byte(strings.Join(lines, "")), libs, nil
}

func valueOf(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// envExample lists the variables the spec's endpoints read, with a note
// on each.
func envExample(plan *spec.Plan) []byte {
	var b bytes.Buffer
	b.WriteString("# Copy this file to .env (kept out of git) and fill in what your endpoints need.\n")
	b.WriteString("# The environment wins over .env. Endpoints on localhost need no key.\n")
	seen := map[string]bool{}
	for _, m := range plan.UsedModels {
		ep := m.Endpoint
		if ep == nil || seen[ep.Name] {
			continue
		}
		seen[ep.Name] = true
		fmt.Fprintf(&b, "\n# endpoint %q (%s), model %s\n", ep.Name, ep.BaseURL, m.Model)
		if ep.APIKeyEnv != "" {
			fmt.Fprintf(&b, "%s=\n", ep.APIKeyEnv)
		}
		if ep.FromEnv {
			b.WriteString("# Another OpenAI-compatible server instead of OpenAI, e.g. Ollama:\n# OPENAI_BASE_URL=http://localhost:11434/v1\n")
		}
		for _, ref := range envRefs(ep.BaseURL) {
			fmt.Fprintf(&b, "%s=\n", ref)
		}
		hs := make([]string, 0, len(ep.Headers))
		for h := range ep.Headers {
			hs = append(hs, h)
		}
		sort.Strings(hs)
		for _, h := range hs {
			for _, ref := range envRefs(ep.Headers[h]) {
				fmt.Fprintf(&b, "%s=\n", ref)
			}
		}
	}
	return b.Bytes()
}

// envRefs are the ${NAME} references of a text.
func envRefs(s string) []string {
	var out []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			return out
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return out
		}
		out = append(out, s[i+2:i+j])
		s = s[i+j+1:]
	}
}

// WriteFile writes a file of the user's project atomically, readable by all as
// files in a repository are (rundir.WriteFile keeps run files private).
func WriteFile(path string, data []byte) error {
	if err := rundir.WriteFile(path, data); err != nil {
		return err
	}
	return os.Chmod(path, 0o644)
}
