package llmtest

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// ExhaustedMessage is the error message answered once a script runs out of
// replies.
const ExhaustedMessage = "llmtest: script exhausted"

// Sequence answers replies in arrival order. Once they are used up every
// further request gets a 500 error reply with ExhaustedMessage.
func Sequence(replies ...Reply) Handler {
	return sequence(replies, nil)
}

// sequence is Sequence with a hook for exhausted calls, which NewQueue uses
// to fail the test.
func sequence(replies []Reply, onExhausted func(Request)) Handler {
	replies = append([]Reply(nil), replies...)
	var (
		mu   sync.Mutex
		next int
	)
	return func(r Request) Reply {
		mu.Lock()
		i := next
		next++
		mu.Unlock()
		if i < len(replies) {
			return replies[i]
		}
		if onExhausted != nil {
			onExhausted(r)
		}
		return Reply{Status: http.StatusInternalServerError, ErrorMessage: ExhaustedMessage}
	}
}

// FailEvery answers fail to every n-th call it sees (n, 2n, ...) and passes
// the others to next. next sees only its own calls, so a Sequence behind it
// advances once per non-failing call. It panics if n < 1.
func FailEvery(n int, fail Reply, next Handler) Handler {
	if n < 1 {
		panic(fmt.Sprintf("llmtest: FailEvery needs n >= 1, got %d", n))
	}
	var (
		mu    sync.Mutex
		calls int
	)
	return func(r Request) Reply {
		mu.Lock()
		calls++
		failNow := calls%n == 0
		mu.Unlock()
		if failNow {
			return fail
		}
		return next(r)
	}
}

// ByLastUser answers the reply whose key is a substring of the last user
// message. Keys are tried in sorted order so that overlapping keys resolve
// the same way on every run. Requests matching no key go to fallback; with a
// nil fallback they get a 500 error reply naming the message.
func ByLastUser(m map[string]Reply, fallback Handler) Handler {
	keys := make([]string, 0, len(m))
	replies := make(map[string]Reply, len(m))
	for k, v := range m {
		keys = append(keys, k)
		replies[k] = v
	}
	sort.Strings(keys)
	return func(r Request) Reply {
		last := r.LastUser()
		for _, k := range keys {
			if strings.Contains(last, k) {
				return replies[k]
			}
		}
		if fallback != nil {
			return fallback(r)
		}
		return Reply{
			Status:       http.StatusInternalServerError,
			ErrorMessage: fmt.Sprintf("llmtest: no scripted reply matches last user message %q", last),
		}
	}
}

// Echo answers "echo: " followed by the last user message.
func Echo() Handler {
	return func(r Request) Reply {
		return Reply{Content: "echo: " + r.LastUser()}
	}
}
