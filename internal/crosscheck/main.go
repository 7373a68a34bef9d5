// Command crosscheck type-checks the module's packages, their tests
// included, for each system runner ships on, from source: the go command
// lists each target's files (build tags and _GOOS/_GOARCH names applied,
// cgo off) and go/types checks every package and every dependency as that
// target's compiler would see them. A call that does not exist on a target
// (syscall.Flock on Windows once kept runner from building there), a file
// missing for one system or a dependency that does not support it fails
// here, naming file:line:col, in seconds instead of the minutes a cold
// cross-build of every target takes; what it does not do is generate code
// and link, which a module of pure Go without assembly of its own does not
// need checked per target (.ci/run refuses architecture-specific and cgo
// files, which would).
//
//	go run ./internal/crosscheck [-targets GOOS/GOARCH,...] [packages]
//
// The packages default to ./...; the targets to every one runner ships.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// shipped are the systems runner ships on: Linux, macOS and Windows, each
// on amd64 and arm64.
var shipped = []string{
	"linux/amd64", "linux/arm64",
	"darwin/amd64", "darwin/arm64",
	"windows/amd64", "windows/arm64",
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("crosscheck", flag.ContinueOnError)
	flags.SetOutput(stderr)
	targets := flags.String("targets", strings.Join(shipped, ","), "the GOOS/GOARCH pairs to check, comma-separated")
	dir := flags.String("C", ".", "the module's directory")
	flags.Usage = func() {
		fmt.Fprintln(stderr, "usage: crosscheck [-targets GOOS/GOARCH,...] [-C DIR] [packages]")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		return 2
	}
	list, err := parseTargets(*targets)
	if err != nil {
		fmt.Fprintf(stderr, "crosscheck: -targets: %v\n", err)
		return 2
	}
	patterns := flags.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	failed := false
	for _, t := range list {
		start := time.Now()
		res, err := check(*dir, t, patterns)
		if err != nil {
			fmt.Fprintf(stderr, "crosscheck: %s: %v\n", t, err)
			return 1
		}
		fmt.Fprintf(stdout, "%-14s %6d ms %4d packages checked\n", t, time.Since(start).Milliseconds(), res.checked)
		for _, e := range res.errors {
			fmt.Fprintf(stderr, "%s: %s\n", t, e)
		}
		if len(res.errors) > 0 {
			failed = true
		}
	}
	if failed {
		return 1
	}
	return 0
}

// A target is one GOOS/GOARCH pair.
type target struct{ goos, goarch string }

func (t target) String() string { return t.goos + "/" + t.goarch }

func parseTargets(s string) ([]target, error) {
	var list []target
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		goos, goarch, ok := strings.Cut(f, "/")
		if !ok || goos == "" || goarch == "" || strings.Contains(goarch, "/") {
			return nil, fmt.Errorf("%q is not GOOS/GOARCH (such as windows/amd64)", f)
		}
		list = append(list, target{goos, goarch})
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("no target given")
	}
	return list, nil
}
