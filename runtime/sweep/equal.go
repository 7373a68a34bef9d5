package sweep

import (
	"fmt"
	"math"

	"github.com/debate-runner/runner/runtime/result"
)

// Compute is what a self-consistency sweep of an equal-compute baseline
// (a study's equal_compute, a sweep's --equal-compute) is given: as many
// samples per item as the protocol spent, on the mean over its items.
type Compute struct {
	// Match is what is made equal: "calls" or "tokens".
	Match string `json:"match"`
	// Samples is the number of samples per item the cell runs with.
	Samples int `json:"samples"`
	// PerItem is the protocol's mean calls (or tokens) per item over its
	// finished runs (Items of them).
	PerItem float64 `json:"per_item"`
	Items   int     `json:"items"`
	// PerSample is what one sample costs: 1 call, or the mean tokens of
	// one call of the study's baseline under the same model.
	PerSample float64 `json:"per_sample"`
}

// finished are the runs of a sweep that finished (concluded or
// inconclusive): those whose usage says what an item costs.
func finished(s *Summary) []Run {
	var out []Run
	for _, r := range s.Runs {
		if r.Status == result.StatusCompleted || r.Status == result.StatusInconclusive {
			out = append(out, r)
		}
	}
	return out
}

// EqualCompute sets a self-consistency sweep's samples from the
// protocol's recorded usage (proto) and, matching tokens, a single call's
// tokens read from the runs of base (a single agent's sweep).
func EqualCompute(match string, proto, base *Summary) (*Compute, error) {
	runs := finished(proto)
	if len(runs) == 0 {
		return nil, fmt.Errorf("the protocol has no finished run to measure its compute on")
	}
	c := &Compute{Match: match, Items: len(runs), PerSample: 1}
	total := 0
	for _, r := range runs {
		if match == "tokens" {
			total += r.Usage.PromptTokens + r.Usage.CompletionTokens
		} else {
			total += r.Usage.Calls
		}
	}
	c.PerItem = float64(total) / float64(len(runs))
	if match == "tokens" {
		calls, tokens := 0, 0
		if base != nil {
			for _, r := range finished(base) {
				calls += r.Usage.Calls
				tokens += r.Usage.PromptTokens + r.Usage.CompletionTokens
			}
		}
		if calls == 0 || tokens == 0 {
			return nil, fmt.Errorf("matching tokens needs the tokens of one call, read from the baseline's runs, and they made no call that counted tokens")
		}
		c.PerSample = float64(tokens) / float64(calls)
	}
	c.Samples = max(1, int(math.Round(c.PerItem/c.PerSample)))
	return c, nil
}
