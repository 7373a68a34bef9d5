package study

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/runtime/stats"
	"github.com/debate-runner/runner/runtime/sweep"
)

// PersonaEffect is one persona's effect on the outcome in a study over
// panels ("the same cases, different panels"), under one model: the
// accuracy of the panels that seat it minus that of the panels that do
// not, item by item. For each item scored by every panel, the panels with
// the persona give their mean score and those without give theirs; the
// effect is the mean of the differences, with a paired bootstrap interval
// over items and a paired t-test, Holm-adjusted across the personas.
type PersonaEffect struct {
	Persona string   `json:"persona"`
	Model   string   `json:"model"`
	With    []string `json:"with"`
	Without []string `json:"without"`
	// Items are the items every panel scored.
	Items           int             `json:"items"`
	AccuracyWith    float64         `json:"accuracy_with"`
	AccuracyWithout float64         `json:"accuracy_without"`
	Effect          *stats.Interval `json:"effect,omitempty"`
	Test            string          `json:"test,omitempty"`
	P               *float64        `json:"p,omitempty"`
	PHolm           *float64        `json:"p_holm,omitempty"`
}

// itemKey is a run's dataset line and sample.
type itemKey struct{ line, sample int }

// personaEffects reads each persona's effect from the panels' sweeps
// (cells that list personas), model by model.
func personaEffects(st *Study, sums []*sweep.Summary, resamples int, seed uint64) ([]PersonaEffect, []string) {
	var out []PersonaEffect
	var notes []string
	var models []string
	for _, c := range st.Cells {
		if c.Personas != nil && c.EqualComputeOf == "" && !slices.Contains(models, c.Model) {
			models = append(models, c.Model)
		}
	}
	for _, m := range models {
		var cells []int
		var personas []string
		for i, c := range st.Cells {
			if c.Model != m || c.Personas == nil || c.EqualComputeOf != "" {
				continue
			}
			cells = append(cells, i)
			for _, p := range c.Personas {
				if !slices.Contains(personas, p) {
					personas = append(personas, p)
				}
			}
		}
		// The items every panel scored, with each panel's score.
		scores := make([]map[itemKey]float64, len(cells))
		for j, i := range cells {
			scores[j] = map[itemKey]float64{}
			for _, r := range sums[i].Runs {
				if r.Score != nil {
					scores[j][itemKey{r.Line, r.Sample}] = *r.Score
				}
			}
		}
		var items []itemKey
		for k := range scores[0] {
			all := true
			for _, sc := range scores[1:] {
				_, ok := sc[k]
				all = all && ok
			}
			if all {
				items = append(items, k)
			}
		}
		slices.SortFunc(items, func(a, b itemKey) int {
			if a.line != b.line {
				return a.line - b.line
			}
			return a.sample - b.sample
		})
		model := m
		if model == "" {
			model = "(spec's)"
		}
		if len(items) == 0 {
			notes = append(notes, fmt.Sprintf("personas with %s: no item was scored by every panel, so no persona's effect is read", model))
			continue
		}
		for _, p := range personas {
			e := PersonaEffect{Persona: p, Model: model, Items: len(items)}
			var with, without []int
			for j, i := range cells {
				if slices.Contains(st.Cells[i].Personas, p) {
					with = append(with, j)
					e.With = append(e.With, st.Cells[i].Label)
				} else {
					without = append(without, j)
					e.Without = append(e.Without, st.Cells[i].Label)
				}
			}
			a, b := make([]float64, len(items)), make([]float64, len(items))
			for n, k := range items {
				for _, j := range with {
					a[n] += scores[j][k] / float64(len(with))
				}
				for _, j := range without {
					b[n] += scores[j][k] / float64(len(without))
				}
				e.AccuracyWith += a[n] / float64(len(items))
				e.AccuracyWithout += b[n] / float64(len(items))
			}
			if iv, err := stats.BootstrapMeanDiff(a, b, resamples, seed, 0.95); err == nil {
				e.Effect = &iv
			}
			d, _ := stats.Differences(a, b)
			if t, err := stats.PairedT(d); err == nil {
				pv := t.P
				e.Test, e.P = t.Method, &pv
			}
			out = append(out, e)
		}
	}
	var ps []float64
	var at []int
	for i, e := range out {
		if e.P != nil {
			ps, at = append(ps, *e.P), append(at, i)
		}
	}
	for i, p := range stats.Holm(ps) {
		out[at[i]].PHolm = &p
	}
	return out, notes
}

// PersonasTable has a row per persona and model of a study over panels.
func (r *Report) PersonasTable() sweep.Table {
	t := sweep.Table{Header: []string{"persona", "model", "panels with", "panels without", "items", "accuracy with", "accuracy without", "Δ with − without (95% paired CI)", "p (Holm)"}, Whole: 9}
	for _, e := range r.Personas {
		eff := ""
		if d := e.Effect; d != nil {
			eff = fmt.Sprintf("%+.3f (%+.3f to %+.3f)", d.Estimate, d.Low, d.High)
		}
		t.Rows = append(t.Rows, []string{e.Persona, e.Model, strings.Join(e.With, ", "), strings.Join(e.Without, ", "), strconv.Itoa(e.Items),
			f3(e.AccuracyWith), f3(e.AccuracyWithout), eff, pCell(e.PHolm)})
	}
	return t
}
