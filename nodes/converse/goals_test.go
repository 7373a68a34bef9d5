package converse_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/debate-runner/runner/runtime/result"
)

// ended is a conversation_ended event.
type ended struct {
	Turns  int    `json:"turns"`
	Reason string `json:"reason"`
}

func (o outcome) ends(t *testing.T) []ended {
	t.Helper()
	var out []ended
	for _, e := range o.eventsOf("conversation_ended") {
		var x ended
		if err := json.Unmarshal(e.Data, &x); err != nil {
			t.Fatal(err)
		}
		out = append(out, x)
	}
	return out
}

var hiringGoals = []string{"technical_assessment", "team_fit", "growth_potential"}

// TestGoalChain runs the real hiring panel over its three goals: the panel
// runs once per goal, each goal ends when everyone has withdrawn, and every
// goal's verdicts survive in result.json and the outputs.
func TestGoalChain(t *testing.T) {
	o := runHiringPanel(t, 7)
	ends := o.ends(t)
	if len(ends) != 3 {
		t.Fatalf("%d conversations, want one per goal: %+v", len(ends), ends)
	}
	for i, e := range ends {
		if e.Reason != "everyone withdrew" || e.Turns != 12 {
			t.Errorf("goal %d ended after %d turns by %q, want 12 turns, everyone withdrew", i+1, e.Turns, e.Reason)
		}
	}
	byGoal := map[string][]int{}
	var order []string
	for _, m := range o.turns("panel") {
		if len(byGoal[m.Goal]) == 0 {
			order = append(order, m.Goal)
		}
		byGoal[m.Goal] = append(byGoal[m.Goal], m.Turn)
	}
	if strings.Join(order, " ") != strings.Join(hiringGoals, " ") {
		t.Errorf("goals ran in order %v", order)
	}
	for g, turns := range byGoal {
		for i, n := range turns {
			if n != i+1 {
				t.Errorf("goal %s: turn numbers %v do not restart at 1", g, turns)
				break
			}
		}
	}

	// Participation resets: the first prompt of the second goal shows every
	// member undecided, and the verdicts of the first goal as earlier ones.
	for _, c := range o.calls() {
		if c.Goal != "team_fit" || c.Turn != 1 {
			continue
		}
		if n := strings.Count(c.User, ": no verdict yet"); n != 4 {
			t.Errorf("first prompt of team_fit shows %d undecided members, want 4:\n%s", n, c.User)
		}
		for _, want := range []string{"## Verdicts given on earlier goals", "- technical_assessment: Lena Hoffmann gave POOR_FIT", "## The panel (turn 1 of at most 60)"} {
			if !strings.Contains(c.User, want) {
				t.Errorf("first prompt of team_fit lacks %q", want)
			}
		}
	}

	// result.json keeps every goal's verdicts, with reasoning, counts and
	// percentages.
	var onDisk result.Result
	if err := json.Unmarshal([]byte(o.readFile(t, "result.json")), &onDisk); err != nil {
		t.Fatal(err)
	}
	if len(onDisk.GoalVerdicts) != 3 {
		t.Fatalf("result.json has verdicts of %d goals, want 3", len(onDisk.GoalVerdicts))
	}
	for i, gv := range onDisk.GoalVerdicts {
		if gv.Goal != hiringGoals[i] {
			t.Errorf("goal_verdicts[%d] is %s, want %s", i, gv.Goal, hiringGoals[i])
		}
		if len(gv.Verdicts) != 4 {
			t.Errorf("%s: %d verdicts, want 4", gv.Goal, len(gv.Verdicts))
		}
		for _, v := range gv.Verdicts {
			if v.Verdict != hiringVerdict[v.Agent] || v.Reasoning != "REASON-"+gv.Goal+"-"+v.Agent || !v.Withdrawn {
				t.Errorf("%s: %+v", gv.Goal, v)
			}
		}
		if want := map[string]int{"GOOD_FIT": 2, "ADEQUATE": 1, "POOR_FIT": 1}; !maps.Equal(gv.Counts, want) {
			t.Errorf("%s: counts %v, want %v", gv.Goal, gv.Counts, want)
		}
		if want := map[string]float64{"GOOD_FIT": 50, "ADEQUATE": 25, "POOR_FIT": 25}; !maps.Equal(gv.Percent, want) {
			t.Errorf("%s: percent %v, want %v", gv.Goal, gv.Percent, want)
		}
	}
	// The spec's own output: per goal each member's last verdict and the
	// most common one.
	var out []struct {
		Goal      string
		Consensus string
		Verdicts  []struct{ Agent, Verdict, Reasoning string }
	}
	data, err := json.Marshal(o.res.Outputs["verdicts"])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &out); err != nil || len(out) != 3 {
		t.Fatalf("verdicts output %s (%v), want 3 goals", data, err)
	}
	for i, g := range out {
		if g.Goal != hiringGoals[i] || g.Consensus != "GOOD_FIT" || len(g.Verdicts) != 4 {
			t.Errorf("verdicts output for goal %d: %+v", i+1, g)
		}
		for _, v := range g.Verdicts {
			if v.Verdict != hiringVerdict[v.Agent] {
				t.Errorf("verdicts output, goal %s: %+v", g.Goal, v)
			}
		}
	}
}

// TestVerdictsResetPerGoal: a verdict from the first goal does not count on
// the second, so withdrawing there without a new verdict is rejected.
func TestVerdictsResetPerGoal(t *testing.T) {
	plan := loadPlan(t, panelSpec)
	o := execute(t, plan, scripted(t, plan, func(c call) string {
		switch {
		case c.Goal == "first":
			return decideAndWithdraw(c)
		case c.Speaker == "ana" && !c.Repair:
			return turn{Content: "same as before", Withdrawn: "true"}.String()
		}
		return turn{Content: "no this time", Verdict: "NO", Reasoning: "new facts", Withdrawn: "true"}.String()
	}), flags{Seed: 1}).must(t)
	var repairs []call
	for _, c := range o.calls() {
		if c.Repair {
			repairs = append(repairs, c)
		}
	}
	if len(repairs) != 1 || repairs[0].Goal != "second" || !strings.Contains(repairs[0].User, "you can only withdraw after giving a verdict") {
		t.Fatalf("repairs %+v, want ana's withdrawal on the second goal rejected", repairs)
	}
	want := map[string]string{"first": "YES", "second": "NO"}
	if len(o.res.GoalVerdicts) != 2 {
		t.Fatalf("goal verdicts %+v", o.res.GoalVerdicts)
	}
	for _, gv := range o.res.GoalVerdicts {
		if len(gv.Verdicts) != 3 || gv.Counts[want[gv.Goal]] != 3 || gv.Percent[want[gv.Goal]] != 100 {
			t.Errorf("goal %s: %+v", gv.Goal, gv)
		}
	}
}

// silent never decides nor withdraws.
func silent(c call) string {
	return turn{Content: fmt.Sprintf("%s thinks aloud at %d", c.Speaker, c.Turn)}.String()
}

func TestUntilAndMaxTurns(t *testing.T) {
	decideSecond := func() func(c call) string {
		var mu sync.Mutex
		n := map[string]int{}
		return func(c call) string {
			mu.Lock()
			defer mu.Unlock()
			n[c.Goal+c.Speaker]++
			if n[c.Goal+c.Speaker] == 2 {
				return turn{Content: "decided", Verdict: "MAYBE", Reasoning: "unclear", Withdrawn: "false"}.String()
			}
			return silent(c)
		}
	}
	tests := []struct {
		name   string
		pairs  []string
		script func(call) string
		turns  int
		reason string
	}{
		{"until turn", []string{"    max_turns: 30", "    max_turns: 30\n    until: turn >= 4"}, silent, 4, "until"},
		{"until everyone decided", []string{"    max_turns: 30", "    max_turns: 30\n    until: len(undecided) == 0"}, decideSecond(), 6, "until"},
		{"max_turns", []string{"    max_turns: 30", "    max_turns: 5"}, silent, 5, "max_turns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := variant(t, panelSpec, tt.pairs...)
			o := execute(t, plan, scripted(t, plan, tt.script), flags{Seed: 1}).must(t)
			ends := o.ends(t)
			if len(ends) != 2 {
				t.Fatalf("%d conversations, want 2", len(ends))
			}
			for _, e := range ends {
				if e.Turns != tt.turns || e.Reason != tt.reason {
					t.Errorf("ended after %d turns by %q, want %d by %q", e.Turns, e.Reason, tt.turns, tt.reason)
				}
			}
			if n := o.srv.Count(); n != 2*tt.turns {
				t.Errorf("%d calls, want %d", n, 2*tt.turns)
			}
		})
	}
}
