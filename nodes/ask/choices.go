package ask

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"
	"github.com/expr-lang/expr/vm"
)

// maxChoices is the number of labels there are (A to Z).
const maxChoices = 26

// choices are the node's options as one call shows them, and, when they
// are shuffled, the map from the label shown to the option's original
// label. The order is drawn from the run seed and the call key, so a call
// (and its resume or replay) always shows the same order, whatever else
// runs at the same time.
func choices(h interface {
	kit.Flow
	kit.Randomness
}, node *spec.NodePlan, ch *Choices, key string) ([]Choice, map[string]string, error) {
	v, err := vm.Run(ch.From.Program, h.Env().Map())
	if err != nil {
		return nil, nil, fmt.Errorf("node %q: choices.from (%s): %s", node.ID, ch.From.Source, strings.SplitN(err.Error(), "\n", 2)[0])
	}
	options, err := optionTexts(v)
	if err != nil {
		return nil, nil, fmt.Errorf("node %q: choices.from (%s): %w", node.ID, ch.From.Source, err)
	}
	if len(options) > maxChoices {
		return nil, nil, fmt.Errorf("node %q: choices.from (%s) gives %d options; at most %d can be labelled A-Z", node.ID, ch.From.Source, len(options), maxChoices)
	}
	order := make([]int, len(options))
	for i := range order {
		order[i] = i
	}
	if ch.Shuffle {
		rng := h.RandFor(key + "/choices")
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	out := make([]Choice, len(options))
	var remap map[string]string
	if ch.Shuffle {
		remap = make(map[string]string, len(options))
	}
	for shown, orig := range order {
		c := Choice{Label: label(shown), Text: options[orig], Original: label(orig)}
		out[shown] = c
		if remap != nil {
			remap[c.Label] = c.Original
		}
	}
	return out, remap, nil
}

func label(i int) string { return string(rune('A' + i)) }

// optionTexts reads options: a list of values, or text holding a JSON list
// or one option per line.
func optionTexts(v any) ([]string, error) {
	if s, ok := v.(string); ok {
		var list []any
		if err := json.Unmarshal([]byte(strings.TrimSpace(s)), &list); err == nil {
			v = list
		} else {
			var out []string
			for _, line := range strings.Split(s, "\n") {
				if line = strings.TrimSpace(line); line != "" {
					out = append(out, line)
				}
			}
			return out, nil
		}
	}
	list, ok := v.([]any)
	if !ok {
		if ss, isStrings := v.([]string); isStrings {
			return ss, nil
		}
		return nil, fmt.Errorf("the options must be a list or text, not %T", v)
	}
	out := make([]string, len(list))
	for i, x := range list {
		if s, ok := x.(string); ok {
			out[i] = s
		} else {
			out[i] = fmt.Sprint(x)
		}
	}
	return out, nil
}

// mapChoice maps an output that is a label shown (A, "(b)", ...) back to
// the option's original label; anything else is left as it is.
func mapChoice(v any, remap map[string]string) any {
	s, ok := v.(string)
	if !ok || remap == nil {
		return v
	}
	k := strings.ToUpper(strings.Trim(strings.TrimSpace(s), "()[]. "))
	if orig, ok := remap[k]; ok {
		return orig
	}
	return v
}
