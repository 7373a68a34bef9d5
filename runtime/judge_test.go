package runtime

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime/launch"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec/value"
)

const judgedSpec = `
models:
  judge-a: {model: judge-a}
  judge-b: {model: judge-b}
  judge-c: {model: judge-c}
score:
  judge:
    models: [judge-a, judge-b, judge-c]
    criterion: The answers address the question.
    levels:
      poor: they miss it
      fair: they touch it
      good: they answer it
`

// judges answer as their model says: a gives good, b fair (in a reply
// with text around its JSON), c no level at all.
func judges(r llmtest.Request) llmtest.Reply {
	switch r.Model {
	case "judge-a":
		return llmtest.Reply{Content: `{"reasoning": "Both answers take the question head on.", "level": "good"}`}
	case "judge-b":
		return llmtest.Reply{Content: "Here is my grade:\n" + `{"reasoning": "They touch it lightly.", "level": " Fair "}` + "\nDone."}
	case "judge-c":
		return llmtest.Reply{Content: "I would rather not grade this."}
	}
	return llmtest.Reply{Content: "answer to " + runtest.CallKey(r)}
}

// TestJudgedScore runs a spec whose score is judged by three models and
// checks the judgements, the score, the request each judge got, the
// journal and usage, then that a replay asks no judge again and gives the
// same judgements, and that a second run is served them from the cache.
func TestJudgedScore(t *testing.T) {
	src := `version: 1
name: judged
inputs:
  question: {required: true}
agents:
  a: {name: Alice}
  b: {name: Bob}
templates:
  use: [judge@1]
  define:
    answer: "KEY={{.Agent.ID}}/r{{.Round}}/answer\n{{.Inputs.question}}"
nodes:
  answer: {kind: ask, agents: [a, b], template: answer, record: answer}
flow: [answer]
outputs:
  answers: map(latest("answer"), {.content})
` + judgedSpec
	plan := loadPlan(t, writeSpec(t, t.TempDir(), src))
	srv := llmtest.New(t, judges)
	cache := runtest.NewMemCache()
	opts := Options{Launch: launch.Launch{Given: launch.Given{Inputs: []string{"question=Why is the sky blue?"}}, Cache: cache},
		Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}}
	r, res, err := execute(t, plan, opts)
	if err != nil {
		t.Fatal(err)
	}
	js := res.Judgements
	if len(js) != 3 || js[0].Judge != "judge-a" || js[1].Judge != "judge-b" || js[2].Judge != "judge-c" {
		t.Fatalf("judgements %+v", js)
	}
	if js[0].Level != "good" || *js[0].Score != 1 || *js[0].LevelIndex != 2 || js[0].Reasoning != "Both answers take the question head on." {
		t.Errorf("judge a: %+v", js[0])
	}
	if js[1].Level != "fair" || *js[1].Score != 0.5 || js[1].Reasoning != "They touch it lightly." {
		t.Errorf("judge b: %+v", js[1])
	}
	if js[2].Score != nil || js[2].Error == "" || js[2].Reasoning != "I would rather not grade this." {
		t.Errorf("judge c: %+v", js[2])
	}
	if res.Score == nil || *res.Score != 0.75 {
		t.Errorf("score %v, want 0.75 (the mean of 1 and 0.5)", res.Score)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "judge judge-c gave no level") {
		t.Errorf("warnings %v", res.Warnings)
	}
	if u := res.Usage.ByNode[JudgeNode]; u.Calls != 3 || res.Usage.Total.Calls != 5 {
		t.Errorf("usage of the judges %+v, total %+v", u, res.Usage.Total)
	}
	// Each judge got the rubric, the task and the outputs, and a schema
	// whose level is one of the levels.
	judged := 0
	for _, q := range srv.Requests() {
		if !strings.HasPrefix(q.Model, "judge-") {
			continue
		}
		judged++
		p := q.LastUser()
		for _, w := range []string{"Why is the sky blue?", "answer to a/r0/answer", "The answers address the question.", "- poor: they miss it", "- good: they answer it"} {
			if !strings.Contains(p, w) {
				t.Errorf("%s's prompt lacks %q:\n%s", q.Model, w, p)
			}
		}
		if q.ResponseFormat != "json_schema" || !strings.Contains(string(q.JSONSchema), `"enum":["poor","fair","good"]`) {
			t.Errorf("%s: response format %s, schema %s", q.Model, q.ResponseFormat, q.JSONSchema)
		}
	}
	if judged != 3 {
		t.Errorf("%d judge requests, want 3", judged)
	}
	keys := map[string]bool{}
	for _, ev := range eventsOf(readEvents(t, r.Dir), "model_response") {
		keys[ev.Key] = true
	}
	for _, j := range js {
		if !keys[j.Key] || !strings.HasPrefix(j.Key, JudgeNode+"/") {
			t.Errorf("no journaled response under %s (%v)", j.Key, keys)
		}
	}

	// report.md shows each judge's level and reasoning.
	report, err := os.ReadFile(filepath.Join(r.Dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"## Judgements", "Score: 0.75", "### judge-a: good (1)", "Both answers take the question head on.", "### judge-b: fair (0.5)", "### judge-c: no level (the reply names none of the levels"} {
		if !strings.Contains(string(report), w) {
			t.Errorf("report.md lacks %q", w)
		}
	}

	// A replay asks nothing and gives the same judgements.
	replies, err := LoadReplay(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	before := srv.Count()
	ro := opts
	ro.Launch = launch.Launch{Given: opts.Given, Recording: launch.Recording{Replay: replies, ReplayFrom: r.Dir}}
	_, replayed, err := execute(t, plan, ro)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if srv.Count() != before || !sameJudgements(replayed.Judgements, js) {
		t.Errorf("replay sent %d requests; judgements %+v", srv.Count()-before, replayed.Judgements)
	}

	// A second run is served every call, the judges' too, by the cache.
	_, again, err := execute(t, plan, opts)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Count() != before || !sameJudgements(again.Judgements, js) {
		t.Errorf("the cached run sent %d requests; judgements %+v", srv.Count()-before, again.Judgements)
	}
}

func sameJudgements(a, b []result.Judgement) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestReadJudgementRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 37))
	for range 500 {
		n := 2 + rng.IntN(5)
		var levels []value.JudgeLevel
		for i := range n {
			levels = append(levels, value.JudgeLevel{Name: fmt.Sprintf("L%d-%c", i, 'a'+rng.IntN(26))})
		}
		want := rng.IntN(n)
		reasoning := strings.Repeat(string(rune('a'+rng.IntN(26))), rng.IntN(40)) + ` "quoted" {braces}`
		name := levels[want].Name
		if rng.IntN(2) == 0 {
			name = " " + strings.ToUpper(name) + "\t"
		}
		body, _ := json.Marshal(map[string]string{"reasoning": reasoning, "level": name})
		text := string(body)
		if rng.IntN(2) == 0 {
			text = "My grade:\n" + text + "\nThat is all."
		}
		r, level, ok := readJudgement(text, levels)
		if !ok || level != want || r != reasoning {
			t.Fatalf("%q: reasoning %q, level %d, ok %v; want %d", text, r, level, ok, want)
		}
		// A name that is no level is no level.
		body, _ = json.Marshal(map[string]string{"reasoning": reasoning, "level": name + "x"})
		if _, _, ok := readJudgement(string(body), levels); ok {
			t.Fatalf("%s read as a level", body)
		}
	}
}
