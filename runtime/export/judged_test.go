package export

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/sweep"
)

const judgedSpec = `version: 1
name: judged-answer
inputs:
  question: {required: true}
models:
  grader-a: {model: grader-a}
  grader-b: {model: grader-b}
templates:
  use: [judge@1]
  define:
    answer: "KEY={{.Agent.ID}}\n{{.Inputs.question}}"
agents: {a: {name: A}}
nodes:
  answer: {kind: ask, agents: [a], template: answer, record: answer}
flow: [answer]
outputs:
  answer: latest("answer")[0].content
score:
  judge:
    models: [grader-a, grader-b]
    levels: {poor: wrong, fair: partly right, good: right}
`

// TestInspectLogOfJudgedRuns exports judged runs (two judges graded each
// against a rubric, at random by a hash of the request, a judge sometimes
// naming no level) and checks the log against the format and against the
// runs' judgements: each judge is a scorer of each sample with its level's
// score, the level as the answer and its reasoning as the explanation; the
// results have each judge's mean over the samples it graded.
func TestInspectLogOfJudgedRuns(t *testing.T) {
	srv := llmtest.New(t, func(req llmtest.Request) llmtest.Reply {
		h := fnv.New32a()
		h.Write([]byte(req.Model + req.LastUser()))
		x := h.Sum32()
		if !strings.Contains(req.LastUser(), "level") {
			return llmtest.Reply{Content: fmt.Sprintf("It is %d.", x%5)}
		}
		if x%7 == 0 {
			return llmtest.Reply{Content: `{"reasoning": "I cannot tell.", "level": "none of them"}`}
		}
		return llmtest.Reply{Content: fmt.Sprintf(`{"reasoning": "graded %d by %s", "level": %q}`, x, req.Model, []string{"poor", "fair", "good"}[x%3])}
	})
	plan := runtest.LoadPlan(t, runtest.WriteSpec(t, t.TempDir(), judgedSpec))
	runs := t.TempDir()
	var results []*result.Result
	var dirs []string
	for i := range 6 {
		opts := runtime.Options{}
		opts.Getenv, opts.Sleep, opts.RunsDir = runtest.Env(srv.URL, "sk-export-judged"), runtest.NoSleep, runs
		opts.InputValues = map[string]any{"question": fmt.Sprintf("question %d", i)}
		run, err := runtime.Start(plan, opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run.Execute(t.Context()); err != nil {
			t.Fatal(err)
		}
		res, err := result.Read(run.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Judgements) != 2 {
			t.Fatalf("run %d: %d judgements, want 2", i, len(res.Judgements))
		}
		log, err := Inspect(run.Dir)
		if err != nil {
			t.Fatal(err)
		}
		validate(t, log)
		s := log.Samples[0]
		for _, j := range res.Judgements {
			got, ok := s.Scores["judge/"+j.Judge]
			if !ok {
				t.Fatalf("run %d: no score of judge %s in %v", i, j.Judge, s.Scores)
			}
			if j.Score != nil && got.Value != *j.Score || j.Score == nil && got.Value != "N" {
				t.Errorf("run %d judge %s: value %v, the judgement %v", i, j.Judge, got.Value, j.Score)
			}
			if got.Explanation != j.Reasoning || (j.Level != "" && got.Answer != j.Level) {
				t.Errorf("run %d judge %s: answer %v explanation %v; judgement %+v", i, j.Judge, got.Answer, got.Explanation, j)
			}
		}
		results, dirs = append(results, res), append(dirs, run.Dir)
	}
	// A sweep of the runs: each judge's mean over the samples it graded.
	sum := &sweep.Summary{ID: "sweep-judged", Spec: "judged-answer"}
	means := map[string][]float64{}
	for i, res := range results {
		sum.Runs = append(sum.Runs, sweep.Run{Index: i, Dir: dirs[i], Line: i + 1, Status: res.Status, Score: res.Score})
		for _, j := range res.Judgements {
			if j.Score != nil {
				means[j.Judge] = append(means[j.Judge], *j.Score)
			}
		}
	}
	sweepDir := t.TempDir()
	data, _ := json.Marshal(sum)
	if err := os.WriteFile(filepath.Join(sweepDir, "summary.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := Inspect(sweepDir)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, log)
	if len(means) == 0 {
		t.Fatal("no judge gave a level: the test checks nothing of scores")
	}
	for judge, xs := range means {
		want := 0.0
		for _, x := range xs {
			want += x / float64(len(xs))
		}
		found := false
		for _, sc := range log.Results.Scores {
			if sc.Name == "judge/"+judge {
				found = true
				if math.Abs(sc.Metrics["mean"].Value-want) > 1e-12 || sc.ScoredSamples != len(xs) || sc.UnscoredSamples != len(results)-len(xs) {
					t.Errorf("judge %s: %+v, want mean %v over %d", judge, sc, want, len(xs))
				}
			}
		}
		if !found {
			t.Errorf("the results have no scorer of judge %s", judge)
		}
	}
}
