package main

import (
	"encoding/json"
	"fmt"

	"github.com/debate-runner/runner/internal/buildinfo"
	"github.com/debate-runner/runner/internal/scaffold"
	"github.com/debate-runner/runner/schemas"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

// Version returns the runner version: the build's, or the module's.
func Version() string {
	buildinfo.Override = version
	return buildinfo.Version()
}

// versionText is what `runner version` and `runner --version` print.
func versionText() string {
	buildinfo.Override = version
	return buildinfo.Read().String()
}

type schemaCmd struct {
	Result bool   `name:"result" help:"Print the schema of result.json instead."`
	Test   bool   `name:"test" help:"Print the schema of spec test files (NAME.test.yaml) instead."`
	Study  bool   `name:"study" help:"Print the schema of study files (runner study) instead."`
	Write  bool   `name:"write" help:"Write the schemas of specs and test files into --dir instead of printing one (refreshes what runner init wrote)."`
	Dir    string `name:"dir" default:"schemas" placeholder:"DIR" help:"Where --write puts spec.schema.json and test.schema.json."`
}

func (schemaCmd) Help() string {
	return `Prints the JSON Schema (draft 2020-12) of spec files. Point your editor at it
for completion and help, e.g. with a first line in the spec:

  # yaml-language-server: $schema=../../schemas/spec.schema.json

With --result, prints the schema of result.json (its format_version is the
version of the format the schema describes), for tools that read runs; with
--test, the schema of spec test files. --write refreshes the schema files
of a project (those runner init wrote) after an upgrade of runner.

Examples:
  runner schema > spec.schema.json
  runner schema --result > result.schema.json
  runner schema --write`
}

func (c schemaCmd) Run(e *env) error {
	if c.Write {
		if c.Result || c.Test || c.Study {
			return usageErrorf("--write writes the schemas of specs and test files; it takes neither --result nor --test")
		}
		return scaffold.WriteSchemas(c.Dir, map[string][]byte{"spec.schema.json": schemas.Spec, "test.schema.json": schemas.Test}, e.stderr)
	}
	if c.Result && c.Test || c.Study && (c.Result || c.Test) {
		return usageErrorf("--result, --test and --study: choose one")
	}
	data := schemas.Spec
	switch {
	case c.Study:
		data = schemas.Study
	case c.Result:
		data = schemas.Result
	case c.Test:
		data = schemas.Test
	}
	_, err := e.stdout.Write(data)
	return err
}

type versionCmd struct {
	JSON bool `name:"json" help:"Print the same as one JSON object."`
}

func (versionCmd) Help() string {
	return `Prints the runner version (the module's, or devel for a build from a work
tree), the commit it was built from, the spec language version it reads and
the Go version that built it. 'runner --version' prints the same. Every run
records the version and commit in run.json and result.json; CHANGELOG.md
says what each release changed and how to keep the old behaviour.

Examples:
  runner version
  runner --version
  runner version --json`
}

func (c versionCmd) Run(e *env) error {
	if c.JSON {
		buildinfo.Override = version
		data, err := json.Marshal(buildinfo.Read())
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(e.stdout, "%s\n", data)
		return err
	}
	_, err := fmt.Fprintln(e.stdout, versionText())
	return err
}
