// Package templates holds the embedded prompt template libraries that specs
// load with `templates: {use: [NAME]}`. A library is a folder of *.tmpl files
// (prompt templates, named LIBRARY/FILE-WITHOUT-EXTENSION) and
// *.schema.json files (JSON Schemas for node outputs, named the same way),
// and optionally verdicts.yaml (verdict set presets: NAME: [OPTIONS]).
package templates

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
)

//go:embed */*.tmpl */*.schema.json */verdicts.yaml
var files embed.FS

// FS is the tree of all embedded libraries.
func FS() fs.FS { return files }

// Libraries lists the embedded library names.
func Libraries() []string {
	entries, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "history" {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// Has reports whether an embedded library of that name exists.
func Has(name string) bool {
	info, err := fs.Stat(files, name)
	return err == nil && info.IsDir() && !strings.Contains(name, "/") && name != "history" && name != "."
}
