// Command genschema writes the published schemas: the spec schema (the base
// schema with the fragments of every registered node kind) or, with
// -result, the schema of result.json made from its Go types, or with
// -test, the schema of spec test files.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/spectest"
)

func main() {
	out := flag.String("o", "spec.schema.json", "file to write")
	res := flag.Bool("result", false, "write the schema of result.json instead of the spec's")
	test := flag.Bool("test", false, "write the schema of spec test files instead of the spec's")
	flag.Parse()
	gen := nodes.Registry().Schema
	switch {
	case *res:
		gen = result.Schema
	case *test:
		gen = func() ([]byte, error) { return spectest.Schema(), nil }
	}
	data, err := gen()
	if err != nil {
		fmt.Fprintln(os.Stderr, "genschema:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "genschema:", err)
		os.Exit(1)
	}
}
