package main

import (
	"bufio"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/scaffold"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/schemas"
)

type initCmd struct {
	Dir           string `arg:"" optional:"" default:"." name:"DIR" help:"Folder to write the project into (created when missing; default: the current folder)."`
	From          string `name:"from" default:"reasoning-debate" placeholder:"EXAMPLE" help:"Starting point: an example's folder name (see --list)."`
	List          bool   `name:"list" help:"List the starting points and exit."`
	Ask           bool   `name:"ask" help:"Choose the starting point from a numbered list on the terminal."`
	KeepLibraries bool   `name:"keep-libraries" help:"Use the embedded template libraries instead of copying them into templates/."`
	Force         bool   `name:"force" help:"Overwrite files that exist."`
}

func (initCmd) Help() string {
	return `Writes a project that works at once, asking nothing (unless --ask): spec.yaml from
one of the shipped examples, its prompt templates copied into templates/ to
edit, spec.test.yaml (which passes) with its golden prompts, the files the
spec reads, .env.example with the variables its endpoints need, .gitignore,
and the JSON Schemas (schemas/) its editor modelines point to. Files that
exist are left alone and the command fails, unless --force.

Examples:
  runner init my-debate
  runner init --from hiring-panel panel
  runner init --list`
}

func (c *initCmd) Run(e *env) error {
	starts := scaffold.Starts()
	if c.List {
		w := nameWidth(starts)
		for _, s := range starts {
			fmt.Fprintf(e.stdout, "%-*s  %s\n", w, s.Name, s.Description)
		}
		return nil
	}
	from := c.From
	if c.Ask {
		chosen, err := askStart(e, starts)
		if err != nil {
			return err
		}
		from = chosen
	}
	files, err := scaffold.Write(c.Dir, scaffold.Options{
		From: from, KeepLibraries: c.KeepLibraries, Force: c.Force, Registry: nodes.Registry(),
		Schemas: map[string][]byte{"spec.schema.json": schemas.Spec, "test.schema.json": schemas.Test},
	})
	var exists *scaffold.ExistsError
	switch {
	case errors.As(err, &exists):
		return exitcode.With(exitcode.Usage, err)
	case err != nil && strings.HasPrefix(err.Error(), "no starting point"):
		return usageErrorf("--from %s: %v", from, err)
	case err != nil:
		return exitcode.With(exitcode.Failure, err)
	}
	fmt.Fprintf(e.stdout, "wrote a %s project in %s:\n", from, c.Dir)
	for _, f := range files {
		fmt.Fprintf(e.stdout, "  %s\n", filepath.FromSlash(f))
	}
	cd := ""
	if c.Dir != "." {
		cd = "  cd " + c.Dir + "\n"
	}
	fmt.Fprintf(e.stdout, `
Next:
%s  runner test                      # the spec's tests, offline
  cp .env.example .env             # then set your API key in .env
  runner run spec.yaml --dry-run   # what a run would send, and its cost
`, cd)
	return nil
}

// nameWidth is the width of the longest starting point's name, so that
// descriptions line up in a column.
func nameWidth(starts []scaffold.Start) int {
	w := 0
	for _, s := range starts {
		w = max(w, len(s.Name))
	}
	return w
}

// askStart asks which starting point to use.
func askStart(e *env, starts []scaffold.Start) (string, error) {
	w := nameWidth(starts)
	for i, s := range starts {
		fmt.Fprintf(e.stderr, "%2d. %-*s  %s\n", i+1, w, s.Name, s.Description)
	}
	fmt.Fprint(e.stderr, "Starting point (number or name): ")
	line, err := bufio.NewReader(e.stdin).ReadString('\n')
	if err != nil && line == "" {
		return "", usageErrorf("--ask: no answer on stdin")
	}
	line = strings.TrimSpace(line)
	if n, err := strconv.Atoi(line); err == nil {
		if n < 1 || n > len(starts) {
			return "", usageErrorf("--ask: %d is not on the list", n)
		}
		return starts[n-1].Name, nil
	}
	return line, nil
}
