package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"syscall"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/spectest"
)

type testCmd struct {
	Paths    []string `arg:"" optional:"" name:"PATH" help:"Test files (NAME.test.yaml), specs (their test file beside them), or folders (every test file below). Default: the current folder."`
	Pattern  string   `name:"run" placeholder:"PATTERN" help:"Run only the cases whose name (spaces as underscores) matches this regular expression (also -run)."`
	Update   bool     `name:"update" help:"Write the golden files of the cases that have them instead of comparing with them."`
	JUnit    string   `name:"junit" placeholder:"FILE" help:"Also write the results as JUnit XML to FILE, for CI."`
	Verbose  bool     `short:"v" help:"Print every case, passed ones too, with its notes."`
	Parallel int      `short:"p" name:"parallel" default:"0" placeholder:"N" help:"Cases run at once (default: the number of CPUs)."`
	Keep     string   `name:"keep" placeholder:"DIR" help:"Keep each case's run directory under DIR (default: a temporary folder, removed)."`
}

func (testCmd) Help() string {
	return `Runs spec tests offline: each case of a test file runs the spec with its
model calls answered by the case's scripted replies (a call no reply entry
answers gets a stand-in of the shape it expects, unless the test is strict),
then checks the run with the case's assertions (expr expressions over
status, outputs, messages, verdicts, calls, events...) and, when asked, its
rendered prompts against a golden file. Nothing is sent to a model and no
API key is needed. Output is go test's; the exit code is 1 when a case
fails.

Examples:
  runner test                          # every *.test.yaml below .
  runner test examples/                # the examples' tests
  runner test spec.yaml -run majority  # spec.test.yaml, some cases
  runner test --update                 # rewrite golden files
  runner test --junit report.xml       # also JUnit XML for CI`
}

func (c *testCmd) Run(e *env) error {
	var pattern *regexp.Regexp
	if c.Pattern != "" {
		re, err := regexp.Compile(c.Pattern)
		if err != nil {
			return usageErrorf("--run %s: %v", c.Pattern, err)
		}
		pattern = re
	}
	if c.Parallel < 0 {
		return usageErrorf("--parallel %d: must be at least 1", c.Parallel)
	}
	parallel := c.Parallel
	if parallel == 0 {
		parallel = goruntime.GOMAXPROCS(0)
	}
	files, err := spectest.Find(c.Paths)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	// Specs without a test file are named, as go test names a package
	// without tests; they do not fail the command.
	for _, s := range spectest.Untested(c.Paths) {
		fmt.Fprintf(e.stdout, "?   \t%s\t[no test file]\n", s)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	results := spectest.Run(ctx, files, spectest.Options{
		Registry: nodes.Registry(), Run: pattern, Update: c.Update, Parallel: parallel, RunsDir: c.Keep, Version: Version(),
		OnFile: func(f spectest.FileResult) { spectest.WriteFile(e.stdout, f, c.Verbose) },
	})
	failed, ran := false, 0
	for _, f := range results {
		failed = failed || f.Failed()
		ran += len(f.Cases)
	}
	if ran == 0 && pattern != nil && !failed {
		fmt.Fprintf(e.stderr, "runner test: warning: no case matches --run %s\n", c.Pattern)
	}
	if c.JUnit != "" {
		if err := writeJUnit(c.JUnit, results); err != nil {
			return exitcode.With(exitcode.Failure, fmt.Errorf("--junit %s: %w", c.JUnit, err))
		}
	}
	if failed {
		fmt.Fprintln(e.stdout, "FAIL")
		return exitcode.With(exitcode.Failure, errors.New(""))
	}
	return nil
}

func writeJUnit(path string, results []spectest.FileResult) error {
	var b bytes.Buffer
	if err := spectest.WriteJUnit(&b, results); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return writeProjectFile(path, b.Bytes())
}

// goTestFlags turns go test's single-dash -run into --run, so that the
// habit of go test users works.
func goTestFlags(args []string) []string {
	if len(args) == 0 || args[0] != "test" {
		return args
	}
	out := append([]string(nil), args...)
	for i, a := range out {
		switch {
		case a == "--":
			return out
		case a == "-run":
			out[i] = "--run"
		case len(a) > 5 && a[:5] == "-run=":
			out[i] = "-" + a
		}
	}
	return out
}
