// Command genschema writes the published schemas: the spec schema (the base
// schema with the fragments of every registered node kind) or, with
// -result, the schema of result.json made from its Go types.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/result"
)

func main() {
	out := flag.String("o", "spec.schema.json", "file to write")
	res := flag.Bool("result", false, "write the schema of result.json instead of the spec's")
	flag.Parse()
	gen := nodes.Registry().Schema
	if *res {
		gen = result.Schema
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
