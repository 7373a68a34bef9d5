package export

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/sweep"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

const debateSpec = `version: 1
name: tiny-debate
inputs:
  question: {required: true}
agents: {a: {name: A}, b: {name: B}, c: {name: C}}
templates:
  define:
    answer: "KEY={{.Agent.ID}}/r{{.Round}}\n{{.Inputs.question}}"
nodes:
  answer: {kind: ask, agents: [a, b, c], template: answer, record: answer}
flow:
  - loop: {as: round, max: 2, do: [answer]}
outputs:
  answer: mode(map(latest("answer"), {number(.output)}), "random")
score: outputs.answer == expected
`

// runDirs runs the debate once per item in-process against a local server
// whose agents answer at random, and gives the run directories with their
// expected answers.
func runDirs(t *testing.T, n int) ([]string, []int) {
	// Each agent answers 0, 1 or 2 by a hash of its request (the server
	// answers concurrently, so no shared random source).
	srv := llmtest.New(t, func(req llmtest.Request) llmtest.Reply {
		h := fnv.New32a()
		h.Write([]byte(req.LastUser()))
		return llmtest.Reply{Content: fmt.Sprintf("The answer is %d.", h.Sum32()%3)}
	})
	plan := runtest.LoadPlan(t, runtest.WriteSpec(t, t.TempDir(), debateSpec))
	runs := t.TempDir()
	var dirs []string
	var want []int
	for i := 0; i < n; i++ {
		opts := runtime.Options{}
		opts.Getenv, opts.Sleep, opts.RunsDir = runtest.Env(srv.URL, "sk-export-test"), runtest.NoSleep, runs
		opts.InputValues = map[string]any{"question": fmt.Sprintf("question %d", i)}
		opts.Expected = float64(i % 3)
		run, err := runtime.Start(plan, opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run.Execute(t.Context()); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, run.Dir)
		want = append(want, i%3)
	}
	return dirs, want
}

func validate(t *testing.T, log *InspectLog) map[string]any {
	t.Helper()
	c := jsonschema.NewCompiler()
	sch, err := c.Compile("testdata/inspect-log.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(log)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(v); err != nil {
		t.Fatalf("the eval log breaks the format: %#v", err)
	}
	return v
}

// TestInspectLogOfASweep exports a sweep of debates as an Inspect eval log
// and checks it against the format (every field it declares for the
// objects runner writes, and no other; testdata/inspect-log.schema.json)
// and against the runs: a sample per run with its messages, target and
// score, the accuracy the mean of the scores, the tokens the runs' sum.
func TestInspectLogOfASweep(t *testing.T) {
	dirs, _ := runDirs(t, 4)
	sum := &sweep.Summary{ID: "sweep-x", Spec: "tiny-debate", Dataset: "items.jsonl"}
	var scores []float64
	tokens := 0
	var results []*result.Result
	for i, d := range dirs {
		res, err := result.Read(d)
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, res)
		sum.Runs = append(sum.Runs, sweep.Run{Index: i, Dir: d, Line: i + 1, Status: res.Status, Score: res.Score})
		if res.Score != nil {
			scores = append(scores, *res.Score)
		}
		tokens += res.Usage.Total.PromptTokens + res.Usage.Total.CompletionTokens
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
	if len(log.Samples) != len(dirs) || log.Eval.Dataset.Samples != len(dirs) || log.Results.TotalSamples != len(dirs) {
		t.Fatalf("%d samples for %d runs", len(log.Samples), len(dirs))
	}
	got := 0
	for name, u := range log.Stats.ModelUsage {
		if u.TotalTokens != u.InputTokens+u.OutputTokens {
			t.Errorf("model %s: total tokens %d", name, u.TotalTokens)
		}
		got += u.TotalTokens
	}
	if got != tokens {
		t.Errorf("the log counts %d tokens, the runs %d", got, tokens)
	}
	mean := 0.0
	for i, s := range log.Samples {
		res := results[i]
		if s.ID != i+1 || s.Target != fmt.Sprint(res.Expected) || len(s.Messages) != len(res.Messages)+1 || s.UUID != res.RunID {
			t.Errorf("sample %d: id %d target %q, %d messages; run %s expected %v with %d messages", i, s.ID, s.Target, len(s.Messages), res.RunID, res.Expected, len(res.Messages))
		}
		if res.Score == nil || s.Scores["score"].Value != *res.Score {
			t.Errorf("sample %d: score %v, run's %v", i, s.Scores["score"].Value, res.Score)
		} else {
			mean += *res.Score / float64(len(dirs))
		}
		if s.Messages[0]["role"] != "user" || s.Messages[0]["content"] != fmt.Sprintf("question %d", i) {
			t.Errorf("sample %d: first message %v, want the question from the user", i, s.Messages[0])
		}
		for j, m := range res.Messages {
			if g := s.Messages[j+1]; g["content"] != m.Content || g["role"] != "assistant" || g["metadata"].(map[string]any)["agent"] != m.From {
				t.Errorf("sample %d message %d: %v, run's %+v", i, j, g, m)
			}
		}
	}
	if acc := log.Results.Scores[0].Metrics["accuracy"].Value; acc != mean || log.Results.Scores[0].ScoredSamples != len(scores) {
		t.Errorf("accuracy %v over %d, want %v over %d", acc, log.Results.Scores[0].ScoredSamples, mean, len(scores))
	}
}

// A run directory is a log of one sample; a directory of neither kind is
// an error naming it.
func TestInspectLogOfARun(t *testing.T) {
	dirs, _ := runDirs(t, 1)
	log, err := Inspect(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	v := validate(t, log)
	if len(log.Samples) != 1 || v["status"] != "success" {
		t.Errorf("run log: %d samples, status %v", len(log.Samples), v["status"])
	}
	empty := t.TempDir()
	if _, err := Inspect(empty); err == nil || !strings.Contains(err.Error(), empty) {
		t.Errorf("an empty directory: %v", err)
	}
}
