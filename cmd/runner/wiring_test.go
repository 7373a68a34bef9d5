package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxWiringLines bounds the non-test Go of cmd/runner (issue 22): the
// command is wiring only (kong command structs, flag help, and calls into
// the packages that do each job), so what a command does belongs to
// runtime/* or internal/*, where it can be tested on its own.
const maxWiringLines = 1500

// TestCommandIsWiringOnly fails when cmd/runner's non-test Go passes
// maxWiringLines lines (counted as wc -l counts them), naming its files by
// size: move the logic that grew into the package that owns its job.
func TestCommandIsWiringOnly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	var sizes []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := bytes.Count(data, []byte("\n"))
		total += n
		sizes = append(sizes, fmt.Sprintf("%5d %s", n, f))
	}
	if total < 200 {
		t.Fatalf("counted %d lines in %d files; the count is broken", total, len(sizes))
	}
	if total > maxWiringLines {
		sort.Sort(sort.Reverse(sort.StringSlice(sizes)))
		t.Errorf("cmd/runner has %d lines of non-test Go, more than %d: move logic out to the package that owns it (docs/layout.md)\n%s",
			total, maxWiringLines, strings.Join(sizes, "\n"))
	}
}
