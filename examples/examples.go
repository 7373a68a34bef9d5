// Package examples embeds the shipped example specs, so that `runner
// init` can start a project from any of them: every folder here (at any
// depth) that holds a spec.yaml is a starting point, with the files beside
// it.
package examples

import (
	"embed"
	"io/fs"
	"path"
	"sort"
)

// Everything is embedded, so that an example added later (a folder of
// protocols, say) is a starting point without a change here; the Go files
// of the tests are skipped when a project is written.
//
//go:embed *
var files embed.FS

// FS is the tree of the examples.
func FS() fs.FS { return files }

// Names lists the starting points: the folders holding a spec.yaml, by
// their path below examples/.
func Names() []string {
	var out []string
	_ = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && path.Base(p) == "spec.yaml" {
			out = append(out, path.Dir(p))
		}
		return nil
	})
	sort.Strings(out)
	return out
}
