package runtime

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/debate-runner/runner/spec/syntax"
	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/spec"
)

// frame is the scope of the flow being walked.
type frame struct {
	scope kit.Scope
	// it is the concurrent foreach iteration the frame is in, or nil.
	it *iteration
}

func (f *frame) with(name string, value any, counter int, keyPart string) *frame {
	loop := map[string]any{}
	for k, v := range f.scope.Loop {
		loop[k] = v
	}
	loop[name] = value
	counters := make(map[string]int, len(f.scope.Counters)+1)
	for k, v := range f.scope.Counters {
		counters[k] = v
	}
	counters[name] = counter
	s := f.scope
	s.Loop = loop
	s.Counters = counters
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
			if s.MaxBound > 0 && n > s.MaxBound {
				return fmt.Errorf("%s: loop max (%s) gave %d, above its declared maximum %d", posString(r.Plan, s.Pos), s.MaxExpr.Source, n, s.MaxBound)
			}
			max = n
		}
		obs := r.observer()
		n, span := obs.loop(s, max)
		for i := 1; i <= n; i++ {
			if err := r.countIteration(s); err != nil {
				return err
			}
			inner := f.with(s.As, i, i, fmt.Sprintf("%s=%d", s.As, i))
			inner.scope.Round = i
			broke, err := r.runBody(ctx, s, i, inner)
			if err != nil {
				span.iterated(i, err)
				return err
			}
			span.iterated(i, nil)
			if broke {
				_ = r.event(event.LoopEnded, s.Path, map[string]any{"as": s.As, "iteration": i, "reason": "break"})
				return nil
			}
			if s.Until == nil {
				continue
			}
			stop, err := obs.until(s, i, max, func() (any, error) { return evalProgram(s.Until, r.envIn(inner)) })
			if err != nil {
				return err
			}
			if stop {
				_ = r.event(event.LoopEnded, s.Path, map[string]any{"as": s.As, "iteration": i, "reason": "until"})
				return nil
			}
		}
		_ = r.event(event.LoopEnded, s.Path, map[string]any{"as": s.As, "iteration": n, "reason": "max"})
		return nil
	case spec.StepForeach:
		obs := r.observer()
		v, err := evalProgram(s.In, r.envIn(f))
		var items []any
		if err == nil {
			items, err = toList(v)
		}
		if items, err = obs.foreach(s, items, err); err != nil {
			return err
		}
		scopes := make([]*frame, len(items))
		for i, item := range items {
			key := fmt.Sprintf("%s=%d", s.As, i+1)
			if g, ok := item.(value.GoalView); ok {
				key = fmt.Sprintf("%s=%s", s.As, g.ID)
			}
			inner := f.with(s.As, item, i+1, key)
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
		span := obs.items(s, len(items))
		for i, inner := range scopes {
			if err := r.countIteration(s); err != nil {
				return err
			}
			_ = r.event(event.ForeachItem, s.Path, map[string]any{"as": s.As, "index": i + 1, "scope": inner.scope.Key})
			if err := r.runSteps(ctx, s.Do, inner); err != nil {
				span.iterated(i+1, err)
				return err
			}
			span.iterated(i+1, nil)
		}
		return nil
	case spec.StepIf:
		taken, err := r.observer().branches(s, func() (any, error) { return evalProgram(s.Cond, r.envIn(f)) })
		if err != nil {
			return err
		}
		for _, do := range taken {
			steps := s.Else
			if do {
				steps = s.Do
			}
			if err := r.runSteps(ctx, steps, f); err != nil {
				return err
			}
		}
		return nil
	}
	return nil
}

// runBody runs iteration i of a loop's body; with a break, it checks the
// break after each step and says whether it ended the loop there.
func (r *Run) runBody(ctx context.Context, s *spec.FlowStep, i int, inner *frame) (bool, error) {
	if s.Break == nil {
		return false, r.runSteps(ctx, s.Do, inner)
	}
	obs := r.observer()
	for _, step := range s.Do {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if err := r.runStep(ctx, step, inner); err != nil {
			return false, err
		}
		stop, err := obs.breaks(s, i, func() (any, error) { return evalProgram(s.Break, r.envIn(inner)) })
		if err != nil || stop {
			return stop, err
		}
	}
	return false, nil
}

// countIteration counts an iteration of a loop or foreach against the
// run's bound on evaluations (budget.max_evaluations): a loop whose
// iterations execute no node (an if that skips them) is bounded too, and
// stops the run as a spent budget does.
func (r *Run) countIteration(s *spec.FlowStep) error {
	r.mu.Lock()
	r.iterations++
	n := r.iterations
	r.mu.Unlock()
	limit := r.Plan.Budget.Evaluations()
	if s.LeastEvaluations > limit {
		return &calls.BudgetError{Key: fmt.Sprintf("the loop at %s: its %d evaluations at the least (max %d, no until)", posString(r.Plan, s.Pos), s.LeastEvaluations, s.MaxConst), Scope: "run", Limit: "max_evaluations",
			Max: float64(limit), Spent: float64(min(n-1, limit)), Next: float64(s.LeastEvaluations), Of: "loop and foreach iterations"}
	}
	if n > limit {
		return &calls.BudgetError{Key: "the " + stepWord(s) + " at " + posString(r.Plan, s.Pos) + ": its next iteration", Scope: "run", Limit: "max_evaluations",
			Max: float64(limit), Spent: float64(limit), Next: 1, Of: "loop and foreach iterations"}
	}
	return nil
}

// stepWord names a step's kind as the spec writes it.
func stepWord(s *spec.FlowStep) string {
	switch s.Kind {
	case spec.StepLoop:
		return "loop"
	case spec.StepForeach:
		return "foreach"
	case spec.StepIf:
		return "if"
	}
	return "node"
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
		return value.NodeResult{}, &calls.BudgetError{Key: fmt.Sprintf("node %q", node.ID), Scope: "run", Limit: "max_evaluations", Max: float64(limit), Spent: float64(limit), Next: 1, Of: "nodes"}
	}
	scopeKey := f.scope.Key
	if occ > 1 {
		scopeKey = fmt.Sprintf("%s#%d", scopeKey, occ)
	}
	h := &host{run: r, node: node, scope: f.scope, prefix: node.ID + "/" + scopeKey, frame: f, ctx: ctx}
	watch := r.observer().node(node, h)
	if err := r.event(event.NodeStarted, h.prefix, map[string]any{"node": node.ID, "kind": node.Kind, "scope": f.scope.Key}); err != nil {
		return value.NodeResult{}, err
	}
	var res value.NodeResult
	if node, err = r.withRecruits(node); err != nil {
		node = h.node
	} else {
		h.node = node
		res, err = exec.Execute(ctx, h, node)
	}
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
	res, err = watch.ended(ctx, res, err)
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
	res.Ran = true
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
		Messages: r.messagesSoFar(), Round: s.Round, Goal: s.Goal, Loop: s.Loop, Loops: s.Counters,
		Extra: map[string]any{"goal_verdicts": r.hist.GoalVerdicts(), "latest": r.hist.Latest},
		Seed:  r.seed,
	}
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
