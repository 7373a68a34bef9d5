package runtime

import "github.com/debate-runner/runner/spec"

// jsonable turns expression results into values encoding/json can write:
// mappings keyed by anything but text (expr's fromPairs gives map[any]any,
// groupBy map[any][]any) become mappings keyed by the keys' text.
func jsonable(v any) any { return spec.JSONValue(v) }
