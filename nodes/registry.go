// Package nodes registers every node kind in one place. Each kind lives in
// its own package with its schema fragment, compiler and executor; adding a
// kind means adding a package and a line here, never touching the loader.
package nodes

import (
	"github.com/debate-runner/runner/nodes/ask"
	"github.com/debate-runner/runner/nodes/clarify"
	"github.com/debate-runner/runner/nodes/converse"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"
)

// Kinds returns every node kind, in the order they are documented.
func Kinds() []spec.Kind {
	return []spec.Kind{ask.Kind{}, converse.Kind{}, clarify.Kind{}}
}

var registry = spec.NewRegistry(Kinds()...)

// Registry returns the registry of all node kinds.
func Registry() *spec.Registry { return registry }

// Executor returns the executor of a node kind, when the kind can run.
func Executor(kind string) (kit.Executor, bool) {
	k, ok := registry.Lookup(kind)
	if !ok {
		return nil, false
	}
	e, ok := k.(kit.Executor)
	return e, ok
}
