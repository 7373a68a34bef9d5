package spectest_test

import (
	"bytes"
	"testing"

	"github.com/debate-runner/runner/runtime/spectest"
)

const judgedSpec = `version: 1
name: judged
inputs: {question: {required: true}}
models:
  strict: {model: strict}
  lenient: {model: lenient}
templates:
  use: [judge@1]
  define: {answer: "{{.Inputs.question}}"}
agents: {a: {}}
nodes:
  answer: {kind: ask, agents: [a], template: answer}
flow: [answer]
outputs:
  answer: nodes.answer.output
score:
  judge:
    models: [strict, lenient]
    levels: {poor: P, fair: F, good: G}
`

// TestJudgedScoreInSpecTests: a spec test scripts each judge as an agent
// of the node score.judge (by its model name) and sees the score and the
// judgements; unscripted judges get stand-ins that name a level.
func TestJudgedScoreInSpecTests(t *testing.T) {
	test := `inputs: {question: "Is it so?"}
cases:
  - name: scripted judges
    replies:
      - {node: answer, reply: 'It is.'}
      - {node: score.judge, agent: strict, reply: '{"reasoning": "thin", "level": "poor"}'}
      - {node: score.judge, agent: lenient, reply: '{"reasoning": "fine", "level": "good"}'}
    expect:
      - score == 0.5
      - map(judgements, .judge) == ["strict", "lenient"]
      - judgements[0].level == "poor" && judgements[0].reasoning == "thin" && judgements[1].score == 1
      - count(calls, .node == "score.judge") == 2
  - name: stand-in judges still grade
    replies:
      - {node: answer, reply: 'It is.'}
    expect:
      - len(judgements) == 2 && all(judgements, .level in ["poor", "fair", "good"])
`
	dir := writeFiles(t, map[string]string{"spec.yaml": judgedSpec, "spec.test.yaml": test})
	res := runFiles(t, dir)
	if len(res) != 1 || res[0].Err != nil {
		t.Fatalf("%+v", res)
	}
	if res[0].Failed() {
		var out bytes.Buffer
		spectest.WriteFile(&out, res[0], true)
		t.Fatalf("failed:\n%s", out.String())
	}
}
