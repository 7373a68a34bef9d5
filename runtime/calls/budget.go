package calls

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/llm"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
)

// Spend is what calls spent: how many, their prompt and completion tokens,
// and their cost from the models' prices.
type Spend struct {
	Calls  int
	Tokens int64
	Cost   float64
}

// Plus is s and o added up.
func (s Spend) Plus(o Spend) Spend {
	return Spend{Calls: s.Calls + o.Calls, Tokens: s.Tokens + o.Tokens, Cost: s.Cost + o.Cost}
}

func (s Spend) minus(o Spend) Spend {
	return Spend{Calls: s.Calls - o.Calls, Tokens: s.Tokens - o.Tokens, Cost: s.Cost - o.Cost}
}

// Budget is what a run may spend, in all and per node, and what it spent:
// the calls its endpoints answered, in this attempt and the earlier ones it
// resumes. Replies from its journal, a recording or the cache cost nothing
// more. It is safe for concurrent use.
type Budget struct {
	spec.BudgetPlan

	mu       sync.Mutex
	spent    Spend
	byNode   map[string]Spend
	reserved Spend
	resNode  map[string]Spend
}

// Add counts what calls of node spent (an earlier attempt's, on resume).
func (b *Budget) Add(node string, s Spend) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.spent = b.spent.Plus(s)
	if b.byNode == nil {
		b.byNode = map[string]Spend{}
	}
	b.byNode[node] = b.byNode[node].Plus(s)
}

// Spent is what the run has spent so far.
func (b *Budget) Spent() Spend {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent
}

// BudgetError is a call that was not made because it could pass a limit.
type BudgetError struct {
	Key string
	// Scope is "run" or "node NAME"; Limit is max_cost, max_calls or
	// max_tokens; Max is the limit and Spent what was spent when the call
	// was stopped, with Next the call's own estimate.
	Scope, Limit     string
	Max, Spent, Next float64
	// Of is what max_evaluations counted ("nodes", "loop and foreach
	// iterations"); Key then names what was not begun.
	Of string
}

func (e *BudgetError) Error() string {
	if e.Limit == "max_evaluations" {
		return fmt.Sprintf("budget: %s was not begun: the run has executed %s %s, the most budget.max_evaluations allows (default %d): a loop that runs away (a large max, an until that never holds)? Raise the bound in the spec if the run needs more, and resume with --spec",
			e.Key, num(e.Max), e.Of, spec.DefaultMaxEvaluations)
	}
	if e.Limit == "max_tool_calls" {
		who := e.Scope
		if who == "run" {
			who = "the run"
		}
		return fmt.Sprintf("budget: tool call %s was not made: %s has made the %s tool calls its max_tool_calls allows",
			e.Key, who, num(e.Max))
	}
	what := map[string]string{"max_calls": "calls", "max_tokens": "tokens", "max_cost": "cost"}[e.Limit]
	return fmt.Sprintf("budget: model call %s was not made: with it the %s's %s would pass %s %s (spent so far %s, this call up to %s)",
		e.Key, strings.TrimPrefix(e.Scope, "node "), what, e.Limit, num(e.Max), num(e.Spent), num(e.Next))
}

func (e *BudgetError) ExitCode() int { return exitcode.Budget }

// Flag is the --budget flag that raises the limit the call stopped at.
func (e *BudgetError) Flag() string {
	if e.Limit == "max_evaluations" {
		return "--spec FIXED.yaml (budget.max_evaluations raised)"
	}
	name := map[string]string{"max_calls": "calls", "max_tokens": "tokens", "max_cost": "cost", "max_tool_calls": "tool_calls"}[e.Limit]
	if node, ok := strings.CutPrefix(e.Scope, "node "); ok {
		name = node + "." + name
	}
	return "--budget " + name + "=N"
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// Estimate is what a call may spend at most, before it is sent: one call,
// its prompt (estimated from its size) and its reply at its token limit
// (or llm.DefaultCompletionEstimate), priced at its model's prices.
func Estimate(c *Call) Spend {
	prompt := int64(llm.EstimatePromptTokens(&c.Request))
	completion := int64(c.Request.MaxTokens)
	if completion <= 0 {
		completion = llm.DefaultCompletionEstimate
	}
	return Spend{Calls: 1, Tokens: prompt + completion, Cost: price(c, prompt, completion)}
}

// Actual is what a call spent, from its reply's usage: the prompt tokens
// the provider served from its prompt cache at the model's cached_prompt
// price, as the report and result.json count them.
func Actual(c *Call, rep kit.Reply) Spend {
	p, q := int64(rep.PromptTokens), int64(rep.CompletionTokens)
	cost := 0.0
	if c.Model != nil && c.Model.Price != nil {
		cost = c.Model.Price.CostWritten(rep.PromptTokens, rep.CachedTokens, rep.CacheWriteTokens, rep.CompletionTokens) * rep.PriceFactor()
	}
	return Spend{Calls: 1, Tokens: p + q, Cost: cost}
}

// price is what a call of these token counts may cost, none of its prompt
// served from a cache (an estimate cannot know what will be) and, on a
// model that places cache breakpoints, all of it written to the cache when
// a write costs more than the prompt price.
func price(c *Call, prompt, completion int64) float64 {
	if c.Model == nil || c.Model.Price == nil {
		return 0
	}
	written := 0
	if p := c.Model.Price; c.Model.CacheBreakpoints && p.CacheWrite != nil && *p.CacheWrite > p.Prompt {
		written = int(prompt)
	}
	return c.Model.Price.CostWritten(int(prompt), 0, written, int(completion))
}

// admit reserves a call's estimate, or says which limit it could pass.
func (b *Budget) admit(c *Call, est Spend) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := check(c.Key, "run", b.BudgetLimits, b.spent.Plus(b.reserved), est); err != nil {
		return err
	}
	if l, ok := b.Nodes[c.Node]; ok {
		if err := check(c.Key, "node "+c.Node, l, b.byNode[c.Node].Plus(b.resNode[c.Node]), est); err != nil {
			return err
		}
	}
	b.reserved = b.reserved.Plus(est)
	if b.resNode == nil {
		b.resNode = map[string]Spend{}
	}
	b.resNode[c.Node] = b.resNode[c.Node].Plus(est)
	return nil
}

// settle replaces a call's reservation by what it spent.
func (b *Budget) settle(c *Call, est, actual Spend) {
	b.mu.Lock()
	b.reserved = b.reserved.minus(est)
	b.resNode[c.Node] = b.resNode[c.Node].minus(est)
	b.mu.Unlock()
	b.Add(c.Node, actual)
}

func check(key, scope string, l syntax.BudgetLimits, spent, next Spend) error {
	switch {
	case l.MaxCalls != nil && spent.Calls+next.Calls > *l.MaxCalls:
		return &BudgetError{Key: key, Scope: scope, Limit: "max_calls", Max: float64(*l.MaxCalls), Spent: float64(spent.Calls), Next: float64(next.Calls)}
	case l.MaxTokens != nil && spent.Tokens+next.Tokens > *l.MaxTokens:
		return &BudgetError{Key: key, Scope: scope, Limit: "max_tokens", Max: float64(*l.MaxTokens), Spent: float64(spent.Tokens), Next: float64(next.Tokens)}
	case l.MaxCost != nil && spent.Cost+next.Cost > *l.MaxCost:
		return &BudgetError{Key: key, Scope: scope, Limit: "max_cost", Max: *l.MaxCost, Spent: spent.Cost, Next: next.Cost}
	}
	return nil
}

// Limited hands a call on only when its estimate fits every limit of b,
// and counts what the endpoint's reply spent. A call that does not fit
// fails with a *BudgetError and is not sent. Compose it just before the
// network, so that replies that cost nothing (journal, recording, cache)
// never meet it. A nil b limits nothing.
func Limited(b *Budget, next Stage) Stage {
	if b == nil {
		return next
	}
	return StageFunc(func(ctx context.Context, c *Call) (kit.Reply, Source, error) {
		est := Estimate(c)
		if err := b.admit(c, est); err != nil {
			return kit.Reply{}, Network, err
		}
		callCtx, stop := shield(ctx)
		rep, src, err := next.Complete(callCtx, c)
		stop()
		actual := Spend{}
		if err == nil && src == Network {
			actual = Actual(c, rep)
		}
		b.settle(c, est, actual)
		return rep, src, err
	})
}

type rootKey struct{}

// WithRoot marks ctx as the run's own context: its cancellation (Ctrl-C)
// stops every call at once, even one that a budget stop elsewhere let go
// on (see Limited).
func WithRoot(ctx context.Context) context.Context {
	return context.WithValue(ctx, rootKey{}, ctx)
}

// shield is the context an admitted call is sent with. When a sibling call
// stops at the budget, kit.Parallel cancels the calls running beside it;
// but those were admitted within the budget and may already be paid for,
// so they finish and are journaled rather than be lost and asked again on
// resume. Any other cancellation, and the run's own (WithRoot), stops them.
func shield(ctx context.Context) (context.Context, func()) {
	out, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stops := []func() bool{context.AfterFunc(ctx, func() {
		var be *BudgetError
		if cause := context.Cause(ctx); !errors.As(cause, &be) {
			cancel(cause)
		}
	})}
	if root, ok := ctx.Value(rootKey{}).(context.Context); ok {
		stops = append(stops, context.AfterFunc(root, func() { cancel(context.Cause(root)) }))
	}
	return out, func() {
		for _, stop := range stops {
			stop()
		}
		cancel(nil)
	}
}
