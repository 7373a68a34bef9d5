package args

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/yamljson"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
)

// SpecPath checks the spec file a command is given: a path that names
// nothing (a typo) is a usage error with the near file, before it could
// read as an invalid spec; a folder with a spec.yaml is pointed at it.
func SpecPath(path string) error {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return exitcode.Errorf(exitcode.Usage, "%s: no such spec file%s", path, syntax.DidYouMeanPath(path, false))
	case err == nil && info.IsDir():
		if f, err := os.Stat(filepath.Join(path, "spec.yaml")); err == nil && f.Mode().IsRegular() {
			return exitcode.Errorf(exitcode.Usage, "%s is a folder; give its spec file: %s", path, filepath.Join(path, "spec.yaml"))
		}
		return exitcode.Errorf(exitcode.Usage, "%s is a folder; give a spec file", path)
	}
	return nil
}

// RunDir checks the directory resume is given: "not a directory" is a
// usage error that says what resume wants, and a spec given by mistake is
// pointed at runner run.
func RunDir(dir string) error {
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return exitcode.Errorf(exitcode.Usage, "resume %s: no such run directory; give a run's directory (runs/<run-id>), a sweep's or a study's (runner runs lists them)", dir)
	case err != nil:
		return exitcode.Errorf(exitcode.Usage, "resume %s: %v", dir, errors.Unwrap(err))
	case info.IsDir():
		return nil
	}
	msg := fmt.Sprintf("resume %s: this is a file; resume continues a run from its directory (runs/<run-id>, a sweep's or a study's; runner runs lists them)", dir)
	if looksLikeSpec(dir) {
		msg += fmt.Sprintf(". To start a run of this spec: runner run %s", dir)
	}
	return exitcode.Errorf(exitcode.Usage, "%s", msg)
}

// looksLikeSpec is whether a file is YAML whose top level has nodes:,
// as every spec does.
func looksLikeSpec(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".yaml" && ext != ".yml" {
		return false
	}
	top, ok := yamljson.TopKeys(path)
	if !ok {
		return false
	}
	_, ok = top["nodes"]
	return ok
}

// ContextFile checks --context PATH of a run of plan: a file's text needs
// the spec's 'context' input to go in (a folder is for the file tools).
func ContextFile(plan *spec.Plan, path, dir string) error {
	if path == "" || dir != "" {
		return nil
	}
	for _, in := range plan.Inputs {
		if in.Name == "context" {
			return nil
		}
	}
	return exitcode.Errorf(exitcode.Usage, "--context %s: the spec declares no 'context' input to put the file's text in (give a folder to let tools read it)", path)
}

// ContextDir checks resume's --context DIR: the context folder of a run
// that moved.
func ContextDir(dir string) error {
	if dir == "" {
		return nil
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return exitcode.Errorf(exitcode.Usage, "--context %s: give the context folder the run's tools read", dir)
	}
	return nil
}
