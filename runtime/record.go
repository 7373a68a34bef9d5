// This file records messages in the run: their history, the agents'
// views of it, and the message events of the journal.

package runtime

import (
	"encoding/hex"
	"sort"
	"strconv"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/runtime/digest"
	"github.com/debate-runner/runner/runtime/history"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/value"
)

// messagesSoFar returns the messages recorded so far without copying them:
// the slice is capped at its length, so appending to it copies, and the run
// never changes a recorded message. It is never nil. Call with r.mu held.
func (r *Run) messagesSoFar() []value.Message {
	n := len(r.messages)
	if n == 0 {
		return []value.Message{}
	}
	return r.messages[:n:n]
}

// agentViews returns the views of a node's agents, or of every agent of the
// spec for a nil node. They are made once per list (the plan does not change
// during a run) and shared by every prompt; nil for no agents. Call with r.mu
// held.
func (r *Run) agentViews(node *spec.NodePlan) []value.AgentView {
	if v, ok := r.views[node]; ok {
		return v
	}
	agents := r.Plan.Agents
	if node != nil {
		agents = node.Agents
	}
	var v []value.AgentView
	if len(agents) > 0 {
		v = make([]value.AgentView, len(agents))
		for i, a := range agents {
			v[i] = a.View()
		}
	}
	if r.views == nil {
		r.views = map[*spec.NodePlan][]value.AgentView{}
	}
	r.views[node] = v
	return v
}

// Visible reports whether agent may see message m: private messages only by
// their author, whispers by their author and addressee.
func Visible(m value.Message, agent string) bool { return history.Visible(&m, agent) }

// Messages returns the run's messages so far. The slice is shared with the
// run (see Run.messagesSoFar): callers read it and must not change it.
func (h *host) Messages() []value.Message {
	if it := h.iteration(); it != nil {
		return it.messages()
	}
	h.run.mu.Lock()
	defer h.run.mu.Unlock()
	return h.run.messagesSoFar()
}

// messageEvent is a recorded message as journaled: content and output are
// left out when an identical text is already in the journal (a model
// response, or an earlier message), keeping the journal about as large as the
// debate itself. The output is then the one parsed from that text, journaled
// with the call that produced it (its "output" event).
type messageEvent struct {
	value.Message
	ContentDigest string `json:"content_digest,omitempty"`
}

func (h *host) Record(msgs ...value.Message) []value.Message {
	r := h.run
	// Summaries made for this node's prompts go first, in agent order, so
	// the record does not depend on which call finished first.
	r.mu.Lock()
	pending := r.pendingSummaries
	r.pendingSummaries = nil
	r.mu.Unlock()
	if it := h.iteration(); it != nil {
		it.mu.Lock()
		pending = it.pending
		it.pending = nil
		it.mu.Unlock()
	}
	if len(pending) > 0 {
		order := map[string]int{}
		for i, a := range r.Plan.Agents {
			order[a.ID] = i
		}
		sort.SliceStable(pending, func(i, j int) bool { return order[pending[i].From] < order[pending[j].From] })
		h.record(pending)
	}
	return h.record(msgs)
}

func (h *host) record(msgs []value.Message) []value.Message {
	msgs = append([]value.Message(nil), msgs...)
	for i := range msgs {
		m := &msgs[i]
		// A cache split marks a prompt; a recorded text (an interjection
		// rendered from a template) keeps none.
		m.Content, _ = value.SplitCacheBreak(m.Content)
		if m.Node == "" {
			m.Node = h.node.ID
		}
		if m.Round == 0 {
			m.Round = h.scope.Round
		}
		if m.Goal == "" {
			m.Goal = h.scope.Goal.ID
		}
		if m.Loops == nil && len(h.scope.Counters) > 0 {
			m.Loops = h.scope.Counters // never changed: each frame makes its own
		}
	}
	if it := h.iteration(); it != nil {
		out := it.hold(msgs)
		if h.turns != nil {
			for _, m := range out {
				h.turns.recorded(m.Turn, h.run.dry.worst())
			}
		}
		return out
	}
	return h.run.appendMessages(msgs, h.turns)
}

// appendMessages records messages in the run: each gets its id, joins the
// history and is journaled.
func (r *Run) appendMessages(msgs []value.Message, turns *dryTurns) []value.Message {
	out := make([]value.Message, 0, len(msgs))
	// The messages are journaled together, in one write: a node records
	// all of its replies at once.
	entries := make([]journal.Entry, 0, len(msgs))
	for _, m := range msgs {
		sum := digest.Strings(m.Content)
		r.mu.Lock()
		m.ID = "m" + strconv.Itoa(len(r.messages)+1)
		r.hist.Append(m)
		if turns != nil {
			turns.recorded(m.Turn, r.dry.worst())
		}
		r.contentBytes.Add(int64(len(m.Content)))
		r.messages = r.hist.All()
		seen := r.seenText[sum]
		r.seenText[sum] = true
		r.mu.Unlock()
		ev := messageEvent{Message: m}
		if seen && m.Content != "" {
			ev.Content, ev.Output = "", nil
			ev.ContentDigest = hex.EncodeToString(sum[:8])
		}
		entries = append(entries, journal.Entry{Type: event.Message, Key: m.ID, Data: ev})
		out = append(out, m)
	}
	switch len(entries) {
	case 0:
	case 1:
		_ = r.event(entries[0].Type, entries[0].Key, entries[0].Data)
	default:
		_ = r.events(entries)
	}
	return out
}
