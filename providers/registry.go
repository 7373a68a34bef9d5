// Package providers registers every provider kind (an endpoint's `kind:`)
// in one place. Each kind lives in its own package with its settings'
// schema fragment, its checks, its row of docs/providers.md and its
// client side (llm.Protocol); adding a kind means adding a package and a
// line here, never touching the loader, the client or the runtime.
package providers

import (
	"github.com/debate-runner/runner/providers/anthropic"
	"github.com/debate-runner/runner/providers/azure"
	"github.com/debate-runner/runner/providers/gemini"
	"github.com/debate-runner/runner/providers/offline"
	"github.com/debate-runner/runner/providers/openai"
	"github.com/debate-runner/runner/runtime/llm"
)

// Kinds returns every provider kind, the default (an endpoint that names
// none) first, in the order they are documented.
func Kinds() []llm.Provider {
	return []llm.Provider{
		openai.Kind{},
		azure.Kind{},
		offline.Kind{},
		anthropic.Kind{},
		gemini.Kind{},
	}
}
