package main

import (
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/validate"
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
FILE:LINE:COL: error: MESSAGE. A test file (NAME.test.yaml, or any file whose
top level has cases:) is checked against the test schema instead, and the
spec it tests must exist; so "runner validate *.yaml" checks a whole
project made by "runner init". Nothing is sent to any model. The spec's MCP
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
	return validate.Files(c.Files, validate.Options{Registry: nodes.Registry(), Getenv: e.getenv, JSON: c.JSON, Quiet: c.Quiet, NoServers: c.NoServers}, e.stdout, e.stderr)
}
