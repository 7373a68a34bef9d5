package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return spectest.Command{
		Paths: c.Paths, Pattern: c.Pattern, Parallel: c.Parallel, JUnit: c.JUnit, Verbose: c.Verbose,
		Options: spectest.Options{Registry: nodes.Registry(), Update: c.Update, RunsDir: c.Keep, Version: Version()},
	}.Execute(ctx, e.stdout, e.stderr)
}
