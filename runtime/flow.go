package runtime

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"
	"github.com/expr-lang/expr/vm"
)

// frame is the scope of the flow being walked.
type frame struct {
	scope kit.Scope
	// it is the concurrent foreach iteration the frame is in, or nil.
	it *iteration
}

func (f *frame) with(name string, value any, keyPart string) *frame {
	loop := map[string]any{}
	for k, v := range f.scope.Loop {
		loop[k] = v
	}
	loop[name] = value
	s := f.scope
	s.Loop = loop
	if f.scope.Key == "-" || f.scope.Key == "" {
		s.Key = keyPart
	} else {
		s.Key = f.scope.Key + "/" + keyPart
	}
	return &frame{scope: s, it: f.it}
}

func (r *Run) runSteps(ctx context.Context, steps []*spec.FlowStep, f *frame) error {
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := r.runStep(ctx, s, f); err != nil {
			return err
		}
	}
	return nil
}

func (r *Run) runStep(ctx context.Context, s *spec.FlowStep, f *frame) error {
	switch s.Kind {
	case spec.StepNode:
		_, err := r.runNode(ctx, s.Node, f)
		return err
	case spec.StepLoop:
		max := s.MaxConst
		if s.MaxExpr != nil {
			v, err := evalProgram(s.MaxExpr, r.envIn(f))
			if err != nil {
				return fmt.Errorf("%s: loop max (%s): %w", posString(r.Plan, s.Pos), s.MaxExpr.Source, err)
			}
			n, ok := toInt(v)
			if !ok || n < 0 {
				return fmt.Errorf("%s: loop max (%s) gave %v, not a count", posString(r.Plan, s.Pos), s.MaxExpr.Source, v)
			}
			max = n
		}
		var start, done int64 // worst-case calls when the loop began, and after its last whole iteration
		if r.dry != nil {
			start = r.dry.worst()
			done = start
		}
		for i := 1; i <= max; i++ {
			inner := f.with(s.As, i, fmt.Sprintf("%s=%d", s.As, i))
			inner.scope.Round = i
			if err := r.runSteps(ctx, s.Do, inner); err != nil {
				if r.dry != nil && errors.Is(err, errBudget) {
					r.dry.extrapolated.Add(extrapolate(start, done, r.dry.worst(), i, max))
				}
				return err
			}
			if r.dry != nil {
				done = r.dry.worst()
			}
			if s.Until != nil && r.dry != nil {
				if _, err := evalProgram(s.Until, r.envIn(inner)); err != nil {
					r.dry.note("%s: loop until (%s) cannot be evaluated on stand-in replies (%v)", posString(r.Plan, s.Pos), s.Until.Source, err)
				}
				r.dry.note("the loop at %s counts all %d iterations; until (%s) may end it earlier", posString(r.Plan, s.Pos), max, s.Until.Source)
			} else if s.Until != nil {
				v, err := evalProgram(s.Until, r.envIn(inner))
				if err != nil {
					return fmt.Errorf("%s: loop until (%s): %w", posString(r.Plan, s.Pos), s.Until.Source, err)
				}
				if b, _ := v.(bool); b {
					_ = r.event(event.LoopEnded, s.Path, map[string]any{"as": s.As, "iteration": i, "reason": "until"})
					return nil
				}
			}
		}
		_ = r.event(event.LoopEnded, s.Path, map[string]any{"as": s.As, "iteration": max, "reason": "max"})
		return nil
	case spec.StepForeach:
		v, err := evalProgram(s.In, r.envIn(f))
		var items []any
		if err == nil {
			items, err = toList(v)
		}
		if err != nil && r.dry != nil {
			r.dry.note("foreach at %s: its list (%s) is not known before the run (%v); counted once", posString(r.Plan, s.Pos), s.In.Source, err)
			items, err = []any{nil}, nil
		}
		if err != nil {
			return fmt.Errorf("%s: foreach in (%s): %w", posString(r.Plan, s.Pos), s.In.Source, err)
		}
		scopes := make([]*frame, len(items))
		for i, item := range items {
			key := fmt.Sprintf("%s=%d", s.As, i+1)
			if g, ok := item.(value.GoalView); ok {
				key = fmt.Sprintf("%s=%s", s.As, g.ID)
			}
			inner := f.with(s.As, item, key)
			inner.scope.Item = item
			if g, ok := item.(value.GoalView); ok {
				inner.scope.Goal = g
				inner.scope.Round = 0
			}
			scopes[i] = inner
		}
		if s.Concurrency > 1 && len(items) > 1 {
			return r.fanOut(ctx, s, f, scopes)
		}
		var start, done int64 // worst-case calls when the foreach began, and after its last whole iteration
		if r.dry != nil {
			start = r.dry.worst()
			done = start
		}
		for i, inner := range scopes {
			_ = r.event(event.ForeachItem, s.Path, map[string]any{"as": s.As, "index": i + 1, "scope": inner.scope.Key})
			if err := r.runSteps(ctx, s.Do, inner); err != nil {
				if r.dry != nil && errors.Is(err, errBudget) {
					r.dry.extrapolated.Add(extrapolate(start, done, r.dry.worst(), i+1, len(items)))
				}
				return err
			}
			if r.dry != nil {
				done = r.dry.worst()
			}
		}
		return nil
	case spec.StepIf:
		if r.dry != nil && s.Cond.ReadsRun {
			// What the replies would decide: the worst case takes both.
			r.dry.note("if at %s (%s) depends on replies; both branches are counted", posString(r.Plan, s.Pos), s.Cond.Source)
			if err := r.runSteps(ctx, s.Do, f); err != nil {
				return err
			}
			return r.runSteps(ctx, s.Else, f)
		}
		v, err := evalProgram(s.Cond, r.envIn(f))
		if err != nil {
			return fmt.Errorf("%s: if (%s): %w", posString(r.Plan, s.Pos), s.Cond.Source, err)
		}
		if b, _ := v.(bool); b {
			return r.runSteps(ctx, s.Do, f)
		}
		return r.runSteps(ctx, s.Else, f)
	}
	return nil
}

// execNode executes one node in a scope and stores its result.
func (r *Run) execNode(ctx context.Context, node *spec.NodePlan, f *frame) (value.NodeResult, error) {
	exec, err := kit.Of(node)
	if err != nil {
		return value.NodeResult{}, err
	}
	r.mu.Lock()
	occKey := node.ID + "/" + f.scope.Key
	r.occurrences[occKey]++
	occ := r.occurrences[occKey]
	r.evaluations++
	evals := r.evaluations
	r.mu.Unlock()
	if limit := r.Plan.Budget.Evaluations(); evals > limit {
		return value.NodeResult{}, fmt.Errorf("node %q: the run has executed %d nodes, the most budget.max_evaluations allows (default %d): a loop that runs away (a large max, an until that never holds)? Raise the bound in the spec if the run needs more, and resume with --spec",
			node.ID, limit, spec.DefaultMaxEvaluations)
	}
	scopeKey := f.scope.Key
	if occ > 1 {
		scopeKey = fmt.Sprintf("%s#%d", scopeKey, occ)
	}
	h := &host{run: r, node: node, scope: f.scope, prefix: node.ID + "/" + scopeKey, frame: f, ctx: ctx}
	tb, turnBounded := node.Config.(kit.TurnBounded)
	if r.dry != nil && turnBounded {
		w := r.dry.worst()
		h.turns = &dryTurns{start: w, done: w}
	}
	if err := r.event(event.NodeStarted, h.prefix, map[string]any{"node": node.ID, "kind": node.Kind, "scope": f.scope.Key}); err != nil {
		return value.NodeResult{}, err
	}
	res, err := exec.Execute(ctx, h, node)
	if err == nil && res.Calls > 0 {
		// The next call waits for the node's replies to be durable (see
		// syncedEvents): their fsync starts now, while the run records
		// the node's result and renders the next prompts. An error shows
		// again when that call waits.
		go func() { _ = r.durableForCall() }()
	}
	if err == nil {
		// Whatever the kind, an output JSON cannot hold fails the node
		// here, not the journal's write of node_finished.
		if err = spec.CheckFinite(nil, fmt.Sprintf("node %q: output", node.ID), res.Output); err != nil {
			err.(*spec.NonFiniteError).Pos = node.Pos
		}
	}
	if e := (*spec.NonFiniteError)(nil); errors.As(err, &e) && e.File == "" {
		e.File = r.Plan.Path
	}
	if h.turns != nil && errors.Is(err, errBudget) {
		// Cut short by the call budget: the turns left are counted at
		// the pace of those taken.
		r.dry.extrapolated.Add(h.turns.extrapolated(r.dry.worst(), tb.TurnBound()))
	}
	if err != nil && r.dry != nil && !errors.Is(err, errBudget) && !errors.Is(err, spec.ErrRunaway) && ctx.Err() == nil && !isRenderError(err) {
		// Stand-in replies can fail a check no real reply would (a rule on
		// the content, say); the worst case goes on without the node's
		// result.
		r.dry.note("node %q did not finish on stand-in replies (%v); its calls so far are counted", node.ID, firstLineOf(err))
		return value.NodeResult{}, nil
	}
	if err != nil {
		if !errors.Is(err, kit.ErrWaiting) {
			_ = r.event(event.NodeFailed, h.prefix, map[string]any{"node": node.ID, "error": err.Error()})
		}
		return res, err
	}
	if f.it != nil {
		f.it.setResult(node.ID, res)
	} else {
		r.setResult(node.ID, res)
	}
	fin := map[string]any{"node": node.ID, "calls": res.Calls, "messages": len(res.Messages)}
	if n := len(res.Messages); n == 0 || !reflect.DeepEqual(res.Output, res.Messages[n-1].Output) {
		// Otherwise the output is the last message's, already journaled.
		fin["output"] = res.Output
	}
	err = r.event(event.NodeFinished, h.prefix, fin)
	return res, err
}

func posString(p *spec.Plan, pos syntax.Pos) string {
	return fmt.Sprintf("%s:%d:%d", p.Path, pos.Line, pos.Col)
}

// setResult stores a node's result in a new map: prompt data and
// expression environments taken earlier keep the map they were given.
func (r *Run) setResult(node string, res value.NodeResult) {
	r.mu.Lock()
	defer r.mu.Unlock()
	results := make(map[string]value.NodeResult, len(r.results)+1)
	for k, v := range r.results {
		results[k] = v
	}
	results[node] = res
	r.results = results
}

// env builds the expression environment at a scope. It shares the run's
// results and messages (see Run.messages). goal_verdicts and latest come
// from the history's indexes: Extra's latest takes the place of the one
// spec.Env.Map makes, which scans every message on each call.
func (r *Run) env(s kit.Scope) *spec.Env {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &spec.Env{
		Inputs: r.inputs, Vars: r.vars, Nodes: r.results, Goals: r.Plan.Goals, Verdicts: r.Plan.Verdicts,
		Messages: r.messagesSoFar(), Round: s.Round, Goal: s.Goal, Loop: s.Loop,
		Extra: map[string]any{"goal_verdicts": r.hist.GoalVerdicts(), "latest": r.hist.Latest},
	}
}

func evalProgram(p *spec.Program, env *spec.Env) (any, error) {
	v, err := vm.Run(p.Program, env.Map())
	if err != nil {
		return nil, errors.New(strings.SplitN(err.Error(), "\n", 2)[0])
	}
	return v, nil
}

func toInt(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int64:
		return int(x), true
	case float64:
		if x == float64(int(x)) {
			return int(x), true
		}
	}
	return 0, false
}

func toList(v any) ([]any, error) {
	switch x := v.(type) {
	case []any:
		return x, nil
	case []value.GoalView:
		out := make([]any, len(x))
		for i, g := range x {
			out[i] = g
		}
		return out, nil
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out, nil
	case nil:
		return nil, nil
	}
	return nil, fmt.Errorf("expected a list, got %T", v)
}

// extrapolate counts the calls of a loop's iterations a dry run did not
// simulate: cut short in iteration i of max, the loop had made done-start
// calls in its i-1 whole iterations and now-done in the one cut short. The
// iterations left go at the pace of the whole ones (or of the one cut
// short, when it was the first), less what the one cut short has made.
func extrapolate(start, done, now int64, i, max int) int64 {
	if i == 1 {
		return (now - start) * int64(max-1)
	}
	per := float64(done-start) / float64(i-1)
	left := per*float64(max-i+1) - float64(now-done)
	if left < 0 {
		return 0
	}
	return int64(left + 0.5)
}
