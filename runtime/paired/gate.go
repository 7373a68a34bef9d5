package paired

import (
	"fmt"

	"github.com/debate-runner/runner/internal/exitcode"
)

// GateLower is compare's gate with --margin-on lower: it fails (exit 7)
// when the lower end of the paired interval of (other − baseline) is below
// −margin, for the data cannot rule out that other is worse than the
// baseline by more than the margin. It returns what passed, as data and a
// line; an error naming the flag (exit 2) when no item is scored in both.
func (r *Result) GateLower(baseline, other string, margin float64) (map[string]any, string, error) {
	if r == nil || r.Difference == nil {
		return nil, "", exitcode.Errorf(exitcode.Usage, "--margin-on lower: no item is scored in both %s and %s", other, baseline)
	}
	d := r.Difference
	line := fmt.Sprintf("%s against the baseline %s: difference %+.3f, lower end of its 95%% paired interval %+.3f", other, baseline, d.Estimate, d.Low)
	if d.Low < -margin-1e-12 {
		return nil, "", exitcode.With(exitcode.Gate, fmt.Errorf("gate failed: %s is below −%g", line, margin))
	}
	data := map[string]any{"run": other, "baseline": baseline, "difference": d.Estimate, "low": d.Low, "margin": margin, "passed": true}
	return data, "gate passed: " + line + fmt.Sprintf(" (at least −%g)", margin), nil
}
