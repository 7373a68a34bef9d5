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
	Strict    bool `help:"Treat warnings as errors (exit 4 when a spec has any)."`
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

What no type decides (a list's length, the round a template renders in, a
divisor that is 0, free text converted to a number) is decided by walking
the flow along each of its paths with stand-in replies, as a dry run does:
loops ending at once and running to max, ifs taken and not, foreach over an
empty list; what fails on a path is an error naming it. What fails only for
some replies a schema allows is a warning naming the guard to add; --strict
makes warnings errors.

Exit code 0 when every spec is valid, 4 when any is not.

Examples:
  runner validate examples/design-debate/spec.yaml
  runner validate examples/*/spec.yaml
  runner validate --json spec.yaml | jq .`
}

func (c *validateCmd) Run(e *env) error {
	return validate.Files(c.Files, validate.Options{Registry: nodes.Registry(), Getenv: e.getenv, JSON: c.JSON, Quiet: c.Quiet, NoServers: c.NoServers, Strict: c.Strict}, e.stdout, e.stderr)
}
