package dryrun

import (
	"os"
	"strings"
	"testing"

	"github.com/debate-runner/runner/runtime/launch"
)

// TestDryRunPlansHumanTurns: the dry run of a debate in which a person
// takes a seat (runtime/testdata/seat.yaml) plans the person's turns as
// such: every turn of the same debate played by models is either a call or
// a person's turn, the person's cost nothing (the estimate is the models'
// turns alone), and the person's first prompt is shown as what the person
// is shown.
func TestDryRunPlansHumanTurns(t *testing.T) {
	text, err := os.ReadFile("../testdata/seat.yaml")
	if err != nil {
		t.Fatal(err)
	}
	given := Options{Given: launch.Given{Inputs: []string{"question=q"}}}
	seat, err := Run(loadPlan(t, writeSpec(t, t.TempDir(), string(text))), given)
	if err != nil {
		t.Fatal(err)
	}
	models, err := Run(loadPlan(t, writeSpec(t, t.TempDir(), strings.Replace(string(text), "{name: You, human: true}", "{name: You}", 1))), given)
	if err != nil {
		t.Fatal(err)
	}
	if seat.HumanTurns == 0 || seat.Calls+seat.HumanTurns != models.Calls || models.HumanTurns != 0 {
		t.Errorf("with the seat: %d calls and %d turns of the person; played by models: %d calls", seat.Calls, seat.HumanTurns, models.Calls)
	}
	var seatCalls, modelCalls int
	for _, m := range seat.Models {
		seatCalls += m.Calls
	}
	for _, m := range models.Models {
		modelCalls += m.Calls
	}
	if seatCalls != seat.Calls || modelCalls != models.Calls {
		t.Errorf("the estimate counts %d calls of %d (seat), %d of %d (models)", seatCalls, seat.Calls, modelCalls, models.Calls)
	}
	human := 0
	for _, p := range seat.Prompts {
		if p.Human {
			human++
			if p.Agent != "you" || p.Model != "" || !strings.Contains(p.User, "You are You") {
				t.Errorf("the person's prompt: %+v", p)
			}
		}
	}
	if human != 1 {
		t.Errorf("%d prompts of the person shown, want its first", human)
	}
}
