package spectest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"sort"
	"strings"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/yamljson"
	"github.com/debate-runner/runner/runtime/rundir"
	"github.com/debate-runner/runner/spec/syntax"
)

// This file is runner test around Run (finding the files, go test's
// report, JUnit XML, the exit code) and runner validate's check of test
// files.

// Command is runner test's flags.
type Command struct {
	// Paths are test files, specs or folders (see Find).
	Paths []string
	// Pattern selects cases by ID ("" runs every case).
	Pattern string
	// Parallel is how many cases run at once (0: the number of CPUs).
	Parallel int
	// JUnit, when not "", is the file the JUnit XML report goes to.
	JUnit string
	// Verbose reports passed cases too, with their notes.
	Verbose bool
	// Options are Run's; Run, Parallel and OnFile are set from the above.
	Options Options
}

// Execute runs the tests of c.Paths, reporting as go test does on stdout
// (warnings on stderr): exit 1 when a case failed, 2 for bad flags.
func (c Command) Execute(ctx context.Context, stdout, stderr io.Writer) error {
	if c.Pattern != "" {
		re, err := regexp.Compile(c.Pattern)
		if err != nil {
			return exitcode.Errorf(exitcode.Usage, "--run %s: %v", c.Pattern, err)
		}
		c.Options.Run = re
	}
	if c.Parallel < 0 {
		return exitcode.Errorf(exitcode.Usage, "--parallel %d: must be at least 1", c.Parallel)
	}
	c.Options.Parallel = c.Parallel
	if c.Options.Parallel == 0 {
		c.Options.Parallel = goruntime.GOMAXPROCS(0)
	}
	files, err := Find(c.Paths)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	// Specs without a test file are named, as go test names a package
	// without tests; they do not fail the command.
	for _, s := range Untested(c.Paths) {
		fmt.Fprintf(stdout, "?   \t%s\t[no test file]\n", s)
	}
	c.Options.OnFile = func(f FileResult) { WriteFile(stdout, f, c.Verbose) }
	results := Run(ctx, files, c.Options)
	failed, ran := false, 0
	for _, f := range results {
		failed = failed || f.Failed()
		ran += len(f.Cases)
	}
	if ran == 0 && c.Options.Run != nil && !failed {
		fmt.Fprintf(stderr, "runner test: warning: no case matches --run %s\n", c.Pattern)
	}
	if c.JUnit != "" {
		if err := writeJUnit(c.JUnit, results); err != nil {
			return exitcode.With(exitcode.Failure, fmt.Errorf("--junit %s: %w", c.JUnit, err))
		}
	}
	if failed {
		fmt.Fprintln(stdout, "FAIL")
		return exitcode.With(exitcode.Failure, errors.New(""))
	}
	return nil
}

// writeJUnit writes the JUnit report at path, readable by all (a CI
// artifact, not a run file).
func writeJUnit(path string, results []FileResult) error {
	var b bytes.Buffer
	if err := WriteJUnit(&b, results); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := rundir.WriteFile(path, b.Bytes()); err != nil {
		return err
	}
	return os.Chmod(path, 0o644)
}

// IsTestFile tells a spec test file from a spec the way runner test does:
// by its name (NAME.test.yaml), or, for a test file named otherwise, by
// its shape: a top-level mapping with cases: and no nodes:.
func IsTestFile(path string) bool {
	base := filepath.Base(path)
	if strings.HasSuffix(base, Suffix) || strings.HasSuffix(base, ".test.yml") {
		return true
	}
	top, ok := yamljson.TopKeys(path)
	if !ok {
		return false
	}
	_, cases := top["cases"]
	_, nodes := top["nodes"]
	return cases && !nodes
}

// Check checks a test file against the test schema and that the spec it
// tests exists, as diagnostics in runner validate's format.
func Check(path string) syntax.Diagnostics {
	t, err := Load(path)
	if err != nil {
		var errs yamljson.Errors
		var one *yamljson.Error
		switch {
		case errors.As(err, &errs):
		case errors.As(err, &one):
			errs = yamljson.Errors{one}
		default:
			return syntax.Diagnostics{{File: path, Severity: syntax.Error, Message: err.Error()}}
		}
		var ds syntax.Diagnostics
		for _, e := range errs {
			ds = append(ds, syntax.Diagnostic{File: e.Path, Pos: syntax.Pos{Line: e.Line, Col: e.Col}, Severity: syntax.Error, Message: e.Msg})
		}
		return ds
	}
	if _, err := os.Stat(t.SpecPath); err != nil {
		return syntax.Diagnostics{{File: path, Severity: syntax.Error, Message: fmt.Sprintf("the spec it tests, %s, cannot be read: %v", t.SpecPath, errors.Unwrap(err))}}
	}
	return nil
}

// CaseIDs are the IDs of the cases of the test files paths name (see
// Find), quoted as regular expressions, sorted: what test --run completes.
func CaseIDs(paths []string) []string {
	files, err := Find(paths)
	if err != nil {
		return nil
	}
	var out []string
	for _, file := range files {
		t, err := Load(file)
		if err != nil {
			continue
		}
		for _, c := range t.File.Cases {
			out = append(out, regexp.QuoteMeta(CaseID(c.Name)))
		}
	}
	sort.Strings(out)
	return out
}
