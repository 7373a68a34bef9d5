package paired

import (
	"math"
	"strings"
	"testing"

	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/sweep"
)

func summary(dir string, scores map[int]float64, lines []int) *sweep.Summary {
	s := &sweep.Summary{Dir: dir, ID: dir, Spec: dir, Dataset: "d.jsonl"}
	for i, l := range lines {
		r := sweep.Run{Index: i + 1, Line: l, Status: result.StatusCompleted, Expected: l, DurationMS: 1000}
		r.Usage.Calls, r.Usage.PromptTokens = 3, 100
		if v, ok := scores[l]; ok {
			r.Score = &v
		}
		s.Runs = append(s.Runs, r)
	}
	return s
}

func TestComparePairsByLine(t *testing.T) {
	// A right on 1-8, B right on 1-5 and 9; line 10 only in A, line 11
	// only in B, line 12 unscored in B.
	a := map[int]float64{}
	b := map[int]float64{}
	for l := 1; l <= 9; l++ {
		a[l], b[l] = 0, 0
	}
	for l := 1; l <= 8; l++ {
		a[l] = 1
	}
	for l := 1; l <= 5; l++ {
		b[l] = 1
	}
	b[9], a[10], b[11], a[12] = 1, 1, 1, 1
	sa := summary("A", a, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12})
	sb := summary("B", b, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12})
	res, err := Compare(sa, sb, Options{Resamples: 2000, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pairs != 9 || res.AOnly != 3 || res.BOnly != 1 || res.BothRight != 5 || res.BothWrong != 0 || !res.Binary {
		t.Fatalf("pairs %d, discordant %d/%d, both %d/%d", res.Pairs, res.AOnly, res.BOnly, res.BothRight, res.BothWrong)
	}
	if math.Abs(res.Difference.Estimate-2.0/9) > 1e-12 || math.Abs(res.A.Accuracy.Mean-8.0/9) > 1e-12 {
		t.Errorf("difference %+v, accuracy A %+v", res.Difference, res.A.Accuracy)
	}
	if p := res.Tests[0].P; math.Abs(p-0.625) > 1e-12 { // 2·(1+4)/16
		t.Errorf("McNemar p = %g, want 0.625", p)
	}
	var why []string
	for _, it := range res.Unpaired {
		why = append(why, it.Unpaired)
	}
	if strings.Join(why, ",") != "only in A,only in B,not scored in B" {
		t.Errorf("unpaired: %v", why)
	}
	md := res.Markdown()
	for _, w := range []string{"A right/B wrong 3, A wrong/B right 1", "| calls per item | 3.00 | 3.00 | 1.00x |", "| 10 | 0 | 10 | only in A |"} {
		if !strings.Contains(md, w) {
			t.Errorf("Markdown lacks %q:\n%s", w, md)
		}
	}
	if !strings.Contains(res.CSV(), "a_right_b_wrong,3,,") {
		t.Errorf("CSV:\n%s", res.CSV())
	}
	again, _ := Compare(sa, sb, Options{Resamples: 2000, Seed: 3})
	if *again.Difference != *res.Difference {
		t.Error("same seed, different interval")
	}
}

func TestCompareGradedAndErrors(t *testing.T) {
	a := map[int]float64{1: 0.9, 2: 0.8, 3: 0.7, 4: 0.95, 5: 0.6}
	b := map[int]float64{1: 0.5, 2: 0.6, 3: 0.65, 4: 0.7, 5: 0.2}
	res, err := Compare(summary("A", a, []int{1, 2, 3, 4, 5}), summary("B", b, []int{1, 2, 3, 4, 5}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Binary || len(res.Tests) != 2 || res.Tests[0].Method != "paired t" || !strings.Contains(res.Tests[1].Method, "Wilcoxon") {
		t.Fatalf("tests %+v", res.Tests)
	}
	// All five differences are positive: exact Wilcoxon p = 2/32.
	if math.Abs(res.Tests[1].P-0.0625) > 1e-12 {
		t.Errorf("Wilcoxon p = %g", res.Tests[1].P)
	}
	noData := summary("C", a, []int{1})
	noData.Dataset = ""
	if _, err := Compare(noData, summary("B", b, []int{1}), Options{}); err == nil || !strings.Contains(err.Error(), "ran no dataset") {
		t.Errorf("no dataset: %v", err)
	}
	dup := summary("D", a, []int{1, 1})
	if _, err := Compare(dup, summary("B", b, []int{1}), Options{}); err == nil || !strings.Contains(err.Error(), "more than one run of dataset line 1") {
		t.Errorf("matrix: %v", err)
	}
}

func TestCompareNotesRepeatsAndNoPairs(t *testing.T) {
	a := summary("A", map[int]float64{1: 1}, []int{1, 1})
	b := summary("B", map[int]float64{1: 0}, []int{1, 1})
	a.Runs[1].Sample, b.Runs[1].Sample = 1, 1
	res, err := Compare(a, b, Options{Resamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pairs != 2 || len(res.Notes) == 0 || !strings.Contains(res.Notes[0], "repeat items") {
		t.Errorf("pairs %d, notes %v", res.Pairs, res.Notes)
	}
	none, err := Compare(summary("A", nil, []int{1}), summary("B", nil, []int{1}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if none.Pairs != 0 || none.Difference != nil || !strings.Contains(none.Markdown(), "No item is scored in both sweeps") || !strings.Contains(none.CSV(), "not scored") {
		t.Errorf("no pairs:\n%s\n%s", none.Markdown(), none.CSV())
	}
}
