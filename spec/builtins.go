package spec

import (
	"fmt"
	"strings"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/templates"
)

// BuiltIn is a version of a built-in template library a spec resolved to:
// what a run records so that it says which prompt texts it used, and what
// `runner migrate` writes into a spec that does not name it.
type BuiltIn struct {
	// Name is the library's name, Version the version used.
	Name    string `json:"name" doc:"the built-in template library's name"`
	Version int    `json:"version" doc:"the version of it the run used"`
	// Pinned says whether the spec named the version (NAME@N); an
	// unpinned library gets the newest.
	Pinned bool `json:"pinned" doc:"whether the spec named the version (NAME@N); an unpinned library gets the newest"`
	// Digest is templates.Digest of the version.
	Digest string `json:"digest" doc:"SHA-256 of the version's files"`
	// Pos is where the spec names the library.
	Pos syntax.Pos `json:"-"`
}

// UnpinnedLibraries warns of each built-in library the spec names without
// a version: it got the newest, whose texts a later runner may change.
// (A warning of validate and run rather than of the compiler, so that a
// spec compiled in a program or a test is not made noisy by it.)
func UnpinnedLibraries(p *Plan) syntax.Diagnostics {
	var out syntax.Diagnostics
	for _, b := range p.BuiltIns {
		if b.Pinned {
			continue
		}
		out = append(out, syntax.Diagnostic{File: p.Path, Pos: b.Pos, Severity: syntax.Warning, Message: fmt.Sprintf(
			"template library %s is not pinned to a version: it gets the newest, %s, whose texts a later runner may change; write %s to keep them (runner migrate does)",
			b.Name, b.Ref(), b.Ref())})
	}
	return out
}

// Ref is NAME@VERSION.
func (b BuiltIn) Ref() string { return templates.Ref(b.Name, b.Version) }

// loadBuiltIn loads a version of a built-in library: the one the spec
// names (NAME@N), or the newest with a warning saying what to pin.
func (c *compiler) loadBuiltIn(use syntax.Str, name string, v int, pinned, ok bool) {
	newest := templates.Newest(name)
	if pinned && !ok {
		c.r.Errorf(use.Pos, "template library %q: a version is a whole number from 1 (NAME@N); %s is the newest", use.V, templates.Ref(name, newest))
		return
	}
	if !pinned {
		v = newest
	}
	fsys, err := templates.VersionFS(name, v)
	if err != nil {
		c.r.Errorf(use.Pos, "%v", err)
		return
	}
	ref := templates.Ref(name, v)
	origin := "library:" + ref
	if !c.claimLibrary(use, name, origin) {
		return
	}
	c.plan.BuiltIns = append(c.plan.BuiltIns, BuiltIn{Name: name, Version: v, Pinned: pinned, Digest: templates.Digest(name, v), Pos: use.Pos})
	c.loadFS(use, fsys, ".", name, origin, "templates/"+ref)
}

// removedTemplate says whether a template the spec names is one a version
// of a built-in library it uses removed (at or before the version used).
func (c *compiler) removedTemplate(name string) (templates.Removal, string, bool) {
	lib, stem, ok := strings.Cut(name, "/")
	if !ok {
		return templates.Removal{}, "", false
	}
	for _, b := range c.plan.BuiltIns {
		if b.Name != lib {
			continue
		}
		if r, ok := templates.Removed(lib, stem+".tmpl"); ok && r.In <= b.Version {
			return r, lib, true
		}
	}
	return templates.Removal{}, "", false
}
