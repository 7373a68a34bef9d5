package main

import (
	"fmt"

	"github.com/debate-runner/runner/spec/draw"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/spec"
)

type graphCmd struct {
	File   string `arg:"" name:"FILE" help:"Spec file."`
	Format string `short:"f" enum:"mermaid,dot" default:"mermaid" help:"Output format: mermaid or dot."`
}

func (graphCmd) Help() string {
	return `Draws the compiled flow of a spec: nodes in order, loops and foreach as
boxes with their bounds and conditions, if as a branch.

Examples:
  runner graph examples/design-debate/spec.yaml
  runner graph --format dot spec.yaml | dot -Tsvg > flow.svg`
}

func (c *graphCmd) Run(e *env) error {
	if err := args.SpecPath(c.File); err != nil {
		return err
	}
	plan, diags := spec.Load(c.File, nodes.Registry())
	if diags.HasErrors() {
		fmt.Fprint(e.stderr, diags.Format())
		return exitcode.With(exitcode.InvalidSpec, fmt.Errorf("%s is invalid", c.File))
	}
	if c.Format == "dot" {
		_, err := fmt.Fprint(e.stdout, draw.Dot(plan))
		return err
	}
	_, err := fmt.Fprint(e.stdout, draw.Mermaid(plan))
	return err
}
