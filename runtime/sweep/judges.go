package sweep

import (
	"errors"
	"fmt"
	"strings"

	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/stats"
)

// Judges sums up the judgements of a sweep whose spec's score is judged:
// each judge's mean score, and how far the judges agree on the level of
// the runs every one of them graded (Cohen's kappa for two judges,
// Fleiss' for more).
type Judges struct {
	Judges []JudgeScore `json:"judges"`
	// Items are the runs every judge gave a level; the agreement is over
	// them.
	Items int `json:"items"`
	// Method is "cohen" (two judges) or "fleiss" (three or more); empty
	// with one judge.
	Method    string           `json:"method,omitempty"`
	Agreement *stats.Agreement `json:"agreement,omitempty"`
	// Note says why there is no agreement.
	Note string `json:"note,omitempty"`
}

// JudgeScore is one judge's grades over a sweep.
type JudgeScore struct {
	Judge string `json:"judge"`
	// N are the runs it gave a level, Mean their mean score; Failed the
	// runs it was asked about and gave none.
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	Failed int     `json:"failed,omitempty"`
}

// summarizeJudges adds up the runs' judgements; nil when no run has any.
func summarizeJudges(runs []Run) *Judges {
	var names []string
	idx := map[string]int{}
	for _, r := range runs {
		for _, j := range r.Judgements {
			if _, ok := idx[j.Judge]; !ok {
				idx[j.Judge] = len(names)
				names = append(names, j.Judge)
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	out := &Judges{Judges: make([]JudgeScore, len(names))}
	sums := make([]float64, len(names))
	for i, n := range names {
		out.Judges[i].Judge = n
	}
	var table [][]int
	for _, r := range runs {
		row := make([]int, len(names))
		for i := range row {
			row[i] = -1
		}
		for _, j := range r.Judgements {
			i := idx[j.Judge]
			if j.Score == nil || j.LevelIndex == nil {
				out.Judges[i].Failed++
				continue
			}
			out.Judges[i].N++
			sums[i] += *j.Score
			row[i] = *j.LevelIndex
		}
		whole := true
		for _, x := range row {
			whole = whole && x >= 0
		}
		if whole {
			table = append(table, row)
		}
	}
	for i := range out.Judges {
		if out.Judges[i].N > 0 {
			out.Judges[i].Mean = sums[i] / float64(out.Judges[i].N)
		}
	}
	out.Items = len(table)
	switch {
	case len(names) == 1:
		return out
	case len(table) == 0:
		out.Note = "no run was graded by every judge"
		return out
	}
	var a stats.Agreement
	var err error
	if len(names) == 2 {
		out.Method = "cohen"
		x, y := make([]int, len(table)), make([]int, len(table))
		for i, row := range table {
			x[i], y[i] = row[0], row[1]
		}
		a, err = stats.CohenKappa(x, y)
	} else {
		out.Method = "fleiss"
		a, err = stats.FleissKappa(table)
	}
	switch {
	case errors.Is(err, stats.ErrNoChance):
		out.Note = "every judge gave every run one and the same level: agreement by chance is certain, so kappa is undefined"
	case err != nil:
		out.Note = err.Error()
	default:
		out.Agreement = &a
	}
	return out
}

// String is the judges' line of the sweep's summary.
func (j *Judges) String() string {
	var parts []string
	for _, s := range j.Judges {
		p := fmt.Sprintf("%s %.3f (n=%d)", s.Judge, s.Mean, s.N)
		if s.Failed > 0 {
			p += fmt.Sprintf(", %d without a level", s.Failed)
		}
		parts = append(parts, p)
	}
	line := "judges: " + strings.Join(parts, "; ")
	name := map[string]string{"cohen": "Cohen's kappa", "fleiss": "Fleiss' kappa"}[j.Method]
	switch {
	case j.Agreement != nil:
		line += fmt.Sprintf("\njudges' agreement: %s %.3f over %d run(s) (observed %.3f, by chance %.3f)", name, j.Agreement.Kappa, j.Items, j.Agreement.Observed, j.Agreement.Expected)
	case j.Note != "":
		line += "\njudges' agreement: none: " + j.Note
	}
	return line
}

// judgementsOf are a result's judgements (nil for none).
func judgementsOf(res *result.Result) []result.Judgement {
	if res == nil {
		return nil
	}
	return res.Judgements
}
