package kit

import (
	"context"
	"fmt"
	"strings"

	"github.com/debate-runner/runner/internal/event"
)

// repairSep separates a call's key from the number of its repair. Recorded
// runs are resumed and replayed by these keys: the format must never change.
const repairSep = "#repair"

// RepairKey is the call key of the attempt-th ask of a call under key:
// attempt 0 is the call itself (key), attempt n its n-th repair
// (key#repairN). Kinds whose asking again is their own (a conversation
// renders the turn anew) take their keys from here rather than formatting
// them.
func RepairKey(key string, attempt int) string {
	if attempt == 0 {
		return key
	}
	return fmt.Sprintf("%s%s%d", key, repairSep, attempt)
}

// RepairChain is the key of the first call of a chain of repairs: key for
// key#repairN, key itself otherwise.
func RepairChain(key string) string {
	base, _, _ := strings.Cut(key, repairSep)
	return base
}

// IsRepair reports whether key is the key of a repair.
func IsRepair(key string) bool { return strings.Contains(key, repairSep) }

// Repairs asks a call again after a reply that does not pass a kind's
// checks, up to Max times, each under its own key (RepairKey), journaling
// a repair event before each new ask. Kinds make calls that may be
// repaired through it rather than keeping a loop of their own.
type Repairs struct {
	// Max is how many times to ask again after an invalid reply.
	Max int
	// Complete makes one ask and returns its reply and the messages of the
	// exchange (the call's messages, and any tool round trips it made).
	// nil makes the call with the host's Complete.
	Complete func(ctx context.Context, c Call) (Reply, []ChatMessage, error)
	// Accept checks a reply: nil accepts it, an error says why not.
	Accept func(Reply) error
	// Feedback is the user message that asks again after a reply rejected
	// for err, sent after that reply. nil sends the first request again
	// unchanged: a new sample under a new key.
	Feedback func(err error) string
	// Event is the payload of the repair event journaled before the
	// attempt-th repair (1-based) of a reply rejected for err.
	Event func(attempt int, err error) any
}

// Attempt is how a call with repairs ended.
type Attempt struct {
	// Key is the call key of the last ask, N its number (0: the call
	// itself, n: its n-th repair).
	Key string
	N   int
	// Reply is the last reply.
	Reply Reply
	// Invalid is why the last reply was rejected when no repair was left;
	// nil when it was accepted.
	Invalid error
}

// RepairHost is what asking with repairs needs of the run.
type RepairHost interface {
	Caller
	Journal
}

// Call makes call under its key and asks again under the keys of its
// repairs while r.Accept rejects the reply and repairs remain. A call that
// fails returns its error with the attempt it failed at; a reply still
// rejected after the last repair returns with Attempt.Invalid set.
func (r Repairs) Call(ctx context.Context, h RepairHost, call Call) (Attempt, error) {
	key := call.Key
	request := call.Messages
	complete := r.Complete
	if complete == nil {
		complete = func(ctx context.Context, c Call) (Reply, []ChatMessage, error) {
			reply, err := h.Complete(ctx, c)
			return reply, c.Messages, err
		}
	}
	for attempt := 0; ; attempt++ {
		call.Key = RepairKey(key, attempt)
		reply, msgs, err := complete(ctx, call)
		at := Attempt{Key: call.Key, N: attempt, Reply: reply}
		if err != nil {
			return at, err
		}
		invalid := r.Accept(reply)
		if invalid == nil {
			return at, nil
		}
		if attempt >= r.Max {
			at.Invalid = invalid
			return at, nil
		}
		_ = h.Event(event.Repair, call.Key, r.Event(attempt+1, invalid))
		if r.Feedback == nil {
			call.Messages = request
			continue
		}
		call.Messages = append(msgs,
			ChatMessage{Role: "assistant", Content: reply.Content},
			ChatMessage{Role: "user", Content: r.Feedback(invalid)})
	}
}
