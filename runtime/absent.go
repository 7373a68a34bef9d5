package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/drift"
	"github.com/debate-runner/runner/runtime/result"
)

// A node that may go on without some of its agents (ask's min_answers)
// journals an "absent" event for each agent it left out, once it has
// completed without them. For an agent whose call failed after its
// retries the event holds the digest of that call's request: a resume of
// the run, or a replay of it, leaves the same call out again, without
// asking, so that it goes on as the run did (the same answers, the same
// averages). An agent whose reply stayed unusable is not recorded so: its
// replies are in the journal, and the node judges them again (with a
// fixed spec, it may now accept them).

// noteFailure remembers the request of a call of this node that failed
// after its retries, for an "absent" event about it.
func (h *host) noteFailure(c *calls.Call) {
	digest := drift.RequestDigest(c)
	h.repliesMu.Lock()
	if h.failed == nil {
		h.failed = map[string]string{}
	}
	h.failed[c.Key] = digest
	h.repliesMu.Unlock()
}

// noteAbsence keeps an agent the node completed without, for result.json
// and the report, and returns the event's payload to journal: the node's,
// with the failed call's request digest. A resumed run notes its absences
// again as it walks the flow, so the list is whole after a resume too.
func (h *host) noteAbsence(key string, data any) any {
	var rec absentRecord
	if b, err := json.Marshal(data); err == nil {
		_ = json.Unmarshal(b, &rec)
	}
	h.repliesMu.Lock()
	digest, failed := h.failed[key]
	content := h.replies[key]
	h.repliesMu.Unlock()
	a := result.Absence{Key: key, Node: h.node.ID, Goal: h.scope.Goal.ID, Round: h.scope.Round, Agent: rec.Agent, Reason: rec.Reason}
	if failed {
		rec.RequestDigest = digest
	} else {
		a.Reply = content
	}
	r := h.run
	r.mu.Lock()
	r.absences = append(r.absences, a)
	r.mu.Unlock()
	return rec
}

// leftOut answers a call that an earlier attempt of the run (or the run
// being replayed) left out of a node that completed without it, with the
// failure it had then and without calling: the node goes on without that
// agent again. A call whose request changed since (a resume with a fixed
// spec) goes on to next and is made.
func (r *Run) leftOut(next calls.Stage) calls.Stage {
	return calls.StageFunc(func(ctx context.Context, c *calls.Call) (kit.Reply, calls.Source, error) {
		if rec, ok := r.absent[c.Key]; ok && rec.RequestDigest == drift.RequestDigest(c) {
			why := strings.TrimPrefix(rec.Reason, "model call "+c.Key+" failed: ")
			return kit.Reply{}, calls.FromJournal, &calls.EndpointError{Key: c.Key, Err: fmt.Errorf("%s (when the run first made it; the node went on without %s, and so does this attempt, without asking again)", why, rec.Agent)}
		}
		return next.Complete(ctx, c)
	})
}
