package lsp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/validate"
	"github.com/debate-runner/runner/spec/syntax"
)

// validateJSON is what runner validate --json --no-servers reports for
// the file at path.
func validateJSON(t testing.TB, path string) syntax.Diagnostics {
	t.Helper()
	var stdout, stderr bytes.Buffer
	_ = validate.Files([]string{path}, validate.Options{Registry: nodes.Registry(), JSON: true, NoServers: true}, &stdout, &stderr)
	var ds syntax.Diagnostics
	if err := json.Unmarshal(stdout.Bytes(), &ds); err != nil {
		t.Fatalf("validate --json printed %q: %v", stdout.String(), err)
	}
	return ds
}

// sameAsValidate fails unless the server's diagnostics for the text of
// path are validate's for the file: the same number, in the same order,
// each with validate's severity and message, starting where validate's
// line and column are (read back from the LSP position; a column past
// its line's end is at the line's end), and running to the end of the
// word there.
func sameAsValidate(t testing.TB, path string, data []byte, got []Diagnostic) {
	t.Helper()
	sameAs(t, path, data, got, validateJSON(t, path))
}

// sameAs is sameAsValidate against the diagnostics want.
func sameAs(t testing.TB, path string, data []byte, got []Diagnostic, want syntax.Diagnostics) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: the server gave %d diagnostics, validate %d:\nserver: %+v\nvalidate: %s", path, len(got), len(want), got, want.Format())
	}
	src := string(data)
	lines := syntax.NewSource(path, data).Lines
	tx := newText(src)
	for i, w := range want {
		g := got[i]
		sev := sevError
		if w.Severity == syntax.Warning {
			sev = sevWarning
		}
		if g.Severity != sev {
			t.Errorf("%s: diagnostic %d: severity %d, validate says %s", path, i, g.Severity, w.Severity)
		}
		if w.File != path {
			if g.Message != w.String() {
				t.Errorf("%s: diagnostic %d about another file: %q, want %q", path, i, g.Message, w.String())
			}
			continue
		}
		if g.Message != w.Message {
			t.Errorf("%s: diagnostic %d: message %q, validate says %q", path, i, g.Message, w.Message)
		}
		if w.Pos.Line == 0 {
			if g.Range != (Range{}) {
				t.Errorf("%s: diagnostic %d without a position is at %+v", path, i, g.Range)
			}
			continue
		}
		off := tx.offset(g.Range.Start)
		back := syntax.OffsetPos(data, off)
		if back != w.Pos {
			lineLen := 0
			if w.Pos.Line <= len(lines) {
				lineLen = utf8.RuneCountInString(strings.TrimRight(lines[w.Pos.Line-1], "\r"))
			}
			if back.Line != w.Pos.Line || w.Pos.Col <= lineLen+1 || back.Col != lineLen+1 {
				t.Errorf("%s: diagnostic %d %q starts at %d:%d (LSP %+v), validate says %d:%d", path, i, w.Message, back.Line, back.Col, g.Range.Start, w.Pos.Line, w.Pos.Col)
			}
		}
		if end := tx.offset(g.Range.End); end < off || end > len(src) || strings.ContainsAny(src[off:end], "\n") {
			t.Errorf("%s: diagnostic %d's range %+v is not one word of one line", path, i, g.Range)
		}
	}
}

// specFiles are every example spec and every spec of the compiler's
// testdata.
func specFiles(t testing.TB) []string {
	var files []string
	for _, pat := range []string{"../../examples/*/spec.yaml", "../../examples/protocols/*/spec.yaml", "../../spec/testdata/invalid/*.yaml", "../../spec/testdata/graph/*.yaml"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 50 {
		t.Fatalf("found only %d specs", len(files))
	}
	return files
}

// Every diagnostic validate gives for a spec the editor shows at the same
// place, with the same words, over every spec in the compiler's testdata
// (validate's whole check) and every example (the compiler's half of it:
// the walk of the examples' paths, seconds under the race detector, is
// TestPathCheckAcceptsShippedSpecs's in runtime, and the fuzz target
// compares whole checks of edited examples).
func TestDiagnosticsAreValidates(t *testing.T) {
	whole := newClient(t, 0)
	compileOnly := newClientWith(t, Options{Registry: nodes.Registry(), noWalk: true})
	for _, f := range specFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		abs, _ := filepath.Abs(f)
		uri := fileURI(abs)
		c := whole
		example := strings.Contains(filepath.ToSlash(f), "/examples/")
		if example {
			c = compileOnly
		}
		c.open(uri, string(data), 1)
		got := c.waitDiags(uri, 1)
		if example {
			want, _ := validate.Compile(abs, data, validate.Options{Registry: nodes.Registry()})
			sameAs(t, abs, data, got, want)
		} else {
			sameAsValidate(t, abs, data, got)
		}
		c.notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": uri}})
	}
}
