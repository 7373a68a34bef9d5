// Command genschema writes the published spec schema: the base schema with
// the fragments of every registered node kind.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/debate-runner/runner/nodes"
)

func main() {
	out := flag.String("o", "spec.schema.json", "file to write")
	flag.Parse()
	data, err := nodes.Registry().Schema()
	if err != nil {
		fmt.Fprintln(os.Stderr, "genschema:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "genschema:", err)
		os.Exit(1)
	}
}
