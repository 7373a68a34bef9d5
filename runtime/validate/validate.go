// Package validate is runner validate: it checks specs (compiled, with
// their MCP servers' tool lists) and spec test files (runtime/spectest)
// without sending anything to a model, and reports every problem as a
// diagnostic.
package validate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/mcpclient"
	"github.com/debate-runner/runner/runtime/spectest"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
)

// Options are validate's flags.
type Options struct {
	Registry *spec.Registry
	// Getenv is the environment MCP servers are started or reached with.
	Getenv func(string) string
	// JSON prints every diagnostic as JSON on stdout instead of text on
	// stderr; Quiet prints nothing for a valid file.
	JSON, Quiet bool
	// NoServers does not start the specs' MCP servers.
	NoServers bool
	// Strict makes warnings errors: a file with any is invalid.
	Strict bool
}

// Spec checks spec text as validate checks the file path names (which
// anchors its template folders and names it in the diagnostics): Compile
// then Finish. It returns the diagnostics and the plan, nil when any
// diagnostic is an error. The language server checks unsaved buffers
// with the two halves.
func Spec(path string, data []byte, o Options) (syntax.Diagnostics, *spec.Plan) {
	diags, plan := Compile(path, data, o)
	return Finish(diags, plan, o)
}

// Compile is the first half of Spec: the compiler's diagnostics (schema,
// references, templates, expressions, types), and the plan when none is
// an error.
func Compile(path string, data []byte, o Options) (syntax.Diagnostics, *spec.Plan) {
	plan, diags := spec.Compile(path, data, o.Registry)
	if diags.HasErrors() {
		plan = nil
	}
	return diags, plan
}

// Finish is the second half of Spec, given what Compile returned: the
// plan's paths walked (which can take a second), its unpinned libraries
// warned about, and its MCP servers' tool names checked unless
// o.NoServers.
func Finish(diags syntax.Diagnostics, plan *spec.Plan, o Options) (syntax.Diagnostics, *spec.Plan) {
	if plan == nil {
		return diags, nil
	}
	diags = append(diags, runtime.CheckPathsOnce(plan, o.Registry)...)
	if diags.HasErrors() {
		return diags, nil
	}
	diags = append(diags, spec.UnpinnedLibraries(plan)...)
	if len(plan.MCPServers) > 0 && !o.NoServers {
		diags = append(diags, mcpclient.Check(context.Background(), plan, o.Getenv, 20*time.Second)...)
	}
	if diags.HasErrors() {
		return diags, nil
	}
	return diags, plan
}

// Files checks each file, a spec or a test file, printing its diagnostics
// and "ok" lines; the error (exit 4) counts the invalid ones.
func Files(files []string, o Options, stdout, stderr io.Writer) error {
	bad := 0
	var all syntax.Diagnostics
	for _, f := range files {
		var diags syntax.Diagnostics
		ok := "ok"
		if spectest.IsTestFile(f) {
			diags, ok = spectest.Check(f), "ok (test file)"
		} else if data, err := syntax.ReadSpecFile(f); err != nil {
			diags = syntax.Diagnostics{{File: f, Severity: syntax.Error, Message: err.Error()}}
		} else {
			diags, _ = Spec(f, data, o)
		}
		if o.Strict {
			for i := range diags {
				if diags[i].Severity == syntax.Warning {
					diags[i].Severity = syntax.Error
					diags[i].Message += " (--strict)"
				}
			}
		}
		all = append(all, diags...)
		if diags.HasErrors() {
			bad++
		}
		if !o.JSON {
			fmt.Fprint(stderr, diags.Format())
			if !diags.HasErrors() && !o.Quiet {
				fmt.Fprintf(stdout, "%s: %s\n", f, ok)
			}
		}
	}
	if o.JSON {
		if all == nil {
			all = syntax.Diagnostics{}
		}
		out, _ := json.MarshalIndent(all, "", "  ")
		fmt.Fprintln(stdout, string(out))
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
