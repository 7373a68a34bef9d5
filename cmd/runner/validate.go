package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/mcpclient"
	"github.com/debate-runner/runner/spec"
)

type validateCmd struct {
	Files []string `arg:"" name:"FILE" help:"Spec files to check."`
	JSON  bool     `help:"Print diagnostics as JSON on stdout."`
	Quiet bool     `short:"q" help:"Print nothing when a spec is valid."`
	// NoServers skips starting the spec's MCP servers.
	NoServers bool `name:"no-servers" help:"Do not start the spec's MCP servers to check its tool names against their lists."`
}

func (validateCmd) Help() string {
	return `Checks each spec against the JSON Schema, resolves every reference (agents,
models, endpoints, nodes, templates, verdict sets, inputs), parses every
template and compiles every expression, and reports every problem found as
FILE:LINE:COL: error: MESSAGE. Nothing is sent to any model. The spec's MCP
servers (mcp_servers:) are started, or reached, to check the tool names it
gives against the tools they list; one that cannot be started is a warning
(--no-servers skips them).

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
		plan, diags := spec.Load(f, nodes.Registry())
		if plan != nil && !diags.HasErrors() && len(plan.MCPServers) > 0 && !c.NoServers {
			diags = append(diags, mcpclient.Check(context.Background(), plan, e.getenv, 20*time.Second)...)
		}
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
