// Package nodes registers every node kind in one place. Each kind lives in
// its own package with its schema fragment, YAML form, prompt data, compiler
// and executor; adding a kind means adding a package and a line here, never
// touching the loader or the runtime.
package nodes

import (
	"github.com/debate-runner/runner/nodes/ask"
	"github.com/debate-runner/runner/nodes/clarify"
	"github.com/debate-runner/runner/nodes/compute"
	"github.com/debate-runner/runner/nodes/converse"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/nodes/recruit"
	"github.com/debate-runner/runner/providers"
	"github.com/debate-runner/runner/spec"
)

// Kinds returns every node kind, in the order they are documented.
func Kinds() []kit.Kind {
	return []kit.Kind{
		kit.Typed(ask.Kind{}),
		kit.Typed(converse.Kind{}),
		kit.Typed(clarify.Kind{}),
		kit.Typed(compute.Kind{}),
		kit.Typed(recruit.Kind{}),
	}
}

// Registry returns the registry of every node kind, built once (it compiles
// the spec schema once). Loading takes a registry value and the plan keeps
// it; the runtime runs each node through the kind the plan recorded for it:
// nothing looks kinds up globally.
func Registry() *spec.Registry { return registry }

var registry = NewRegistry(Kinds()...)

// NewRegistry returns a registry of the given kinds (and every provider
// kind of package providers), for tools and tests that want only some of
// them.
func NewRegistry(kinds ...kit.Kind) *spec.Registry {
	out := make([]spec.Kind, len(kinds))
	for i, k := range kinds {
		out[i] = k
	}
	var provs []spec.Provider
	for _, p := range providers.Kinds() {
		provs = append(provs, p)
	}
	return spec.NewRegistry(out...).WithProviders(provs...)
}
