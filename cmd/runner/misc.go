package main

import (
	"encoding/json"
	"fmt"
	"runtime/debug"

	"github.com/debate-runner/runner/schemas"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

// Version returns the runner version: the build's, or the module's.
func Version() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "devel"
}

type schemaCmd struct {
	Result bool `name:"result" help:"Print the schema of result.json instead."`
}

func (schemaCmd) Help() string {
	return `Prints the JSON Schema (draft 2020-12) of spec files. Point your editor at it
for completion and help, e.g. with a first line in the spec:

  # yaml-language-server: $schema=../../schemas/spec.schema.json

With --result, prints the schema of result.json (its format_version is the
version of the format the schema describes), for tools that read runs.

Examples:
  runner schema > spec.schema.json
  runner schema --result > result.schema.json`
}

func (c schemaCmd) Run(e *env) error {
	data := schemas.Spec
	if c.Result {
		data = schemas.Result
	}
	_, err := e.stdout.Write(data)
	return err
}

type versionCmd struct{}

func (versionCmd) Help() string {
	return `Prints the runner version and the spec language version it reads.

Examples:
  runner version`
}

func (versionCmd) Run(e *env) error {
	fmt.Fprintf(e.stdout, "runner %s (spec language version 1)\n", Version())
	return nil
}

func toJSON(v any) string {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}
