package dynamics

import (
	"strings"
	"testing"

	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/runtime/sweep"
	"github.com/debate-runner/runner/spec/value"
)

// TestTextOfARun: the command prints result.json's dynamics as they are:
// the consensus and its turn, each agent's changes with their turns, and
// the whisper graph with its effect.
func TestTextOfARun(t *testing.T) {
	ms := []value.Message{
		{Node: "p", Turn: 1, From: "a", Verdict: "YES"},
		{Node: "p", Turn: 2, From: "b", Verdict: "NO"},
		{Node: "p", Turn: 3, From: "a", To: "b", Whisper: true},
		{Node: "p", Turn: 4, From: "b", Verdict: "YES"},
		{Node: "p", Turn: 5, From: "b", To: "a", Whisper: true, Verdict: "YES"},
		{Node: "p", Turn: 6, From: "a", Verdict: "YES"},
	}
	ds := result.Dynamics(ms)
	rep := &Report{Dir: "runs/x", Runs: 1, Threads: ds, Goals: sweep.SumDynamics([][]result.GoalDynamics{ds})}
	rep.Totals = total(rep.Goals)
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"consensus: YES, all 2, from turn 4", "b: 3 messages, final YES, 1 change (NO -> YES at turn 4)", "a -> b: 1, 1 changed, 1 adopted", "Consensus: 1 of 1 threads with verdicts (100 %)"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, b.String())
		}
	}
}
