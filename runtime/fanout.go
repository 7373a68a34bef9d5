package runtime

import (
	"context"
	"errors"
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
// A dry run, an embedded run (Temporal) and a foreach inside a concurrent
// iteration run their iterations one after the other.

// iteration is one iteration of a concurrent foreach.
type iteration struct {
	run *Run
	// key is the iteration's scope key (thread keys take it).
	key string
	// base are the run's messages when the foreach began.
	base []value.Message

	mu sync.Mutex
	// held are the messages the iteration recorded, with provisional ids,
	// and view is base followed by them.
	held, view []value.Message
	// results are the run's results when the foreach began with the
	// iteration's own; replaced, never changed (as Run.results). own are
	// the ids of the iteration's nodes, in the order they first finished.
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

// stopped returns errStopped once the iteration's foreach was stopped.
func (it *iteration) stopped() error {
	if it.stop.Load() {
		return errStopped
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

// seen is history.Store.Seen for the iteration: the agent's view of the
// run when the foreach began followed by the iteration's messages it may
// see, and its inbox among them.
func (it *iteration) seen(agent string, round int, goal string) (history, inbox []value.Message) {
	history, inbox = it.run.hist.Seen(agent, round, goal)
	it.mu.Lock()
	defer it.mu.Unlock()
	var mine []value.Message
	for i := range it.held {
		if Visible(it.held[i], agent) {
			mine = append(mine, it.held[i])
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
	if !contains(it.own, node) {
		it.own = append(it.own, node)
	}
	results[node] = res
	it.results = results
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// env is Run.env inside the iteration.
func (it *iteration) env(s kit.Scope) *spec.Env {
	r := it.run
	msgs := it.messages()
	nodes := it.nodes()
	env := r.env(s)
	env.Nodes, env.Messages = nodes, msgs
	it.mu.Lock()
	mine := len(it.held) > 0
	it.mu.Unlock()
	if mine {
		// The history's indexes hold the run's messages only.
		env.Extra = map[string]any{
			"goal_verdicts": goalVerdicts(r.Plan, msgs),
			"latest":        func(record string) []value.Message { return value.LatestPerAuthor(value.ByRecord(record, msgs)) },
		}
	}
	return env
}

// envIn is the expression environment where a frame stands.
func (r *Run) envIn(f *frame) *spec.Env {
	if f != nil && f.it != nil {
		return f.it.env(f.scope)
	}
	return r.env(f.scope)
}

// fanOut runs a foreach's iterations concurrently (see the comment at the
// top of this file); scopes are the iterations' frames, in item order.
func (r *Run) fanOut(ctx context.Context, s *spec.FlowStep, scopes []*frame) error {
	r.mu.Lock()
	base, results := r.messagesSoFar(), r.results
	r.mu.Unlock()
	stop := new(atomic.Bool)
	its := make([]*iteration, len(scopes))
	for i, f := range scopes {
		its[i] = &iteration{run: r, key: f.scope.Key, base: base, results: results, stop: stop}
		f.it = its[i]
	}
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
		err := errs[first]
		r.warn("foreach at %s: iteration %d (%s) failed, so the other iterations were stopped before their next call and none was recorded; a resume asks none of the calls answered again", posString(r.Plan, s.Pos), first+1, scopes[first].scope.Key)
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, it := range its {
		if err := r.commit(it); err != nil {
			return err
		}
	}
	return nil
}

// commit records what an iteration held: its messages get their ids in
// the run, and its nodes' results take them.
func (r *Run) commit(it *iteration) error {
	final := r.appendMessages(it.held, nil)
	ids := make(map[string]string, len(final))
	for i, m := range final {
		ids[it.held[i].ID] = m.ID
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
		r.setResult(node, res)
	}
	return nil
}

// concurrent says whether a foreach runs its iterations concurrently here.
func (r *Run) concurrent(s *spec.FlowStep, f *frame, items int) bool {
	return s.Concurrency > 1 && items > 1 && r.dry == nil && r.emb == nil && f.it == nil
}
