package runtime

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/runtime/report"
	"github.com/debate-runner/runner/runtime/result"
)

// roundsSpec is a debate of AGENTS agents over ROUNDS rounds whose answer
// is the majority of the agents' latest answers (ties to the first), scored
// against the expected answer.
const roundsSpec = `version: 1
name: rounds
inputs:
  question: {required: true}
agents: {AGENTS}
templates:
  define:
    answer: "KEY={{.Agent.ID}}/r{{.Round}}\n{{.Inputs.question}}"
nodes:
  answer: {kind: ask, agents: [IDS], template: answer, record: answer}
flow:
  - loop: {as: round, max: ROUNDS, do: [answer]}
outputs:
  answer: mode(map(latest("answer"), {.output}), "first")
score: outputs.answer == expected
`

// TestRoundScoresProperty runs debates whose agents answer at random from
// a few values each round and checks result.json's rounds against the
// answers as generated: each agent's score is whether its answer that
// round is the expected one; the round's score is whether the majority so
// far (ties to the first agent) is; flips are the agents whose score went
// 1→0 or 0→1, or who stayed wrong with another answer; agreement is the
// share of the most common answer; the last round's score is the run's.
func TestRoundScoresProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 2))
	for trial := 0; trial < 12; trial++ {
		nAgents, nRounds := 2+r.IntN(3), 1+r.IntN(3)
		ids := []string{"a", "b", "c", "d"}[:nAgents]
		answers := map[string]string{} // "a/r1" -> answer
		for _, id := range ids {
			for rd := 1; rd <= nRounds; rd++ {
				answers[fmt.Sprintf("%s/r%d", id, rd)] = fmt.Sprint(r.IntN(3))
			}
		}
		expected := fmt.Sprint(r.IntN(3))
		srv := llmtest.New(t, func(req llmtest.Request) llmtest.Reply {
			return llmtest.Reply{Content: answers[callKey(req)]}
		})
		var agents []string
		for _, id := range ids {
			agents = append(agents, id+": {name: "+strings.ToUpper(id)+"}")
		}
		src := strings.NewReplacer("AGENTS", strings.Join(agents, ", "), "IDS", strings.Join(ids, ", "), "ROUNDS", fmt.Sprint(nRounds)).Replace(roundsSpec)
		plan := loadPlan(t, writeSpec(t, t.TempDir(), src))
		opts := Options{Settings: Settings{Getenv: envFor(srv.URL)}, Seams: Seams{Sleep: noSleep}}
		opts.Launch.InputValues = map[string]any{"question": "q"}
		opts.Expected = expected
		_, res, err := execute(t, plan, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rounds) != nRounds {
			t.Fatalf("trial %d: %d rounds in the result, want %d", trial, len(res.Rounds), nRounds)
		}
		score := func(ok bool) float64 {
			if ok {
				return 1
			}
			return 0
		}
		prevMajority := ""
		for i, got := range res.Rounds {
			rd := i + 1
			want := result.Round{Round: rd, Agents: map[string]float64{}}
			counts := map[string]int{}
			var order []string
			top := 0
			for _, id := range ids {
				a := answers[fmt.Sprintf("%s/r%d", id, rd)]
				want.Agents[id] = score(a == expected)
				if counts[a] == 0 {
					order = append(order, a)
				}
				counts[a]++
				top = max(top, counts[a])
				if rd > 1 {
					prev := answers[fmt.Sprintf("%s/r%d", id, rd-1)]
					switch {
					case prev == expected && a != expected:
						want.RightToWrong = append(want.RightToWrong, id)
					case prev != expected && a == expected:
						want.WrongToRight = append(want.WrongToRight, id)
					case prev != expected && a != prev:
						want.ChangedWhileWrong = append(want.ChangedWhileWrong, id)
					}
				}
			}
			majority := ""
			for _, a := range order {
				if counts[a] == top {
					majority = a
					break
				}
			}
			s := score(majority == expected)
			want.Score = &s
			want.MajorityChanged = rd > 1 && majority != prevMajority
			prevMajority = majority
			want.Agreement = float64(top) / float64(nAgents)
			for _, l := range []*[]string{&got.RightToWrong, &got.WrongToRight, &got.ChangedWhileWrong} {
				slices.Sort(*l)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("trial %d round %d (answers %v, expected %s):\n got  %s\n want %s", trial, rd, answers, expected, roundString(got), roundString(want))
			}
		}
		if last := res.Rounds[len(res.Rounds)-1]; res.Score == nil || *last.Score != *res.Score {
			t.Fatalf("trial %d: the last round scores %v, the run %v", trial, *last.Score, res.Score)
		}
		// report.md has a row per round.
		md := report.Markdown(plan, result.Manifest{}, res)
		_, section, ok := strings.Cut(md, "## Score by round")
		if !ok {
			t.Fatalf("trial %d: report.md has no rounds section:\n%s", trial, md)
		}
		for _, rd := range res.Rounds {
			row := fmt.Sprintf("\n| %d | %g | ", rd.Round, *rd.Score)
			if !strings.Contains(section, row) {
				t.Fatalf("trial %d: no row %q in report.md's rounds:\n%s", trial, row, section)
			}
		}
	}
}

func roundString(r result.Round) string {
	var agents []string
	for id, s := range r.Agents {
		agents = append(agents, fmt.Sprintf("%s=%v", id, s))
	}
	slices.Sort(agents)
	return fmt.Sprintf("round %d score %v agents %v r→w %v w→r %v changed %v majority changed %v agreement %.2f", r.Round, *r.Score, agents, r.RightToWrong, r.WrongToRight, r.ChangedWhileWrong, r.MajorityChanged, r.Agreement)
}
