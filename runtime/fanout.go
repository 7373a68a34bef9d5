package runtime

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/value"
)

// A concurrent foreach (concurrency > 1) runs up to that many iterations at
// once. So that what it asks and records cannot depend on which iteration
// finishes first:
//   - an iteration sees the run as it was when the foreach began plus what
//     it recorded itself: its own messages in the history, its own nodes'
//     results under nodes.ID; never another iteration's;
//   - what an iteration records is held until every iteration has
//     finished, then recorded in the run in item order (message ids, the
//     history, node results: the last item's stand, as one after the other);
//   - call keys carry the item's index (or goal id), as they always do.
//
// The first iteration to fail stops the foreach: iterations not yet begun
// are not begun, and those running make no new call (errStopped); the calls
// they have in flight finish, since they are paid for, and their replies
// are journaled. The run fails with the first failed iteration's error.
// Nothing of the iterations is recorded then, but a resume asks none of
// the calls answered again.
//
// A dry run and an embedded run (Temporal, which may not start goroutines)
// run the iterations one after the other, each seeing what it would see
// when run concurrently. A concurrent foreach inside an iteration of
// another is that iteration's: its iterations see the outer iteration's
// view, and what they record is held by the outer iteration.

// iteration is one iteration of a concurrent foreach.
type iteration struct {
	run *Run
	// parent is the iteration of an enclosing concurrent foreach, or nil.
	parent *iteration
	// key is the iteration's scope key (thread keys take it).
	key string
	// base are the messages the iteration saw when the foreach began.
	base []value.Message

	mu sync.Mutex
	// held are the messages the iteration recorded, with provisional ids,
	// and view is base followed by them.
	held, view []value.Message
	// results are the results the iteration saw when the foreach began
	// with its own; replaced, never changed (as Run.results). own are the
	// ids of the iteration's nodes, in the order they first finished.
	results map[string]value.NodeResult
	own     []string
	// pending are the summaries made for the iteration's prompts (see
	// Run.pendingSummaries).
	pending []value.Message
	// stop is set, for every iteration of the foreach, once one failed.
	stop *atomic.Bool
}

// errStopped ends an iteration of a concurrent foreach that another
// iteration's failure stopped, before its next call.
var errStopped = errors.New("stopped: another iteration of the foreach failed")

// stopped returns errStopped once the iteration's foreach, or one it is
// in, was stopped.
func (it *iteration) stopped() error {
	for ; it != nil; it = it.parent {
		if it.stop.Load() {
			return errStopped
		}
	}
	return nil
}

// iteration returns the concurrent foreach iteration a node runs in, or nil.
func (h *host) iteration() *iteration {
	if h.frame == nil {
		return nil
	}
	return h.frame.it
}

// messages are what the iteration sees of the run's messages; the slice is
// shared, capped so that appending to it copies.
func (it *iteration) messages() []value.Message {
	it.mu.Lock()
	defer it.mu.Unlock()
	if len(it.held) == 0 {
		return it.base
	}
	return it.view[:len(it.view):len(it.view)]
}

// diverged says whether the iteration sees messages the run's history does
// not hold (its own, or an enclosing iteration's).
func (it *iteration) diverged() bool {
	for ; it != nil; it = it.parent {
		it.mu.Lock()
		n := len(it.held)
		it.mu.Unlock()
		if n > 0 {
			return true
		}
	}
	return false
}

// seen is history.Store.Seen for the iteration: the agent's view of the
// run when the foreach began followed by the iteration's messages it may
// see, and its inbox among them.
func (it *iteration) seen(agent string, round int, goal string) (history, inbox []*value.Message) {
	if it.parent != nil {
		history, inbox = it.parent.seen(agent, round, goal)
	} else {
		history, inbox = it.run.hist.Seen(agent, round, goal)
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	var mine []*value.Message
	for i := range it.held {
		if Visible(it.held[i], agent) {
			m := it.held[i] // a copy: held's array moves as it grows
			mine = append(mine, &m)
		}
	}
	if len(mine) == 0 {
		return history, inbox
	}
	history = append(history[:len(history):len(history)], mine...)
	for _, m := range mine {
		if m.To == agent && m.Goal == goal && m.Round == round {
			inbox = append(inbox[:len(inbox):len(inbox)], m)
		}
	}
	return history, inbox
}

// hold keeps messages the iteration recorded, giving each a provisional id
// (the one it would have if the iteration ran alone), replaced by its
// final one when the foreach records them.
func (it *iteration) hold(msgs []value.Message) []value.Message {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.view == nil {
		it.view = it.base
	}
	out := make([]value.Message, len(msgs))
	for i, m := range msgs {
		m.ID = "m" + strconv.Itoa(len(it.view)+1)
		it.held = append(it.held, m)
		it.view = append(it.view, m)
		out[i] = m
	}
	return out
}

// nodes are the node results the iteration sees.
func (it *iteration) nodes() map[string]value.NodeResult {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.results
}

func (it *iteration) setResult(node string, res value.NodeResult) {
	it.mu.Lock()
	defer it.mu.Unlock()
	results := make(map[string]value.NodeResult, len(it.results)+1)
	for k, v := range it.results {
		results[k] = v
	}
	if !slices.Contains(it.own, node) {
		it.own = append(it.own, node)
	}
	res.Ran = true
	results[node] = res
	it.results = results
}

// env is Run.env inside the iteration.
func (it *iteration) env(s kit.Scope) *spec.Env {
	r := it.run
	msgs := it.messages()
	env := r.env(s)
	env.Nodes, env.Messages = it.nodes(), msgs
	if it.diverged() {
		// The history's indexes hold the run's messages only.
		env.Extra = map[string]any{
			"goal_verdicts": goalVerdicts(r.Plan, msgs),
			"latest":        (&spec.Env{Messages: msgs}).Map()["latest"],
		}
	}
	return env
}

// envIn is the expression environment where a frame stands.
func (r *Run) envIn(f *frame) *spec.Env {
	if f.it != nil {
		return f.it.env(f.scope)
	}
	return r.env(f.scope)
}

// fanOut runs a concurrent foreach (see the comment at the top of this
// file) in frame f; scopes are the iterations' frames, in item order.
func (r *Run) fanOut(ctx context.Context, s *spec.FlowStep, f *frame, scopes []*frame) error {
	var base []value.Message
	var results map[string]value.NodeResult
	if f.it != nil {
		base, results = f.it.messages(), f.it.nodes()
	} else {
		r.mu.Lock()
		base, results = r.messagesSoFar(), r.results
		r.mu.Unlock()
	}
	stop := new(atomic.Bool)
	its := make([]*iteration, len(scopes))
	for i, sc := range scopes {
		its[i] = &iteration{run: r, parent: f.it, key: sc.scope.Key, base: base, results: results, stop: stop}
		sc.it = its[i]
	}
	var err error
	if r.observer().oneByOne() || r.emb != nil {
		err = r.fanOneByOne(ctx, s, scopes)
	} else {
		err = r.fanConcurrently(ctx, s, scopes)
	}
	if err != nil {
		return err
	}
	for _, it := range its {
		it.commit()
	}
	return nil
}

// fanOneByOne runs the iterations of a concurrent foreach one after the
// other; a dry run cut short by its call budget extrapolates the rest.
func (r *Run) fanOneByOne(ctx context.Context, s *spec.FlowStep, scopes []*frame) error {
	span := r.observer().items(s, len(scopes))
	for i, f := range scopes {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := r.countIteration(s); err != nil {
			return err
		}
		_ = r.event(event.ForeachItem, s.Path, map[string]any{"as": s.As, "index": i + 1, "scope": f.scope.Key})
		if err := r.runSteps(ctx, s.Do, f); err != nil {
			span.iterated(i+1, err)
			return err
		}
		span.iterated(i+1, nil)
	}
	return nil
}

// fanConcurrently runs up to s.Concurrency iterations at once.
func (r *Run) fanConcurrently(ctx context.Context, s *spec.FlowStep, scopes []*frame) error {
	stop := scopes[0].it.stop
	errs := make([]error, len(scopes))
	var failed sync.Once
	first := -1
	sem := make(chan struct{}, s.Concurrency)
	var wg sync.WaitGroup
	for i, f := range scopes {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil || stop.Load() {
			break
		}
		if err := r.countIteration(s); err != nil {
			errs[i] = err
			failed.Do(func() {
				first = i
				stop.Store(true)
			})
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_ = r.event(event.ForeachItem, s.Path, map[string]any{"as": s.As, "index": i + 1, "scope": f.scope.Key, "concurrent": true})
			if err := r.runSteps(ctx, s.Do, f); err != nil && !errors.Is(err, errStopped) {
				errs[i] = err
				failed.Do(func() {
					first = i
					stop.Store(true)
				})
			}
		}()
	}
	wg.Wait()
	if first >= 0 {
		if errors.Is(errs[first], kit.ErrWaiting) || ctx.Err() != nil {
			// Waiting for answers, or interrupted: nothing failed.
			return errs[first]
		}
		r.warn("foreach at %s: iteration %d (%s) failed, so the other iterations were stopped before their next call and none was recorded; a resume asks none of the calls answered again", posString(r.Plan, s.Pos), first+1, scopes[first].scope.Key)
		return errs[first]
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := scopes[0].it.parent.stopped(); err != nil {
		return err
	}
	return nil
}

// commit records what an iteration held, in the run or in the enclosing
// iteration: its messages get their ids there, and its nodes' results take
// them.
func (it *iteration) commit() {
	var final []value.Message
	if it.parent != nil {
		final = it.parent.hold(it.held)
	} else {
		final = it.run.appendMessages(it.held, nil)
	}
	ids := make(map[string]string, len(final))
	for i, m := range final {
		ids[it.held[i].ID] = m.ID
	}
	if it.parent == nil && len(it.pending) > 0 {
		it.run.mu.Lock()
		it.run.pendingSummaries = append(it.run.pendingSummaries, it.pending...)
		it.run.mu.Unlock()
	} else if len(it.pending) > 0 {
		it.parent.mu.Lock()
		it.parent.pending = append(it.parent.pending, it.pending...)
		it.parent.mu.Unlock()
	}
	for _, node := range it.own {
		res := it.results[node]
		if len(res.Messages) > 0 {
			ms := make([]value.Message, len(res.Messages))
			for i, m := range res.Messages {
				if id, ok := ids[m.ID]; ok {
					m.ID = id
				}
				ms[i] = m
			}
			res.Messages = ms
		}
		if it.parent != nil {
			it.parent.setResult(node, res)
		} else {
			it.run.setResult(node, res)
		}
	}
}
