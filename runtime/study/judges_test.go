package study

import (
	"strings"
	"testing"

	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/stats"
	"github.com/debate-runner/runner/runtime/sweep"
)

// TestReportCarriesJudges: a row whose sweep was judged keeps its judges'
// means and agreement in results.json and says them under the table.
func TestReportCarriesJudges(t *testing.T) {
	runs := func(scores ...float64) []sweep.Run {
		var out []sweep.Run
		for i, s := range scores {
			out = append(out, sweep.Run{Index: i + 1, Line: i + 1, Status: result.StatusCompleted, Score: &s, Expected: 1})
		}
		return out
	}
	judges := &sweep.Judges{Judges: []sweep.JudgeScore{{Judge: "j1", N: 4, Mean: 0.5}, {Judge: "j2", N: 4, Mean: 0.75}},
		Items: 4, Method: "cohen", Agreement: &stats.Agreement{Kappa: 0.5, Observed: 0.75, Expected: 0.5}}
	st := &Study{File: &File{Name: "s", Baseline: "a"}, Cells: []Cell{{Label: "a", Baseline: true}, {Label: "b"}}}
	rec := &record{Cells: []cellRecord{{}, {}}}
	sums := []*sweep.Summary{{Dataset: "d.jsonl", Runs: runs(1, 0, 1, 0)}, {Dataset: "d.jsonl", Runs: runs(1, 1, 0, 1), Judges: judges}}
	rep, err := report(st, rec, sums)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rows[1].Judges != judges || rep.Rows[0].Judges != nil {
		t.Fatalf("rows %+v", rep.Rows)
	}
	if md := rep.Markdown(); !strings.Contains(md, "b with (spec's): judges: j1 0.500 (n=4); j2 0.750 (n=4); judges' agreement: Cohen's kappa 0.500 over 4 run(s)") {
		t.Errorf("results.md:\n%s", md)
	}
}
