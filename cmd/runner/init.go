package main

import (
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
	if c.List {
		scaffold.List(e.stdout)
		return nil
	}
	from := c.From
	if c.Ask {
		chosen, err := scaffold.Ask(e.stdin, e.stderr)
		if err != nil {
			return err
		}
		from = chosen
	}
	files, err := scaffold.Write(c.Dir, scaffold.Options{
		From: from, KeepLibraries: c.KeepLibraries, Force: c.Force, Registry: nodes.Registry(),
		Schemas: map[string][]byte{"spec.schema.json": schemas.Spec, "test.schema.json": schemas.Test},
	})
	if err != nil {
		return err // a usage error (--from, files that exist) or a failure
	}
	scaffold.Told(e.stdout, from, c.Dir, files)
	return nil
}
