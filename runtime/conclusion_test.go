package runtime

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/result"
)

// conclusionSpec: two agents rate a thing as JSON with a fallback; one
// output reads a's rating, one b's, one the highest of both, one how many
// rated, one nothing the agents said.
const conclusionSpec = `version: 1
name: conclusion
agents: {a: {}, b: {}}
templates:
  define:
    rate: "KEY={{.Agent.ID}}/r{{.Round}}/rate Rate it."
nodes:
  rate:
    kind: ask
    agents: [a, b]
    template: rate
    record: rating
    output:
      format: json
      schema: {type: object, required: [score], properties: {score: {type: integer}}}
      repair: 0
      fallback: {score: 0}
flow: [rate]
outputs:
  a_score: nodes.rate.outputs.a.score
  b_score: nodes.rate.outputs.b.score
  top: max(map(latest("rating"), {.output.score}))
  raters: len(latest("rating"))
  fixed: '"same either way"'
`

// runConclusion runs the spec (with extra YAML) against replies by agent.
func runConclusion(t *testing.T, extra string, replies map[string]string) (*result.Result, string) {
	t.Helper()
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: replies[strings.SplitN(callKey(r), "/", 2)[0]]}
	})
	plan := loadPlan(t, writeSpec(t, t.TempDir(), conclusionSpec+extra))
	r, res, err := execute(t, plan, Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res, r.Dir
}

// TestFallbackOutputsAreThoseThatDependOnAFallback: an output came from a
// fallback when its value changes as the fallback's does; the run is
// inconclusive by default when any did, and the messages, result.json and
// the report mark the fallback.
func TestFallbackOutputsAreThoseThatDependOnAFallback(t *testing.T) {
	res, dir := runConclusion(t, "", map[string]string{"a": `{"score": 7}`, "b": "seven, I think"})
	c := res.Conclusion
	if res.Status != result.StatusInconclusive || c == nil || c.Concluded {
		t.Fatalf("status %s, conclusion %+v", res.Status, c)
	}
	// top is max(7, 0), but b's real score could have been higher: it
	// rests on the fallback too. How many rated does not.
	if !slices.Equal(c.FallbackOutputs, []string{"b_score", "top"}) || c.Fallbacks != 1 || c.ForcedVerdicts != 0 {
		t.Errorf("conclusion %+v, want b_score and top from a fallback", c)
	}
	if res.Outputs["b_score"] != float64(0) && res.Outputs["b_score"] != 0 {
		t.Errorf("outputs are still written: %v", res.Outputs)
	}
	marked := 0
	for _, m := range res.Messages {
		if m.Fallback != (m.From == "b") {
			t.Errorf("message of %s marked fallback %v", m.From, m.Fallback)
		}
		if m.Fallback {
			marked++
		}
	}
	if marked != 1 {
		t.Errorf("%d messages marked fallback", marked)
	}
	disk, err := result.Read(dir)
	if err != nil || disk.Status != result.StatusInconclusive || disk.Conclusion == nil || disk.Conclusion.Fallbacks != 1 {
		t.Fatalf("result.json: %v %+v", err, disk)
	}
	report, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"- Status: **inconclusive**", "- Inconclusive: outputs from fallbacks or forced verdicts: b_score", "fallback output", "### b_score (from a fallback or a forced verdict)"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if strings.Contains(string(report), "### raters (from") || strings.Contains(string(report), "### a_score (from") {
		t.Error("report.md marks an output no fallback decided")
	}

	// Every reply readable: completed, nothing marked.
	res, _ = runConclusion(t, "", map[string]string{"a": `{"score": 7}`, "b": `{"score": 5}`})
	if res.Status != result.StatusCompleted || !res.Conclusion.Concluded || len(res.Conclusion.FallbackOutputs) != 0 {
		t.Errorf("status %s, conclusion %+v", res.Status, res.Conclusion)
	}
}

// TestConcludedConditionDecides: the spec's concluded: replaces the
// default; one that cannot be evaluated leaves the run inconclusive with
// the reason.
func TestConcludedConditionDecides(t *testing.T) {
	replies := map[string]string{"a": `{"score": 7}`, "b": "seven, I think"}
	res, _ := runConclusion(t, `concluded: '"a_score" not in fallback_outputs && outputs.top > 5'`+"\n", replies)
	if res.Status != result.StatusCompleted || res.Conclusion.Condition == "" || !slices.Equal(res.Conclusion.FallbackOutputs, []string{"b_score", "top"}) {
		t.Errorf("status %s, conclusion %+v", res.Status, res.Conclusion)
	}
	res, _ = runConclusion(t, `concluded: '"b_score" not in fallback_outputs'`+"\n", replies)
	if res.Status != result.StatusInconclusive || !strings.Contains(res.Conclusion.Summary(), `concluded: "b_score" not in fallback_outputs is false`) {
		t.Errorf("status %s, summary %q", res.Status, res.Conclusion.Summary())
	}
	res, _ = runConclusion(t, `concluded: 'outputs.a_score.x == 1'`+"\n", replies)
	if res.Status != result.StatusInconclusive || !strings.Contains(res.Conclusion.Problem, "could not be evaluated") {
		t.Errorf("status %s, conclusion %+v", res.Status, res.Conclusion)
	}
}
