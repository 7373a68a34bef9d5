package spec_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata with the current output")

// TestGoldenInvalid loads every broken spec under testdata/invalid and
// compares its diagnostics, one FILE:LINE:COL: error: MESSAGE line each, with
// the .golden file next to it. Run `go test ./spec -run Golden -update` to
// rewrite the goldens after a deliberate change, then read the diff.
func TestGoldenInvalid(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Fatalf("found %d invalid specs, want at least 40", len(files))
	}
	reg := nodes.Registry()
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			file := filepath.ToSlash(file)
			plan, diags := spec.Load(file, reg)
			if plan != nil {
				t.Errorf("Load returned a plan for an invalid spec")
			}
			if !diags.HasErrors() {
				t.Fatalf("no error reported; diagnostics: %q", diags.Error())
			}
			var b strings.Builder
			for _, d := range diags {
				b.WriteString(d.String())
				b.WriteByte('\n')
			}
			got := b.String()
			golden := strings.TrimSuffix(file, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("diagnostics differ from %s\n--- got\n%s--- want\n%s", golden, got, want)
			}
		})
	}
}

// TestGoldenInvalidCRLF loads every broken spec again with Windows line
// endings: the diagnostics must not move.
func TestGoldenInvalidCRLF(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg := nodes.Registry()
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		file = filepath.ToSlash(file)
		crlf := strings.ReplaceAll(string(data), "\n", "\r\n")
		_, want := spec.Compile(file, data, reg)
		_, got := spec.Compile(file, []byte(crlf), reg)
		if got.Error() != want.Error() {
			t.Errorf("%s with CRLF:\n%s\nwith LF:\n%s", file, got.Error(), want.Error())
		}
	}
}
