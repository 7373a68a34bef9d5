package args

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
)

// ApplyBudget applies --budget flags to a budget: cost=USD, calls=N,
// tokens=N for the whole run, NODE.cost=... for one node's calls. A value
// of 0 or "none" removes the limit. base is not changed.
func ApplyBudget(plan *spec.Plan, base *spec.BudgetPlan, flags []string) (*spec.BudgetPlan, error) {
	out := &spec.BudgetPlan{}
	if base != nil {
		out.BudgetLimits = base.BudgetLimits
		for id, l := range base.Nodes {
			if out.Nodes == nil {
				out.Nodes = map[string]syntax.BudgetLimits{}
			}
			out.Nodes[id] = l
		}
	}
	for _, f := range flags {
		name, value, ok := strings.Cut(f, "=")
		if !ok {
			return nil, &FlagError{Flag: "--budget", Err: fmt.Errorf("%q: write LIMIT=VALUE, with LIMIT cost, calls or tokens (or NODE.cost ...)", f)}
		}
		name = strings.TrimSpace(name)
		node, limit := "", name
		if i := strings.LastIndexByte(name, '.'); i >= 0 {
			node, limit = name[:i], name[i+1:]
			if plan != nil && plan.Nodes[node] == nil {
				return nil, &FlagError{Flag: "--budget", Err: fmt.Errorf("%q: the spec has no node %q", f, node)}
			}
		}
		l := out.BudgetLimits
		if node != "" {
			l = out.Nodes[node]
		}
		value = strings.TrimSpace(value)
		none := value == "none" || value == "0"
		switch limit {
		case "cost":
			v, err := strconv.ParseFloat(strings.TrimPrefix(value, "$"), 64)
			if err != nil && !none || v < 0 {
				return nil, &FlagError{Flag: "--budget", Err: fmt.Errorf("%q: cost is an amount such as 5 or 0.50", f)}
			}
			l.MaxCost = &v
			if none {
				l.MaxCost = nil
			}
		case "calls":
			v, err := strconv.Atoi(value)
			if err != nil && !none || v < 0 {
				return nil, &FlagError{Flag: "--budget", Err: fmt.Errorf("%q: calls is a whole number such as 500", f)}
			}
			l.MaxCalls = &v
			if none {
				l.MaxCalls = nil
			}
		case "tool_calls":
			v, err := strconv.Atoi(value)
			if err != nil && !none || v < 0 {
				return nil, &FlagError{Flag: "--budget", Err: fmt.Errorf("%q: tool_calls is a whole number such as 20", f)}
			}
			l.MaxToolCalls = &v
			if none {
				l.MaxToolCalls = nil
			}
		case "tokens":
			v, err := strconv.ParseFloat(value, 64)
			if err != nil && !none || v < 0 || v != float64(int64(v)) {
				return nil, &FlagError{Flag: "--budget", Err: fmt.Errorf("%q: tokens is a whole number such as 2000000 or 2e6", f)}
			}
			n := int64(v)
			l.MaxTokens = &n
			if none {
				l.MaxTokens = nil
			}
		default:
			return nil, &FlagError{Flag: "--budget", Err: fmt.Errorf("%q: %q is no limit; use cost, calls, tokens or tool_calls", f, limit)}
		}
		if node == "" {
			out.BudgetLimits = l
			continue
		}
		if out.Nodes == nil {
			out.Nodes = map[string]syntax.BudgetLimits{}
		}
		out.Nodes[node] = l
		if l == (syntax.BudgetLimits{}) {
			delete(out.Nodes, node)
		}
	}
	if out.BudgetLimits == (syntax.BudgetLimits{}) && len(out.Nodes) == 0 {
		return nil, nil
	}
	return out, nil
}

// Budget is the budget a run of plan gets: the spec's, with --budget
// flags applied (nil: no limits).
func Budget(plan *spec.Plan, flags []string) (*spec.BudgetPlan, error) {
	return ApplyBudget(plan, SpecBudget(plan.Budget), flags)
}

// SpecBudget is the spec's budget for the manifest (nil for no limits), a
// copy that --budget may change.
func SpecBudget(b spec.BudgetPlan) *spec.BudgetPlan {
	if b.Empty() {
		return nil
	}
	out := &spec.BudgetPlan{BudgetLimits: b.BudgetLimits}
	if len(b.Nodes) > 0 {
		out.Nodes = maps.Clone(b.Nodes)
	}
	return out
}
