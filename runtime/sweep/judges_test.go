package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/stats"
	"github.com/debate-runner/runner/spec"
)

var itemOf = regexp.MustCompile(`item (\d+)`)

// judgedHandler answers the task with the item, and grades it as each
// judge's model says: every judge gives the item's "true" level (its
// number mod 3) unless a hash of judge and item sends it one level up,
// with a chance that grows with the judge's number, so the judges agree
// often but not always.
func judgedHandler(r llmtest.Request) llmtest.Reply {
	m := itemOf.FindStringSubmatch(r.LastUser())
	if m == nil {
		return llmtest.Reply{Content: "no item"}
	}
	if !strings.HasPrefix(r.Model, "judge-") {
		return llmtest.Reply{Content: "answer for item " + m[1]}
	}
	item, _ := strconv.Atoi(m[1])
	level := item % 3
	judge, _ := strconv.Atoi(strings.TrimPrefix(r.Model, "judge-"))
	h := fnv.New32a()
	fmt.Fprintf(h, "%d/%d", judge, item)
	if int(h.Sum32()%100) < 10*judge {
		level = (level + 1) % 3
	}
	names := []string{"poor", "fair", "good"}
	return llmtest.Reply{Content: fmt.Sprintf(`{"reasoning": "item %d looks %s to judge %d", "level": %q}`, item, names[level], judge, names[level])}
}

// judgedSweepPlan is a one-call spec graded by n judges.
func judgedSweepPlan(t *testing.T, n int) *spec.Plan {
	t.Helper()
	var models, names []string
	for i := 1; i <= n; i++ {
		models = append(models, fmt.Sprintf("  judge-%d: {model: judge-%d}", i, i))
		names = append(names, fmt.Sprintf("judge-%d", i))
	}
	src := fmt.Sprintf(`version: 1
name: judged
inputs:
  question: {required: true}
models:
%s
templates:
  use: [judge@1]
  define: {answer: "{{.Inputs.question}}"}
agents: {a: {}}
nodes:
  answer: {kind: ask, agents: [a], template: answer, record: answer}
flow: [answer]
outputs:
  answer: nodes.answer.output
score:
  judge:
    models: [%s]
    levels: {poor: P, fair: F, good: G}
`, strings.Join(models, "\n"), strings.Join(names, ", "))
	return runtest.LoadPlan(t, runtest.WriteSpec(t, t.TempDir(), src))
}

// TestJudgedSweepAgreement runs sweeps graded by two and by three judges
// and checks the summary's agreement against kappa computed afresh from
// the levels in the runs' result.json files: Cohen's for two judges,
// Fleiss' for three, and each judge's mean score.
func TestJudgedSweepAgreement(t *testing.T) {
	const items = 16
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			dir := t.TempDir()
			var lines []string
			for i := 1; i <= items; i++ {
				lines = append(lines, fmt.Sprintf(`{"question": "Grade item %d."}`, i))
			}
			data := filepath.Join(dir, "data.jsonl")
			if err := os.WriteFile(data, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			srv := llmtest.New(t, judgedHandler)
			o := runtime.Options{Settings: runtime.Settings{Getenv: envFor(srv.URL), RunsDir: dir}, Seams: runtime.Seams{Sleep: noSleep}}
			sum, err := Sweep(context.Background(), judgedSweepPlan(t, n), Options{Run: o, Dataset: data, Parallel: 8})
			if err != nil {
				t.Fatal(err)
			}
			var table [][]int
			means := make([]float64, n)
			for _, r := range sum.Runs {
				raw, err := os.ReadFile(filepath.Join(r.Dir, "result.json"))
				if err != nil {
					t.Fatal(err)
				}
				var res result.Result
				if err := json.Unmarshal(raw, &res); err != nil {
					t.Fatal(err)
				}
				row := make([]int, n)
				for i, j := range res.Judgements {
					row[i] = *j.LevelIndex
					means[i] += float64(*j.LevelIndex) / 2 / float64(len(sum.Runs))
				}
				table = append(table, row)
			}
			var want stats.Agreement
			if n == 2 {
				a, b := make([]int, len(table)), make([]int, len(table))
				for i, row := range table {
					a[i], b[i] = row[0], row[1]
				}
				want, err = stats.CohenKappa(a, b)
			} else {
				want, err = stats.FleissKappa(table)
			}
			if err != nil {
				t.Fatal(err)
			}
			j := sum.Judges
			method := map[int]string{2: "cohen", 3: "fleiss"}[n]
			if j == nil || j.Method != method || j.Items != items || j.Agreement == nil || math.Abs(j.Agreement.Kappa-want.Kappa) > 1e-12 {
				t.Fatalf("judges %+v, want %s kappa %+v over %d runs", j, method, want, items)
			}
			if want.Kappa >= 1 || want.Kappa <= 0 {
				t.Errorf("kappa %v: the scripted judges should agree often, not always", want.Kappa)
			}
			for i, s := range j.Judges {
				if s.Judge != fmt.Sprintf("judge-%d", i+1) || s.N != items || math.Abs(s.Mean-means[i]) > 1e-9 {
					t.Errorf("judge %d: %+v, want mean %v", i+1, s, means[i])
				}
			}
			name := map[int]string{2: "Cohen's kappa", 3: "Fleiss' kappa"}[n]
			if line := sum.AccuracyLine(); !strings.Contains(line, fmt.Sprintf("judges' agreement: %s %.3f over %d run(s)", name, want.Kappa, items)) {
				t.Errorf("summary line:\n%s", line)
			}
			t.Logf("%s", sum.AccuracyLine())
		})
	}
}
