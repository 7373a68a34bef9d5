package kit

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/debate-runner/runner/internal/event"
)

// repairHost answers calls with replies in turn and keeps the keys asked
// and the events journaled.
type repairHost struct {
	Host
	replies []string
	keys    []string
	sent    [][]ChatMessage
	events  []string
}

func (h *repairHost) Complete(_ context.Context, c Call) (Reply, error) {
	h.keys = append(h.keys, c.Key)
	h.sent = append(h.sent, c.Messages)
	r := h.replies[0]
	h.replies = h.replies[1:]
	return Reply{Content: r}, nil
}

func (h *repairHost) Event(typ event.Type, key string, data any) error {
	h.events = append(h.events, fmt.Sprintf("%s %s %v", typ, key, data))
	return nil
}

func okIf(want string) func(Reply) error {
	return func(r Reply) error {
		if r.Content != want {
			return fmt.Errorf("not %s", want)
		}
		return nil
	}
}

// The keys of repairs are what resume and replay find recorded responses
// by: they must stay KEY, KEY#repair1, KEY#repair2.
func TestRepairKeys(t *testing.T) {
	for attempt, want := range []string{"a/i1", "a/i1#repair1", "a/i1#repair2", "a/i1#repair10"} {
		if attempt == 3 {
			attempt = 10
		}
		if got := RepairKey("a/i1", attempt); got != want {
			t.Errorf("RepairKey(a/i1, %d) = %q, want %q", attempt, got, want)
		}
		if got := RepairChain(want); got != "a/i1" {
			t.Errorf("RepairChain(%q) = %q", want, got)
		}
		if IsRepair(want) != (attempt > 0) {
			t.Errorf("IsRepair(%q) = %v", want, !(attempt > 0))
		}
	}
}

func TestRepairsFeedback(t *testing.T) {
	h := &repairHost{replies: []string{"x", "y", "ok"}}
	first := Messages("", "ask")
	at, err := Repairs{
		Max:      2,
		Accept:   okIf("ok"),
		Feedback: func(err error) string { return "fix: " + err.Error() },
		Event:    func(n int, err error) any { return n },
	}.Call(context.Background(), h, Call{Key: "k", Messages: first})
	if err != nil || at.Invalid != nil || at.Key != "k#repair2" || at.N != 2 || at.Reply.Content != "ok" {
		t.Fatalf("got %+v, %v", at, err)
	}
	if want := []string{"k", "k#repair1", "k#repair2"}; !reflect.DeepEqual(h.keys, want) {
		t.Errorf("keys %v, want %v", h.keys, want)
	}
	if want := []string{"repair k 1", "repair k#repair1 2"}; !reflect.DeepEqual(h.events, want) {
		t.Errorf("events %v, want %v", h.events, want)
	}
	// The second repair sees both rejected replies and both reasons.
	last := h.sent[2]
	if len(last) != 5 || last[1].Content != "x" || last[2].Content != "fix: not ok" || last[3].Content != "y" || last[4].Role != "user" {
		t.Errorf("last request %+v", last)
	}
}

func TestRepairsResendAndRunOut(t *testing.T) {
	h := &repairHost{replies: []string{"x", "y"}}
	first := Messages("sys", "ask")
	at, err := Repairs{Max: 1, Accept: okIf("ok"), Event: func(int, error) any { return nil }}.
		Call(context.Background(), h, Call{Key: "k", Messages: first})
	if err != nil || at.Invalid == nil || at.Key != "k#repair1" || at.N != 1 || at.Reply.Content != "y" {
		t.Fatalf("got %+v, %v", at, err)
	}
	if !reflect.DeepEqual(h.sent[0], h.sent[1]) {
		t.Errorf("a resend changed the request: %+v then %+v", h.sent[0], h.sent[1])
	}
}

func TestRepairsCallError(t *testing.T) {
	failed := fmt.Errorf("boom: %w", ErrCallFailed)
	at, err := Repairs{Max: 3, Accept: okIf("ok"), Event: func(int, error) any { return nil },
		Complete: func(_ context.Context, c Call) (Reply, []ChatMessage, error) {
			if c.Key == "k" {
				return Reply{Content: "bad"}, c.Messages, nil
			}
			return Reply{}, nil, failed
		}}.Call(context.Background(), &repairHost{}, Call{Key: "k"})
	if !errors.Is(err, ErrCallFailed) || at.Key != "k#repair1" {
		t.Fatalf("got %+v, %v", at, err)
	}
}
