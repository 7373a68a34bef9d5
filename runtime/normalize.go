package runtime

import "fmt"

// jsonable turns expression results into values encoding/json can write:
// maps with non-string keys (expr's fromPairs gives map[any]any) become
// maps keyed by the keys' text.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, vv := range x {
			out[fmt.Sprint(k)] = jsonable(vv)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, vv := range x {
			out[k] = jsonable(vv)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, vv := range x {
			out[i] = jsonable(vv)
		}
		return out
	}
	return v
}
