package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

type validateCmd struct {
	Files []string `arg:"" name:"FILE" help:"Spec files to check."`
	JSON  bool     `help:"Print diagnostics as JSON on stdout."`
	Quiet bool     `short:"q" help:"Print nothing when a spec is valid."`
}

func (validateCmd) Help() string {
	return `Checks each spec against the JSON Schema, resolves every reference (agents,
models, endpoints, nodes, templates, verdict sets, inputs), parses every
template and compiles every expression, and reports every problem found as
FILE:LINE:COL: error: MESSAGE. Nothing is sent to any model.

Exit code 0 when every spec is valid, 4 when any is not.

Examples:
  runner validate examples/design-debate/spec.yaml
  runner validate examples/*/spec.yaml
  runner validate --json spec.yaml | jq .`
}

func (c *validateCmd) Run(e *env) error {
	bad := 0
	var all spec.Diagnostics
	for _, f := range c.Files {
		_, diags := spec.Load(f, nodes.Registry())
		all = append(all, diags...)
		if diags.HasErrors() {
			bad++
		}
		if !c.JSON {
			fmt.Fprint(e.stderr, diags.Format())
			if !diags.HasErrors() && !c.Quiet {
				fmt.Fprintf(e.stdout, "%s: ok\n", f)
			}
		}
	}
	if c.JSON {
		if all == nil {
			all = spec.Diagnostics{}
		}
		out, _ := json.MarshalIndent(all, "", "  ")
		fmt.Fprintln(e.stdout, string(out))
	}
	if bad > 0 {
		noun := "spec is"
		if bad > 1 {
			noun = "specs are"
		}
		return exitcode.With(exitcode.InvalidSpec, errors.New(fmt.Sprint(bad, " ", noun, " invalid")))
	}
	return nil
}
