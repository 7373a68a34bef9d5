// Package migrate is `runner migrate`: it rewrites a spec so that it means
// the same with every later runner. Each built-in template library the spec
// names without a version is pinned (NAME becomes NAME@N): to the version
// it resolves to today, or, when the spec uses a template a later version
// removed, to the last version that has it. Nothing else of the file
// changes: comments, quoting and layout stay as they are. A rewritten spec
// that would not load where the original did is never written.
package migrate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/scaffold"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/templates"
)

// Change is one rewrite of a spec.
type Change struct {
	Line, Col int
	From, To  string
	// Why says why this version.
	Why string
}

func (c Change) String() string {
	return fmt.Sprintf("%d:%d: %s -> %s (%s)", c.Line, c.Col, c.From, c.To, c.Why)
}

// Options change what Migrate pins.
type Options struct {
	// Pins are versions to pin libraries to instead of today's (the
	// versions a spec was written against, from CHANGELOG.md or a run's
	// run.json), by library name.
	Pins map[string]int
}

// ParsePins reads --pin values NAME@N.
func ParsePins(refs []string) (map[string]int, error) {
	out := map[string]int{}
	for _, ref := range refs {
		name, v, pinned, ok := templates.Split(ref)
		switch {
		case !pinned || !ok:
			return nil, fmt.Errorf("--pin %q: want NAME@N (a built-in library and a version number)", ref)
		case !templates.Has(name):
			return nil, fmt.Errorf("--pin %q: no built-in template library %q (%s)", ref, name, strings.Join(templates.Libraries(), ", "))
		case v > templates.Newest(name):
			return nil, fmt.Errorf("--pin %q: %s has versions 1 to %d", ref, name, templates.Newest(name))
		}
		out[name] = v
	}
	return out, nil
}

// useNodes are the scalars of the spec's templates.use.
func useNodes(data []byte) ([]*yaml.Node, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	if len(root.Content) == 0 {
		return nil, nil
	}
	use := valueOf(valueOf(root.Content[0], "templates"), "use")
	switch {
	case use == nil:
		return nil, nil
	case use.Kind == yaml.ScalarNode:
		return []*yaml.Node{use}, nil
	case use.Kind == yaml.SequenceNode:
		var out []*yaml.Node
		for _, n := range use.Content {
			if n.Kind == yaml.ScalarNode {
				out = append(out, n)
			}
		}
		return out, nil
	}
	return nil, nil
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

// Migrate rewrites a spec's text. It returns the text unchanged (and no
// change) when there is nothing to do, so that it is idempotent.
func Migrate(data []byte, opts Options) ([]byte, []Change, error) {
	uses, err := useNodes(data)
	if err != nil {
		return nil, nil, err
	}
	lines := strings.SplitAfter(string(data), "\n")
	var changes []Change
	// From the last to the first, so that earlier positions hold.
	for i := len(uses) - 1; i >= 0; i-- {
		n := uses[i]
		name, _, pinned, _ := templates.Split(n.Value)
		if pinned || !templates.Has(n.Value) || n.Line < 1 || n.Line > len(lines) {
			continue
		}
		v, why := pinFor(data, name, opts)
		to := templates.Ref(name, v)
		line := lines[n.Line-1]
		start := n.Column - 1
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
			start++
		}
		end := start + len(n.Value)
		if start < 0 || end > len(line) || line[start:end] != n.Value {
			return nil, nil, fmt.Errorf("%d:%d: cannot find template library %q in the text (written across lines?)", n.Line, n.Column, n.Value)
		}
		lines[n.Line-1] = line[:start] + to + line[end:]
		changes = append(changes, Change{Line: n.Line, Col: n.Column, From: n.Value, To: to, Why: why})
	}
	sort.Slice(changes, func(a, b int) bool {
		if changes[a].Line != changes[b].Line {
			return changes[a].Line < changes[b].Line
		}
		return changes[a].Col < changes[b].Col
	})
	return []byte(strings.Join(lines, "")), changes, nil
}

// pinFor is the version an unpinned library is pinned to, and why.
func pinFor(data []byte, lib string, opts Options) (int, string) {
	if v, ok := opts.Pins[lib]; ok {
		return v, "as --pin asks"
	}
	v, why := templates.Newest(lib), "the version it resolves to today"
	for _, ver := range templates.Versions(lib) {
		for file := range ver.Files {
			stem := strings.TrimSuffix(file, ".tmpl")
			if stem == file {
				continue
			}
			r, removed := templates.Removed(lib, file)
			if !removed || r.In-1 >= v || !mentions(data, lib+"/"+stem) {
				continue
			}
			v, why = r.In-1, fmt.Sprintf("the last version with %s/%s, which %s removed", lib, stem, templates.Ref(lib, r.In))
		}
	}
	return v, why
}

// mentions says whether the text names the template (not as the start of
// a longer name).
func mentions(data []byte, name string) bool {
	re := regexp.MustCompile(regexp.QuoteMeta(name) + `($|[^A-Za-z0-9_.-])`)
	return re.Match(data)
}

// Flags are `runner migrate`'s.
type Flags struct {
	// Check only says which files would change (exit 1 when one would).
	Check bool
	// Stdout prints the rewritten spec instead of writing it (one file).
	Stdout bool
	Options
}

// Files migrates each spec file, telling what changed on w (stderr).
func Files(files []string, reg *spec.Registry, f Flags, stdout, w io.Writer) error {
	if f.Stdout && len(files) != 1 {
		return exitcode.Errorf(exitcode.Usage, "--stdout prints one spec; %d given", len(files))
	}
	pending, bad := 0, 0
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			return exitcode.Errorf(exitcode.Usage, "%s: %v", path, errors.Unwrap(err))
		}
		out, changes, err := Migrate(data, f.Options)
		if err != nil {
			fmt.Fprintf(w, "%s:%v\n", path, err)
			bad++
			continue
		}
		if err := sameMeaning(path, data, out, reg, len(f.Pins) > 0); err != nil {
			fmt.Fprintf(w, "%s: not rewritten: %v\n", path, err)
			bad++
			continue
		}
		for _, c := range changes {
			fmt.Fprintf(w, "%s:%s\n", path, c)
		}
		switch {
		case f.Stdout:
			if _, err := stdout.Write(out); err != nil {
				return err
			}
		case len(changes) == 0:
			fmt.Fprintf(w, "%s: up to date\n", path)
		case f.Check:
			pending++
		default:
			if err := scaffold.WriteFile(path, out); err != nil {
				return err
			}
		}
	}
	if bad > 0 {
		return exitcode.Errorf(exitcode.InvalidSpec, "%d spec(s) could not be migrated", bad)
	}
	if pending > 0 {
		return exitcode.Errorf(exitcode.Failure, "%d spec(s) would be rewritten (runner migrate without --check does it)", pending)
	}
	return nil
}

// sameMeaning checks a rewrite: a spec that loaded still loads, with the
// same template and schema bytes unless pins asked for other versions.
func sameMeaning(path string, before, after []byte, reg *spec.Registry, pins bool) error {
	if bytes.Equal(before, after) {
		return nil
	}
	planBefore, diagsBefore := spec.Compile(path, before, reg)
	planAfter, diagsAfter := spec.Compile(path, after, reg)
	if diagsAfter.HasErrors() {
		if diagsBefore.HasErrors() {
			return fmt.Errorf("the spec has errors that migrate does not fix:\n%s", diagsAfter.Format())
		}
		return fmt.Errorf("the rewritten spec would not load:\n%s", diagsAfter.Format())
	}
	if diagsBefore.HasErrors() || pins {
		return nil // fixed by the pin (a removed template), or other versions asked for
	}
	if d := Differs(planBefore, planAfter); d != "" {
		return fmt.Errorf("the rewritten spec would render other prompts: %s", d)
	}
	return nil
}

// Differs says how two plans' template and schema texts differ ("" when
// they do not): what a spec renders its requests from.
func Differs(a, b *spec.Plan) string {
	for name, s := range a.TemplateSources {
		if t, ok := b.TemplateSources[name]; !ok || t.Digest != s.Digest {
			return "template " + name
		}
	}
	if len(a.TemplateSources) != len(b.TemplateSources) {
		return "the set of templates"
	}
	for name, s := range a.SchemaDocs {
		if !bytes.Equal(s, b.SchemaDocs[name]) {
			return "schema " + name
		}
	}
	if len(a.SchemaDocs) != len(b.SchemaDocs) {
		return "the set of schemas"
	}
	return ""
}

// Help is `runner migrate`'s help.
const Help = `Rewrites specs so that they mean the same with every later runner: each
built-in template library named without a version is pinned to the version
it resolves to today (NAME becomes NAME@N), or, when the spec uses a template
a later version removed, to the last version that has it. Comments, quoting
and layout stay as they are. A rewrite that would not load, or would render
other prompts, is not written (exit 4). Running it again changes nothing.

Examples:
  runner migrate spec.yaml
  runner migrate --check examples/*/spec.yaml
  runner migrate old.yaml --pin software-design@2 --stdout`

// Command is runner migrate: pins (--pin NAME@N) read, then Files.
func Command(files, pins []string, f Flags, reg *spec.Registry, stdout, stderr io.Writer) error {
	p, err := ParsePins(pins)
	if err != nil {
		return exitcode.Errorf(exitcode.Usage, "%v", err)
	}
	f.Pins = p
	return Files(files, reg, f, stdout, stderr)
}
