package study

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/paired"
	"github.com/debate-runner/runner/runtime/rundir"
	"github.com/debate-runner/runner/runtime/stats"
	"github.com/debate-runner/runner/runtime/sweep"
)

// Report is a study's table: one row per spec and model.
type Report struct {
	Name     string `json:"name"`
	Dir      string `json:"dir"`
	Dataset  string `json:"dataset"`
	Baseline string `json:"baseline"`
	Repeat   int    `json:"repeat"`
	// Comparisons is how many differences the p-values are adjusted over
	// (Holm): every non-baseline spec with every model.
	Comparisons int      `json:"comparisons"`
	Adjustment  string   `json:"adjustment"`
	Resamples   int      `json:"resamples"`
	Seed        uint64   `json:"seed"`
	Rows        []Row    `json:"rows"`
	Notes       []string `json:"notes,omitempty"`
	// Calls, SentCalls, Tokens, Cost and Seconds add up the rows.
	Calls     int     `json:"calls"`
	SentCalls int     `json:"sent_calls"`
	Tokens    int     `json:"tokens"`
	Cost      float64 `json:"cost"`
	Priced    bool    `json:"priced"`
	Seconds   float64 `json:"seconds"`
	// OwnSamples is set when each sweep kept its samples its own: no
	// reply was shared between them through the cache.
	OwnSamples bool `json:"own_samples,omitempty"`
	// Personas are each persona's effect, in a study over panels.
	Personas []PersonaEffect `json:"personas,omitempty"`
}

// Row is one sweep of a study.
type Row struct {
	Protocol string `json:"protocol"`
	Model    string `json:"model"`
	Baseline bool   `json:"baseline,omitempty"`
	Sweep    string `json:"sweep"`
	// N are the runs that finished (concluded or inconclusive).
	N        int             `json:"n"`
	Accuracy *sweep.Accuracy `json:"accuracy,omitempty"`
	// Difference is the accuracy minus the baseline's (same model), over
	// the items both scored, with its paired bootstrap interval; Pairs is
	// how many items that is.
	Difference *stats.Interval `json:"difference,omitempty"`
	Pairs      int             `json:"pairs,omitempty"`
	Test       string          `json:"test,omitempty"`
	P          *float64        `json:"p,omitempty"`
	PHolm      *float64        `json:"p_holm,omitempty"`
	// Discordant items: this spec right and the baseline wrong, and the
	// other way round (0/1 scores).
	OnlyThis     int     `json:"only_this_right,omitempty"`
	OnlyBaseline int     `json:"only_baseline_right,omitempty"`
	Calls        int     `json:"calls"`
	SentCalls    int     `json:"sent_calls"`
	Tokens       int     `json:"tokens"`
	Cost         float64 `json:"cost"`
	Priced       bool    `json:"priced"`
	Seconds      float64 `json:"seconds"`
	Inconclusive int     `json:"inconclusive"`
	Failed       int     `json:"failed"`
	// Rounds are the sweep's per-round accuracy, flips and agreement (for
	// a spec that loops).
	Rounds []RoundRow `json:"rounds,omitempty"`
	// EqualComputeOf and Compute, on a self-consistency row of the
	// equal-compute baseline: the protocol it is given the compute of,
	// and how its samples were set.
	EqualComputeOf string   `json:"equal_compute_of,omitempty"`
	Compute        *Compute `json:"compute,omitempty"`
	// Judges are a judged score's judges over the row's sweep: their
	// mean scores and agreement (kappa).
	Judges *sweep.Judges `json:"judges,omitempty"`
	// Personas are the personas the row's panel seats.
	Personas []string `json:"personas,omitempty"`
	// Dynamics are the verdict dynamics of the row's sweep, per thread.
	Dynamics []sweep.GoalDynamics `json:"dynamics,omitempty"`
	// EqualCompute, on a protocol's row, is its comparison with its
	// self-consistency row.
	EqualCompute *EqualComputeRow `json:"equal_compute,omitempty"`
}

// EqualComputeRow is a protocol against self-consistency at its compute,
// item by item: the protocol's accuracy minus the self-consistency's.
type EqualComputeRow struct {
	Label      string          `json:"label"`
	Compute    *Compute        `json:"compute"`
	Accuracy   *sweep.Accuracy `json:"accuracy,omitempty"`
	Calls      int             `json:"calls"`
	Tokens     int             `json:"tokens"`
	Difference *stats.Interval `json:"difference,omitempty"`
	Pairs      int             `json:"pairs,omitempty"`
	Test       string          `json:"test,omitempty"`
	P          *float64        `json:"p,omitempty"`
	PHolm      *float64        `json:"p_holm,omitempty"`
	// Discordant items: the protocol right and self-consistency wrong,
	// and the other way round.
	OnlyProtocol int `json:"only_protocol_right,omitempty"`
	OnlySelf     int `json:"only_self_consistency_right,omitempty"`
}

// RoundRow is one round of a row's sweep (sweep.RoundSummary).
type RoundRow = sweep.RoundSummary

// report builds the table from the cells' sweeps.
func report(st *Study, rec *record, sums []*sweep.Summary) (*Report, error) {
	f := st.File
	rep := &Report{Name: f.Name, Dataset: f.Dataset, Baseline: f.Baseline, Repeat: max(f.Repeat, 1), Resamples: f.Resamples, Seed: f.Seed, Adjustment: "holm", Priced: true, OwnSamples: f.OwnSamples}
	if rep.Resamples == 0 {
		rep.Resamples = 10000
	}
	if rep.Seed == 0 {
		rep.Seed = 1
	}
	baseOf := map[string]*sweep.Summary{}
	for i, c := range st.Cells {
		if c.Baseline {
			baseOf[c.Model] = sums[i]
		}
	}
	var ps []float64
	var pRows []int
	for i, c := range st.Cells {
		s := sums[i]
		row := Row{Protocol: c.Label, Model: c.Model, Baseline: c.Baseline, Sweep: rec.Cells[i].Sweep,
			N: s.Completed + s.Inconclusive, Accuracy: s.Accuracy,
			Calls: s.Usage.Calls, SentCalls: sentCalls(s), Tokens: s.Usage.PromptTokens + s.Usage.CompletionTokens,
			Cost: s.Usage.Cost, Priced: s.Usage.Priced, Seconds: float64(s.DurationMS) / 1000,
			Inconclusive: s.Inconclusive, Failed: s.Failed, Rounds: s.Rounds, Judges: s.Judges, Personas: c.Personas, Dynamics: s.Dynamics}
		if row.Model == "" {
			row.Model = "(spec's)"
		}
		if c.EqualComputeOf != "" {
			row.EqualComputeOf, row.Compute = c.EqualComputeOf, rec.Cells[i].Compute
		}
		if !c.Baseline {
			cmp, err := paired.Compare(s, baseOf[c.Model], paired.Options{Resamples: rep.Resamples, Seed: rep.Seed})
			if err != nil {
				return nil, fmt.Errorf("%s against %s with %s: %w", c.Label, f.Baseline, modelName(c.Model), err)
			}
			row.Difference, row.Pairs = cmp.Difference, cmp.Pairs
			row.OnlyThis, row.OnlyBaseline = cmp.AOnly, cmp.BOnly
			if len(cmp.Tests) > 0 {
				p := cmp.Tests[0].P
				row.Test, row.P = cmp.Tests[0].Method, &p
				ps = append(ps, p)
				pRows = append(pRows, len(rep.Rows))
			}
			for _, n := range cmp.Notes {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s with %s: %s", c.Label, row.Model, n))
			}
			if len(cmp.Unpaired) > 0 {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s with %s: %d item(s) left out of the difference (not scored on both sides; see runner compare)", c.Label, row.Model, len(cmp.Unpaired)))
			}
		}
		rep.Calls += row.Calls
		rep.SentCalls += row.SentCalls
		rep.Tokens += row.Tokens
		rep.Cost += row.Cost
		rep.Seconds += row.Seconds
		if row.Calls > 0 {
			rep.Priced = rep.Priced && row.Priced
		}
		rep.Rows = append(rep.Rows, row)
	}
	if rep.Calls == 0 {
		rep.Priced = false
	}
	// Each protocol against its self-consistency row, item by item.
	var ecRows []int
	for i, c := range st.Cells {
		if c.EqualComputeOf == "" {
			continue
		}
		for j, pc := range st.Cells {
			if pc.Model != c.Model || pc.Label != c.EqualComputeOf || pc.EqualComputeOf != "" {
				continue
			}
			sc := rep.Rows[i]
			cmp, err := paired.Compare(sums[j], sums[i], paired.Options{Resamples: rep.Resamples, Seed: rep.Seed})
			if err != nil {
				return nil, fmt.Errorf("%s against %s with %s: %w", pc.Label, c.Label, modelName(c.Model), err)
			}
			ec := &EqualComputeRow{Label: c.Label, Compute: sc.Compute, Accuracy: sc.Accuracy, Calls: sc.Calls, Tokens: sc.Tokens,
				Difference: cmp.Difference, Pairs: cmp.Pairs, OnlyProtocol: cmp.AOnly, OnlySelf: cmp.BOnly}
			if len(cmp.Tests) > 0 {
				p := cmp.Tests[0].P
				ec.Test, ec.P = cmp.Tests[0].Method, &p
				ps = append(ps, p)
				ecRows = append(ecRows, j)
			}
			rep.Rows[j].EqualCompute = ec
		}
	}
	rep.Comparisons = len(ps)
	var notes []string
	rep.Personas, notes = personaEffects(st, sums, rep.Resamples, rep.Seed)
	rep.Notes = append(rep.Notes, notes...)
	for i, p := range stats.Holm(ps) {
		if i < len(pRows) {
			rep.Rows[pRows[i]].PHolm = &p
		} else {
			rep.Rows[ecRows[i-len(pRows)]].EqualCompute.PHolm = &p
		}
	}
	return rep, nil
}

// sentCalls counts the calls of a sweep's runs that an endpoint answered
// (not the cache), from their journals: over every process that made
// them, where the summary counts those of the last one (a run continued
// after a kill counts what it sent after it).
func sentCalls(s *sweep.Summary) int {
	n := 0
	for _, r := range s.Runs {
		if r.Dir == "" {
			continue
		}
		dir := r.Dir
		if _, err := os.Stat(dir); err != nil {
			dir = filepath.Join(s.Dir, filepath.Base(r.Dir)) // the study moved
		}
		events, err := journal.Read(filepath.Join(dir, "journal.jsonl"))
		if err != nil {
			n += r.Calls.Network
			continue
		}
		for _, ev := range events {
			if ev.Type != "model_response" {
				continue
			}
			var rep struct {
				Source string `json:"source"`
			}
			if json.Unmarshal(ev.Data, &rep) == nil && rep.Source == "" {
				n++
			}
		}
	}
	return n
}

func f3(x float64) string { return fmt.Sprintf("%.3f", x) }

func costCell(cost float64, priced bool) string {
	if !priced {
		return "—"
	}
	return fmt.Sprintf("$%.4f", cost)
}

func pCell(p *float64) string {
	switch {
	case p == nil:
		return ""
	case *p < 0.001:
		return "<0.001"
	}
	return fmt.Sprintf("%.3f", *p)
}

// Table is the study's table as the command prints it.
func (r *Report) Table() sweep.Table {
	t := sweep.Table{Header: []string{"protocol", "model", "n", "accuracy (95% CI)", "Δ vs " + r.Baseline + " (95% paired CI)", "p (Holm)", "calls", "sent", "tokens", "cost", "seconds", "inconclusive"}, Whole: 12}
	for _, row := range r.Rows {
		acc, diff := "", ""
		if a := row.Accuracy; a != nil {
			acc = fmt.Sprintf("%s (%s–%s)", f3(a.Mean), f3(a.Low), f3(a.High))
		}
		switch {
		case row.Baseline:
			diff = "baseline"
		case row.Difference != nil:
			d := row.Difference
			diff = fmt.Sprintf("%+.3f (%+.3f to %+.3f)", d.Estimate, d.Low, d.High)
		}
		inc := strconv.Itoa(row.Inconclusive)
		if row.Failed > 0 {
			inc += fmt.Sprintf(" (%d failed)", row.Failed)
		}
		t.Rows = append(t.Rows, []string{row.Protocol, row.Model, strconv.Itoa(row.N), acc, diff, pCell(row.PHolm),
			strconv.Itoa(row.Calls), strconv.Itoa(row.SentCalls), strconv.Itoa(row.Tokens), costCell(row.Cost, row.Priced),
			fmt.Sprintf("%.1f", row.Seconds), inc})
	}
	return t
}

// RoundsTable has a row per round of each row whose spec loops.
func (r *Report) RoundsTable() sweep.Table {
	t := sweep.Table{Header: []string{"protocol", "model", "round", "accuracy (95% CI)", "agents' accuracy", "right→wrong", "wrong→right", "changed while wrong", "majority changed", "agreement"}, Whole: 10}
	for _, row := range r.Rows {
		for _, rd := range row.Rounds {
			acc, agents := "", ""
			if a := rd.Accuracy; a != nil {
				acc = fmt.Sprintf("%s (%s–%s)", f3(a.Mean), f3(a.Low), f3(a.High))
			}
			if a := rd.AgentAccuracy; a != nil {
				agents = f3(a.Mean)
			}
			t.Rows = append(t.Rows, []string{row.Protocol, row.Model, strconv.Itoa(rd.Round), acc, agents,
				strconv.Itoa(rd.RightToWrong), strconv.Itoa(rd.WrongToRight), strconv.Itoa(rd.ChangedWhileWrong), strconv.Itoa(rd.MajorityChanges), fmt.Sprintf("%.2f", rd.Agreement)})
		}
	}
	return t
}

// EqualComputeTable has a row per protocol and model compared with
// self-consistency at its compute.
func (r *Report) EqualComputeTable() sweep.Table {
	t := sweep.Table{Header: []string{"protocol", "model", "accuracy", "calls", "tokens", "self-consistency", "samples", "accuracy", "calls", "tokens", "Δ protocol − self-consistency (95% paired CI)", "p (Holm)"}, Whole: 12}
	for _, row := range r.Rows {
		ec := row.EqualCompute
		if ec == nil {
			continue
		}
		acc := func(a *sweep.Accuracy) string {
			if a == nil {
				return ""
			}
			return fmt.Sprintf("%s (%s–%s)", f3(a.Mean), f3(a.Low), f3(a.High))
		}
		diff, samples := "", ""
		if d := ec.Difference; d != nil {
			diff = fmt.Sprintf("%+.3f (%+.3f to %+.3f)", d.Estimate, d.Low, d.High)
		}
		if c := ec.Compute; c != nil {
			samples = strconv.Itoa(c.Samples)
		}
		t.Rows = append(t.Rows, []string{row.Protocol, row.Model, acc(row.Accuracy), strconv.Itoa(row.Calls), strconv.Itoa(row.Tokens),
			ec.Label, samples, acc(ec.Accuracy), strconv.Itoa(ec.Calls), strconv.Itoa(ec.Tokens), diff, pCell(ec.PHolm)})
	}
	return t
}

// Markdown is results.md: the table and how to read it.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Study %s\n\n", r.Name)
	fmt.Fprintf(&b, "- Dataset: `%s`", r.Dataset)
	if r.Repeat > 1 {
		fmt.Fprintf(&b, ", %d samples per item", r.Repeat)
	}
	fmt.Fprintf(&b, "\n- Baseline: %s (each protocol is compared with it under the same model, item by item)\n", r.Baseline)
	b.WriteString("- Accuracy: over the runs that finished, an inconclusive run counted wrong; Wilson's 95% interval (normal for graded scores)\n")
	fmt.Fprintf(&b, "- Δ: paired bootstrap 95%% interval over items (%d resamples, seed %d); p: exact McNemar test (paired t for graded scores), ", r.Resamples, r.Seed)
	if r.Comparisons > 1 {
		fmt.Fprintf(&b, "Holm-adjusted across the %d comparisons (raw p in the CSV and JSON)\n", r.Comparisons)
	} else {
		fmt.Fprintf(&b, "Holm-adjusted across %d comparison (unchanged)\n", r.Comparisons)
	}
	if r.OwnSamples {
		fmt.Fprintf(&b, "- calls: the runs' calls; sent: those an endpoint answered, from the runs' journals (the rest came from the response cache; each sweep kept its samples its own, so none from another protocol's sweep)\n")
	} else {
		fmt.Fprintf(&b, "- calls: the runs' calls; sent: those an endpoint answered, from the runs' journals (the rest came from the response cache, which serves identical requests across protocols: common random numbers, see the notes)\n")
	}
	fmt.Fprintf(&b, "- Total: %d calls, %d sent, %d tokens, cost %s, %.1f s\n\n", r.Calls, r.SentCalls, r.Tokens, costCell(r.Cost, r.Priced), r.Seconds)
	b.WriteString(r.Table().Markdown(80))
	if t := r.EqualComputeTable(); len(t.Rows) > 0 {
		match := "calls"
		for _, row := range r.Rows {
			if row.EqualCompute != nil && row.EqualCompute.Compute != nil {
				match = row.EqualCompute.Compute.Match
			}
		}
		b.WriteString("\n## Equal compute\n\nEach protocol against self-consistency (one agent sampled N times, the majority of its answers) over the same items with the same model, N set to the protocol's mean " + match + " per item")
		if match == "tokens" {
			b.WriteString(" over the mean tokens of one call of the baseline")
		}
		b.WriteString("; Δ is the protocol's accuracy minus self-consistency's, paired by item, with the test and adjustment above.\n\n")
		b.WriteString(t.Markdown(80))
	}
	if t := r.RoundsTable(); len(t.Rows) > 0 {
		b.WriteString("\n## Per round\n\nEach round's accuracy had the runs stopped after it (their outputs over the messages so far), the agents' own answers' accuracy, their flips from the round before, and the mean share of agents giving the most common answer.\n\n")
		b.WriteString(t.Markdown(80))
	}
	if t := r.PersonasTable(); len(t.Rows) > 0 {
		b.WriteString("\n## Personas\n\nEach persona's effect: over the items every panel scored, the mean score of the panels that seat it minus that of the panels that do not, paired by item, with a bootstrap 95% interval over items; p: paired t-test, Holm-adjusted across the personas.\n\n")
		b.WriteString(t.Markdown(80))
	}
	for _, row := range r.Rows {
		for _, g := range row.Dynamics {
			fmt.Fprintf(&b, "\n%s with %s: %s\n", row.Protocol, row.Model, strings.ReplaceAll(g.String(), "\n", "; "))
		}
	}
	for _, row := range r.Rows {
		if row.Judges != nil {
			fmt.Fprintf(&b, "\n%s with %s: %s\n", row.Protocol, row.Model, strings.ReplaceAll(row.Judges.String(), "\n", "; "))
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\nNote: %s\n", n)
	}
	return b.String()
}

// CSV is results.csv: one row per spec and model, numbers unrounded.
func (r *Report) CSV() string {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write([]string{"protocol", "model", "baseline", "sweep", "n", "accuracy", "accuracy_low", "accuracy_high", "difference", "difference_low", "difference_high", "pairs", "test", "p", "p_holm", "only_this_right", "only_baseline_right", "calls", "sent_calls", "tokens", "cost", "priced", "seconds", "inconclusive", "failed", "equal_compute_of", "samples", "ec_difference", "ec_difference_low", "ec_difference_high", "ec_pairs", "ec_test", "ec_p", "ec_p_holm"})
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	opt := func(p *float64) string {
		if p == nil {
			return ""
		}
		return num(*p)
	}
	for _, row := range r.Rows {
		acc := []string{"", "", ""}
		if a := row.Accuracy; a != nil {
			acc = []string{num(a.Mean), num(a.Low), num(a.High)}
		}
		diff := []string{"", "", ""}
		if d := row.Difference; d != nil {
			diff = []string{num(d.Estimate), num(d.Low), num(d.High)}
		}
		rec := []string{row.Protocol, row.Model, strconv.FormatBool(row.Baseline), row.Sweep, strconv.Itoa(row.N)}
		rec = append(rec, acc...)
		rec = append(rec, diff...)
		rec = append(rec, strconv.Itoa(row.Pairs), row.Test, opt(row.P), opt(row.PHolm), strconv.Itoa(row.OnlyThis), strconv.Itoa(row.OnlyBaseline),
			strconv.Itoa(row.Calls), strconv.Itoa(row.SentCalls), strconv.Itoa(row.Tokens), num(row.Cost), strconv.FormatBool(row.Priced),
			num(row.Seconds), strconv.Itoa(row.Inconclusive), strconv.Itoa(row.Failed))
		samples := ""
		if row.Compute != nil {
			samples = strconv.Itoa(row.Compute.Samples)
		}
		ec := []string{"", "", "", "", "", "", ""}
		if e := row.EqualCompute; e != nil {
			ec = []string{"", "", "", strconv.Itoa(e.Pairs), e.Test, opt(e.P), opt(e.PHolm)}
			if d := e.Difference; d != nil {
				ec[0], ec[1], ec[2] = num(d.Estimate), num(d.Low), num(d.High)
			}
			if e.Compute != nil {
				samples = strconv.Itoa(e.Compute.Samples)
			}
		}
		rec = append(rec, row.EqualComputeOf, samples)
		rec = append(rec, ec...)
		_ = w.Write(rec)
	}
	w.Flush()
	return buf.String()
}

// write saves results.md, results.csv and results.json in dir.
func (r *Report) write(dir string) error {
	r.Dir = dir
	if err := rundir.WriteJSON(filepath.Join(dir, "results.json"), r); err != nil {
		return fmt.Errorf("study: %w", err)
	}
	if err := rundir.WriteFile(filepath.Join(dir, "results.csv"), []byte(r.CSV())); err != nil {
		return fmt.Errorf("study: %w", err)
	}
	if err := rundir.WriteFile(filepath.Join(dir, "results.md"), []byte(r.Markdown())); err != nil {
		return fmt.Errorf("study: %w", err)
	}
	return nil
}
