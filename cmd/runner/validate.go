package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/mcpclient"
	"github.com/debate-runner/runner/runtime/spectest"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
	"gopkg.in/yaml.v3"
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
	bad := 0
	var all syntax.Diagnostics
	for _, f := range c.Files {
		if isTestFile(f) {
			diags := validateTestFile(f)
			all = append(all, diags...)
			if diags.HasErrors() {
				bad++
			}
			if !c.JSON {
				fmt.Fprint(e.stderr, diags.Format())
				if !diags.HasErrors() && !c.Quiet {
					fmt.Fprintf(e.stdout, "%s: ok (test file)\n", f)
				}
			}
			continue
		}
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
			all = syntax.Diagnostics{}
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

// isTestFile tells a spec test file from a spec the way runner test does:
// by its name (NAME.test.yaml), or, for a test file named otherwise, by
// its shape: a top-level mapping with cases: and no nodes:.
func isTestFile(path string) bool {
	base := filepath.Base(path)
	if strings.HasSuffix(base, spectest.Suffix) || strings.HasSuffix(base, ".test.yml") {
		return true
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var top map[string]any
	if yaml.Unmarshal(data, &top) != nil {
		return false
	}
	_, cases := top["cases"]
	_, nodes := top["nodes"]
	return cases && !nodes
}

// validateTestFile checks a test file against the test schema and that
// the spec it tests exists, as diagnostics in validate's format.
func validateTestFile(path string) syntax.Diagnostics {
	t, err := spectest.Load(path)
	if err != nil {
		var errs spectest.Errors
		var one *spectest.Error
		switch {
		case errors.As(err, &errs):
		case errors.As(err, &one):
			errs = spectest.Errors{one}
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
