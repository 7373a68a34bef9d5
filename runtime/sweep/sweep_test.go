package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
)

// The rounds spec, its scripted answers and an in-memory cache are shared
// with runtime's tests (internal/runtest).
var (
	sweepPlan   = runtest.RoundsPlan
	answerSeven = runtest.AnswerSeven
	newMemCache = runtest.NewMemCache
)

func sweepOpts(url string, c calls.Cache) runtime.Options {
	return runtime.Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}, Cache: c},
		Settings: runtime.Settings{Getenv: envFor(url)},
		Seams:    runtime.Seams{Sleep: noSleep},
	}
}

func TestSweepSharesEarlyRounds(t *testing.T) {
	for _, tc := range []struct {
		rounds int
		cache  bool
		made   int // calls sent
		total  int // calls of all runs
	}{
		{rounds: 3, cache: true, made: 9, total: 18},
		{rounds: 5, cache: true, made: 15, total: 45},
		{rounds: 3, cache: false, made: 18, total: 18},
	} {
		t.Run(fmt.Sprintf("max_rounds=1..%d,cache=%v", tc.rounds, tc.cache), func(t *testing.T) {
			srv := llmtest.New(t, answerSeven)
			var values []string
			for i := 1; i <= tc.rounds; i++ {
				values = append(values, fmt.Sprint(i))
			}
			o := sweepOpts(srv.URL, nil)
			if tc.cache {
				o.Cache = newMemCache()
			}
			o.RunsDir = t.TempDir()
			sum, err := Sweep(context.Background(), sweepPlan(t, "0.7"), Options{
				Run: o, Matrix: []Axis{{Name: "max_rounds", Values: values}}, Parallel: tc.rounds,
			})
			if err != nil {
				t.Fatal(err)
			}
			if srv.Count() != tc.made || sum.CallsMade != tc.made || sum.CallsWithoutCache != tc.total {
				t.Fatalf("server saw %d requests; summary: made %d, without cache %d; want %d and %d",
					srv.Count(), sum.CallsMade, sum.CallsWithoutCache, tc.made, tc.total)
			}
			t.Logf("%s (ratio %.2f)", sum.CallsLine(), float64(sum.CallsMade)/float64(sum.CallsWithoutCache))
			for i, r := range sum.Runs {
				if r.Status != result.StatusCompleted || r.Usage.Calls != 3*(i+1) || r.Vars["max_rounds"] != values[i] {
					t.Errorf("run %d: %+v", i+1, r)
				}
				if filepath.Dir(r.Dir) != sum.Dir {
					t.Errorf("run %d is in %s, not in the sweep directory %s", i+1, r.Dir, sum.Dir)
				}
			}
			md, err := os.ReadFile(filepath.Join(sum.Dir, "summary.md"))
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("calls made: %d; without the cache: %d", tc.made, tc.total); !strings.Contains(strings.ToLower(string(md)), want) {
				t.Errorf("summary.md lacks %q:\n%s", want, md)
			}
			back, err := Load(sum.Dir)
			if err != nil || len(back.Runs) != tc.rounds || back.CallsMade != tc.made {
				t.Errorf("summary.json reads back as %+v, %v", back, err)
			}
		})
	}
}

func TestSweepRepeatSamples(t *testing.T) {
	for _, tc := range []struct {
		temp string
		want int // requests for 2 repeats of a 1-round run of 3 agents
	}{
		{"0.7", 6}, // each repeat draws its own samples
		{"0", 3},   // at temperature 0 a repeat asks exactly the same
	} {
		t.Run("temperature="+tc.temp, func(t *testing.T) {
			srv := llmtest.New(t, answerSeven)
			o := sweepOpts(srv.URL, newMemCache())
			o.RunsDir, o.Sets = t.TempDir(), []string{"max_rounds=1"}
			sum, err := Sweep(context.Background(), sweepPlan(t, tc.temp), Options{Run: o, Repeat: 2, Parallel: 1})
			if err != nil {
				t.Fatal(err)
			}
			if srv.Count() != tc.want {
				t.Errorf("%d requests, want %d", srv.Count(), tc.want)
			}
			if len(sum.Runs) != 2 || sum.Runs[0].Sample != 0 || sum.Runs[1].Sample != 1 || sum.Runs[1].Seed != sum.Runs[0].Seed+1 {
				t.Errorf("runs = %+v", sum.Runs)
			}
		})
	}
}

func TestSweepDatasetAccuracy(t *testing.T) {
	dir := t.TempDir()
	// The model answers 7 to everything: right on 6 lines of 10.
	var lines []string
	for i := 1; i <= 10; i++ {
		expected := 7
		if i > 6 {
			expected = 100 + i
		}
		lines = append(lines, fmt.Sprintf(`{"question": "q%d", "expected": %d, "id": "x%d"}`, i, expected, i))
	}
	path := filepath.Join(dir, "data.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(t, answerSeven)
	o := runtime.Options{
		Launch:   launch.Launch{Given: launch.Given{Sets: []string{"max_rounds=1"}}},
		Settings: runtime.Settings{Getenv: envFor(srv.URL), RunsDir: dir},
	}
	sum, err := Sweep(context.Background(), sweepPlan(t, "0.7"), Options{Run: o, Dataset: path})
	if err != nil {
		t.Fatal(err)
	}
	a := sum.Accuracy
	if a == nil || a.N != 10 || a.Method != "wilson" || math.Abs(a.Mean-0.6) > 1e-9 || math.Abs(a.Low-0.3127) > 1e-3 || math.Abs(a.High-0.8318) > 1e-3 {
		t.Fatalf("accuracy = %+v, want 0.6 with Wilson 95%% CI 0.313-0.832", a)
	}
	t.Log(sum.AccuracyLine())
	if len(sum.UnusedFields) != 1 || sum.UnusedFields[0] != "id" {
		t.Errorf("unused fields = %v, want [id]", sum.UnusedFields)
	}
	r := sum.Runs[6]
	if r.Line != 7 || r.Inputs["question"] != "q7" || r.Expected != 107 || r.Score == nil || *r.Score != 0 {
		t.Errorf("run of line 7 = %+v", r)
	}
	var res result.Result
	data, _ := os.ReadFile(filepath.Join(sum.Runs[0].Dir, "result.json"))
	if err := json.Unmarshal(data, &res); err != nil || res.Score == nil || *res.Score != 1 || fmt.Sprint(res.Expected) != "7" {
		t.Errorf("result.json score %v expected %v (%v)", res.Score, res.Expected, err)
	}
	var m result.Manifest
	data, _ = os.ReadFile(filepath.Join(sum.Runs[0].Dir, "run.json"))
	if err := json.Unmarshal(data, &m); err != nil || fmt.Sprint(m.Expected) != "7" || m.Sweep != sum.ID || m.Inputs["question"] != "q1" {
		t.Errorf("run.json = %+v (%v)", m, err)
	}
}

func TestSweepRejectsBadPlans(t *testing.T) {
	plan := sweepPlan(t, "0.7")
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	_ = os.WriteFile(bad, []byte("{\"question\": \"q\"}\nnot json\n"), 0o644)
	missing := filepath.Join(dir, "missing.jsonl")
	_ = os.WriteFile(missing, []byte("{\"expected\": 1}\n"), 0o644)
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"unknown axis", Options{Matrix: []Axis{{Name: "rounds", Values: []string{"1"}}}}, `no var or input "rounds"`},
		{"bad value", Options{Matrix: []Axis{{Name: "max_rounds", Values: []string{"1", "two"}}}}, `"two" is not an integer`},
		{"bad line", Options{Dataset: bad}, "bad.jsonl:2"},
		{"missing input", Options{Dataset: missing}, "missing.jsonl:1: the line has no field \"question\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Run = runtime.Options{
				Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}},
				Settings: runtime.Settings{RunsDir: filepath.Join(dir, "runs")},
			}
			if tc.opts.Dataset != "" {
				tc.opts.Run.Inputs = nil
			}
			_, err := Sweep(context.Background(), plan, tc.opts)
			var fe *args.FlagError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a flag error with %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "runs")); err == nil {
				t.Error("a sweep directory was created for an invalid sweep")
			}
		})
	}
	if _, err := ParseAxis("max_rounds"); err == nil {
		t.Error("ParseAxis accepted a flag without values")
	}
	if a, err := ParseAxis("max_rounds=1, 2,3"); err != nil || strings.Join(a.Values, "|") != "1|2|3" {
		t.Errorf("ParseAxis = %+v, %v", a, err)
	}
}

func TestMeanCI(t *testing.T) {
	for _, tc := range []struct {
		name            string
		scores          []float64
		mean, low, high float64
		method          string
	}{
		{"all right", []float64{1, 1, 1, 1, 1}, 1, 0.5655, 1, "wilson"},
		{"all wrong", []float64{0, 0, 0, 0}, 0, 0, 0.4899, "wilson"},
		{"half", []float64{1, 0, 1, 0}, 0.5, 0.1500, 0.8500, "wilson"},
		{"graded", []float64{0.5, 1, 0, 0.5}, 0.5, 0.5 - 1.959964*0.408248/2, 0.5 + 1.959964*0.408248/2, "normal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := MeanCI(tc.scores)
			if a == nil || a.Method != tc.method || math.Abs(a.Mean-tc.mean) > 1e-9 || math.Abs(a.Low-tc.low) > 1e-3 || math.Abs(a.High-tc.high) > 1e-3 {
				t.Errorf("MeanCI(%v) = %+v, want %.4f [%.4f, %.4f] %s", tc.scores, a, tc.mean, tc.low, tc.high, tc.method)
			}
		})
	}
	if MeanCI(nil) != nil {
		t.Error("MeanCI of nothing is not nil")
	}
}

// TestTallyCountsInconclusiveApart: inconclusive runs (scored 0 by the
// runtime) count in the accuracy over all runs and not in the one over
// concluded runs; failed runs in neither.
func TestTallyCountsInconclusiveApart(t *testing.T) {
	one, zero := 1.0, 0.0
	s := &Summary{Runs: []Run{
		{Status: result.StatusCompleted, Score: &one},
		{Status: result.StatusCompleted, Score: &one},
		{Status: result.StatusCompleted, Score: &zero},
		{Status: result.StatusInconclusive, Score: &zero, Inconclusive: "fallback in answer"},
		{Status: result.StatusFailed},
	}}
	s.tally()
	if s.Completed != 3 || s.Inconclusive != 1 || s.Failed != 1 {
		t.Fatalf("counts: %s", s.CountsLine())
	}
	if s.Accuracy == nil || s.Accuracy.N != 4 || s.Accuracy.Mean != 0.5 {
		t.Errorf("accuracy over all runs %+v, want 2/4", s.Accuracy)
	}
	if s.AccuracyConcluded == nil || s.AccuracyConcluded.N != 3 || s.AccuracyConcluded.Mean != 2.0/3 {
		t.Errorf("accuracy over concluded runs %+v, want 2/3", s.AccuracyConcluded)
	}
	line := s.AccuracyLine()
	if !strings.Contains(line, "n=4), 1 inconclusive run(s) counted wrong\naccuracy over concluded runs: 0.667") {
		t.Errorf("accuracy line:\n%s", line)
	}
	if !strings.Contains(s.Markdown(), "- Runs: 5 (3 concluded, 1 inconclusive, 1 failed, 0 waiting)") || !strings.Contains(s.Markdown(), "inconclusive: fallback in answer") {
		t.Errorf("summary.md:\n%s", s.Markdown())
	}
}
