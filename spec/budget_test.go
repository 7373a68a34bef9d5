package spec

import (
	"encoding/json"
	"testing"

	"github.com/debate-runner/runner/spec/syntax"
)

// TestBudgetPlanJSON: the run-time budget is what run.json holds under
// "budget"; runs recorded before it replaced result.Budget must read the
// same, so its JSON stays flat limits plus "nodes".
func TestBudgetPlanJSON(t *testing.T) {
	cost, calls := 5.0, 3
	var tokens int64 = 2000000
	b := BudgetPlan{
		BudgetLimits: syntax.BudgetLimits{MaxCost: &cost, MaxTokens: &tokens},
		Nodes:        map[string]syntax.BudgetLimits{"critique": {MaxCalls: &calls}},
	}
	data, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"max_cost":5,"max_tokens":2000000,"nodes":{"critique":{"max_calls":3}}}`
	if string(data) != want {
		t.Errorf("json: %s\nwant   %s", data, want)
	}
	var back BudgetPlan
	if err := json.Unmarshal([]byte(want), &back); err != nil {
		t.Fatal(err)
	}
	if back.MaxCost == nil || *back.MaxCost != cost || back.MaxCalls != nil || *back.Nodes["critique"].MaxCalls != calls {
		t.Errorf("read back %+v", back)
	}
	if empty, _ := json.Marshal(BudgetPlan{}); string(empty) != `{}` {
		t.Errorf("an empty budget is %s, want {}", empty)
	}
}
