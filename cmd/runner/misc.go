package main

import (
	"github.com/debate-runner/runner/internal/buildinfo"
	"github.com/debate-runner/runner/internal/scaffold"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/migrate"
	"github.com/debate-runner/runner/schemas"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

// Version returns the runner version: the build's, or the module's.
func Version() string { return buildinfo.With(version).Version }

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

func (versionCmd) Help() string { return buildinfo.Help }

func (c versionCmd) Run(e *env) error { return buildinfo.Write(e.stdout, version, c.JSON) }

type migrateCmd struct {
	Files  []string `arg:"" name:"FILE" help:"Spec files to rewrite in place." type:"path"`
	Check  bool     `name:"check" help:"Change nothing: say what would change, exit 1 when a file would."`
	Stdout bool     `name:"stdout" help:"Print the rewritten spec (one FILE) instead of writing it."`
	Pin    []string `name:"pin" sep:"none" placeholder:"NAME@N" help:"Pin library NAME to version N instead of today's (the version the spec was written against; see CHANGELOG.md). Repeatable."`
}

func (migrateCmd) Help() string { return migrate.Help }

func (c migrateCmd) Run(e *env) error {
	return migrate.Command(c.Files, c.Pin, migrate.Flags{Check: c.Check, Stdout: c.Stdout}, nodes.Registry(), e.stdout, e.stderr)
}
