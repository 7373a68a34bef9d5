package ask_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/dryrun"
	"github.com/debate-runner/runner/runtime/result"
)

const whenSpec = `version: 1
name: when
models: {default: {model: m}}
agents:
  d: {replicas: 3}
nodes:
  answer:
    kind: ask
    agents: [d]
    template: t
    record: answer
    when: len(own) < 2 || own[-1].output != own[-2].output
templates:
  define:
    t: "agent {{.Agent.ID}} round {{.Round}}"
flow:
  - loop: {as: round, max: 4, do: [answer]}
outputs:
  last: map(latest("answer"), {.output})
  carried: map(latest("answer"), {.carried})
`

// TestPerAgentWhen: an agent whose last two answers agree drops out of the
// node and keeps its answer (recorded again, carried, with no call); the
// others go on being asked; the dry run's worst case asks everyone.
func TestPerAgentWhen(t *testing.T) {
	// d_1 answers 5 always: stable after round 2, so not asked in rounds
	// 3 and 4. d_2 changes every round. d_3 gives 5, 6, 6: not asked in 4.
	script := map[string][]string{"d_1": {"5", "5", "5", "5"}, "d_2": {"1", "2", "3", "4"}, "d_3": {"5", "6", "6", "6"}}
	re := regexp.MustCompile(`agent (\S+) round (\d+)`)
	srv := llmtest.New(t, func(r llmtest.Request) llmtest.Reply {
		m := re.FindStringSubmatch(r.Messages[len(r.Messages)-1].Content)
		round, _ := strconv.Atoi(m[2])
		return llmtest.Reply{Content: script[m[1]][round-1]}
	})
	plan := runtest.LoadPlan(t, runtest.WriteSpec(t, t.TempDir(), whenSpec))
	run, err := runtime.Start(plan, runtime.Options{Settings: runtime.Settings{RunsDir: t.TempDir(), Getenv: runtest.Env(srv.URL, "sk-when")}, Seams: runtime.Seams{Sleep: runtest.NoSleep}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Execute(context.Background())
	if err != nil || res.Status != result.StatusCompleted {
		t.Fatalf("run: %v (status %s)", err, res.Status)
	}
	var asked []string
	for _, r := range srv.Requests() {
		m := re.FindStringSubmatch(r.Messages[len(r.Messages)-1].Content)
		asked = append(asked, m[1]+"/"+m[2])
	}
	slices.Sort(asked)
	want := []string{"d_1/1", "d_1/2", "d_2/1", "d_2/2", "d_2/3", "d_2/4", "d_3/1", "d_3/2", "d_3/3"}
	if !slices.Equal(asked, want) {
		t.Errorf("asked %v, want %v", asked, want)
	}
	if got := fmt.Sprint(res.Outputs["last"], res.Outputs["carried"]); got != "[5 4 6] [true false true]" {
		t.Errorf("latest answers and carried: %s", got)
	}
	if res.Usage.Total.Calls != len(want) {
		t.Errorf("usage counts %d calls, want %d", res.Usage.Total.Calls, len(want))
	}
	rep, err := dryrun.Run(plan, dryrun.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Calls != 3*4 {
		t.Errorf("the dry run's worst case is %d calls, want N·R = 12", rep.Calls)
	}
}
