// Package buildinfo says which runner this is: its module version, the
// commit it was built from, the Go toolchain that built it, and the
// version of the spec language it reads. `runner version` prints it and
// every run records it in its manifest, so a result names what made it.
package buildinfo

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// SpecLanguage is the version of the spec language this runner reads (a
// spec's `version:`). Specs of an older language version are rewritten by
// `runner migrate`; see CHANGELOG.md for what each version changed.
const SpecLanguage = 1

// Override, when set (main sets it from -ldflags "-X main.version=..."),
// is the version reported instead of the module's.
var Override string

// Info is what identifies a build.
type Info struct {
	// Version is the module version ("v1.2.3"), or "devel" for a build
	// from a work tree.
	Version string `json:"version"`
	// Commit is the VCS revision the binary was built from, empty when the
	// build recorded none (go test, go run of a file, a tree without git).
	Commit string `json:"commit,omitempty"`
	// Modified is set when the work tree had changes not committed.
	Modified bool `json:"modified,omitempty"`
	// Go is the Go version that built the binary.
	Go string `json:"go"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
	// SpecLanguage is SpecLanguage.
	SpecLanguage int `json:"spec_language"`
}

// Read returns the build's info.
func Read() Info {
	return fromBuild(debug.ReadBuildInfo())
}

func fromBuild(bi *debug.BuildInfo, ok bool) Info {
	in := Info{Version: "devel", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, SpecLanguage: SpecLanguage}
	if ok && bi != nil {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			in.Go = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Commit = s.Value
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
	}
	if Override != "" {
		in.Version = Override
	}
	return in
}

// Version is Read().Version.
func Version() string { return Read().Version }

// Commit is the commit the binary was built from, with "+modified" when the
// tree had changes, or "" when the build recorded none.
func (in Info) CommitLabel() string {
	if in.Commit == "" {
		return ""
	}
	c := in.Commit
	if in.Modified {
		c += "+modified"
	}
	return c
}

// String is the multi-line text `runner version` prints.
func (in Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "runner %s\n", in.Version)
	commit := in.CommitLabel()
	if commit == "" {
		commit = "unknown (built without VCS information)"
	}
	fmt.Fprintf(&b, "commit: %s\n", commit)
	fmt.Fprintf(&b, "spec language: %d\n", in.SpecLanguage)
	fmt.Fprintf(&b, "go: %s %s", in.Go, in.Platform)
	return b.String()
}

// With is Read with the version override (main's -X main.version) set.
func With(override string) Info {
	if override != "" {
		Override = override
	}
	return Read()
}

// Help is `runner version`'s help.
const Help = `Prints the runner version (the module's, or devel for a build from a work
tree), the commit it was built from, the spec language version it reads and
the Go version that built it. 'runner --version' prints the same. Every run
records the version and commit in run.json; CHANGELOG.md says what each
release changed and how to keep the old behaviour.

Examples:
  runner version
  runner --version
  runner version --json`

// Write prints the build's info as text, or as one JSON object.
func Write(w io.Writer, override string, asJSON bool) error {
	in := With(override)
	if !asJSON {
		_, err := fmt.Fprintln(w, in.String())
		return err
	}
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", data)
	return err
}
