package paired

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/debate-runner/runner/runtime/sweep"
)

func f3(x float64) string { return fmt.Sprintf("%.3f", x) }

func ratioCell(x float64) string {
	if x == 0 {
		return ""
	}
	return fmt.Sprintf("%.2fx", x)
}

func costCell(s Side) string {
	if !s.Priced {
		return "no prices"
	}
	return fmt.Sprintf("%.4f", s.CostPerItem)
}

func accCell(a *sweep.Accuracy) string {
	if a == nil {
		return ""
	}
	return fmt.Sprintf("%.3f (%.3f–%.3f, %s)", a.Mean, a.Low, a.High, a.Method)
}

// Table is the side-by-side figures: one row per measure, A, B and A/B.
func (r *Result) Table() sweep.Table {
	t := sweep.Table{Header: []string{"", "A: " + filepath.Base(r.A.Dir), "B: " + filepath.Base(r.B.Dir), "A/B"}, Whole: 3}
	row := func(cells ...string) { t.Rows = append(t.Rows, cells) }
	row("spec", r.A.Spec, r.B.Spec, "")
	if r.A.Cell != "" || r.B.Cell != "" {
		row("matrix cell", r.A.Cell, r.B.Cell, "")
	}
	row("items (paired)", fmt.Sprintf("%d (%d)", r.A.Items, r.Pairs), fmt.Sprintf("%d (%d)", r.B.Items, r.Pairs), "")
	row("accuracy on the pairs (95% CI)", accCell(r.A.Accuracy), accCell(r.B.Accuracy), "")
	row("cost per item", costCell(r.A), costCell(r.B), ratioCell(r.Ratios.Cost))
	row("tokens per item", fmt.Sprintf("%.0f", r.A.TokensPerItem), fmt.Sprintf("%.0f", r.B.TokensPerItem), ratioCell(r.Ratios.Tokens))
	row("calls per item", fmt.Sprintf("%.2f", r.A.CallsPerItem), fmt.Sprintf("%.2f", r.B.CallsPerItem), ratioCell(r.Ratios.Calls))
	row("calls sent per item", fmt.Sprintf("%.2f", r.A.SentPerItem), fmt.Sprintf("%.2f", r.B.SentPerItem), "")
	row("seconds per item", fmt.Sprintf("%.2f", r.A.SecondsPerItem), fmt.Sprintf("%.2f", r.B.SecondsPerItem), ratioCell(r.Ratios.Seconds))
	row("calls from the cache (sent by the other sweep)", fmt.Sprintf("%d (%d)", r.A.CacheServed, r.A.FromOther), fmt.Sprintf("%d (%d)", r.B.CacheServed, r.B.FromOther), "")
	return t
}

// DifferenceLine is the accuracy difference with its interval, or "".
func (r *Result) DifferenceLine() string {
	d := r.Difference
	if d == nil {
		return ""
	}
	return fmt.Sprintf("difference A − B: %+.3f (95%% paired bootstrap CI %+.3f to %+.3f; %d resamples, seed %d; n=%d pairs)", d.Estimate, d.Low, d.High, r.Resamples, r.Seed, r.Pairs)
}

// TestLines are the tests' results, one per line.
func (r *Result) TestLines() []string {
	var out []string
	for _, t := range r.Tests {
		switch {
		case strings.HasPrefix(t.Method, "exact McNemar"):
			out = append(out, fmt.Sprintf("exact McNemar test: p = %s (two-sided; discordant pairs: A right/B wrong %d, A wrong/B right %d; both right %d, both wrong %d)",
				pValue(t.P), r.AOnly, r.BOnly, r.BothRight, r.BothWrong))
		case t.Method == "paired t":
			out = append(out, fmt.Sprintf("paired t-test: t = %.3f, df = %g, p = %s (two-sided)", t.Statistic, t.DF, pValue(t.P)))
		default:
			out = append(out, fmt.Sprintf("%s: V = %g, n = %d nonzero differences, p = %s (two-sided)", t.Method, t.Statistic, t.N, pValue(t.P)))
		}
	}
	return out
}

func pValue(p float64) string {
	if p < 0.0001 {
		return fmt.Sprintf("%.1e", p)
	}
	return fmt.Sprintf("%.4f", p)
}

// Markdown is the comparison for a terminal or a report.
func (r *Result) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Paired comparison: A = %s, B = %s\n\n", r.A.Spec, r.B.Spec)
	b.WriteString(r.Table().Markdown(0))
	b.WriteString("\n")
	if r.Pairs == 0 {
		b.WriteString("- No item is scored in both sweeps: nothing to compare.\n")
	}
	if line := r.DifferenceLine(); line != "" {
		fmt.Fprintf(&b, "- %s\n", upper(line))
	}
	for _, l := range r.TestLines() {
		fmt.Fprintf(&b, "- %s\n", upper(l))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "- Note: %s.\n", n)
	}
	if len(r.Unpaired) > 0 {
		fmt.Fprintf(&b, "\nItems left out of the pairing (%d):\n\n", len(r.Unpaired))
		t := sweep.Table{Header: []string{"line", "sample", "expected", "why", "status A", "score A", "status B", "score B"}}
		for _, it := range r.Unpaired {
			t.Rows = append(t.Rows, []string{fmt.Sprint(it.Line), fmt.Sprint(it.Sample), sweep.FormatValue(it.Expected), it.Unpaired, it.StatusA, score(it.ScoreA), it.StatusB, score(it.ScoreB)})
		}
		b.WriteString(t.Markdown(60))
	}
	return b.String()
}

func score(s *float64) string {
	if s == nil {
		return ""
	}
	return fmt.Sprintf("%g", *s)
}

func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// CSV is one row per measure (measure, a, b, a_over_b): the per-item
// figures, accuracies, the difference with its interval, the tests and the
// discordant counts, then one row per item left out of the pairing.
func (r *Result) CSV() string {
	t := sweep.Table{Header: []string{"measure", "a", "b", "a_over_b"}}
	row := func(cells ...string) { t.Rows = append(t.Rows, cells) }
	row("sweep", r.A.Dir, r.B.Dir, "")
	row("spec", r.A.Spec, r.B.Spec, "")
	row("cell", r.A.Cell, r.B.Cell, "")
	row("items", fmt.Sprint(r.A.Items), fmt.Sprint(r.B.Items), "")
	row("pairs", fmt.Sprint(r.Pairs), fmt.Sprint(r.Pairs), "")
	if r.A.Accuracy != nil && r.B.Accuracy != nil {
		row("accuracy", f3(r.A.Accuracy.Mean), f3(r.B.Accuracy.Mean), "")
		row("accuracy_low", f3(r.A.Accuracy.Low), f3(r.B.Accuracy.Low), "")
		row("accuracy_high", f3(r.A.Accuracy.High), f3(r.B.Accuracy.High), "")
	}
	if d := r.Difference; d != nil {
		row("difference", fmt.Sprintf("%.4f", d.Estimate), "", "")
		row("difference_low", fmt.Sprintf("%.4f", d.Low), "", "")
		row("difference_high", fmt.Sprintf("%.4f", d.High), "", "")
	}
	for _, ts := range r.Tests {
		row("p "+ts.Method, fmt.Sprintf("%.6g", ts.P), "", "")
	}
	if r.Binary {
		row("a_right_b_wrong", fmt.Sprint(r.AOnly), "", "")
		row("a_wrong_b_right", fmt.Sprint(r.BOnly), "", "")
		row("both_right", fmt.Sprint(r.BothRight), "", "")
		row("both_wrong", fmt.Sprint(r.BothWrong), "", "")
	}
	g := func(x float64) string { return fmt.Sprintf("%.6g", x) }
	row("cost_per_item", costCell(r.A), costCell(r.B), g(r.Ratios.Cost))
	row("tokens_per_item", g(r.A.TokensPerItem), g(r.B.TokensPerItem), g(r.Ratios.Tokens))
	row("calls_per_item", g(r.A.CallsPerItem), g(r.B.CallsPerItem), g(r.Ratios.Calls))
	row("sent_per_item", g(r.A.SentPerItem), g(r.B.SentPerItem), "")
	row("seconds_per_item", g(r.A.SecondsPerItem), g(r.B.SecondsPerItem), g(r.Ratios.Seconds))
	row("cache_served", fmt.Sprint(r.A.CacheServed), fmt.Sprint(r.B.CacheServed), "")
	row("cache_served_from_other", fmt.Sprint(r.A.FromOther), fmt.Sprint(r.B.FromOther), "")
	row("own_samples", fmt.Sprint(r.A.OwnSamples), fmt.Sprint(r.B.OwnSamples), "")
	for _, it := range r.Unpaired {
		row(fmt.Sprintf("unpaired line %d sample %d", it.Line, it.Sample), it.StatusA, it.StatusB, it.Unpaired)
	}
	return t.CSV()
}
