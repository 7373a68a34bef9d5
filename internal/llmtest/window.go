package llmtest

import (
	"fmt"
	"sync"
	"time"
)

// SlidingWindow enforces a rate limit as a strict provider does: a request
// is refused (429) when the window before it, Span long, already holds
// Limit accepted requests. Refused requests do not count. It reads the
// time when asked, so inside a testing/synctest bubble it runs on the
// bubble's clock.
type SlidingWindow struct {
	Limit int
	Span  time.Duration // a minute when zero

	mu       sync.Mutex
	accepted []time.Time // within the last Span, oldest first
	ok, over int
	first    time.Time
	last     time.Time
}

// Admit records a request arriving now and reports whether it is within
// the limit.
func (w *SlidingWindow) Admit() bool {
	now := time.Now()
	span := w.Span
	if span <= 0 {
		span = time.Minute
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	i := 0
	for i < len(w.accepted) && !w.accepted[i].After(now.Add(-span)) {
		i++
	}
	w.accepted = w.accepted[i:]
	if len(w.accepted) >= w.Limit {
		w.over++
		return false
	}
	if w.ok == 0 {
		w.first = now
	}
	w.accepted = append(w.accepted, now)
	w.ok++
	w.last = now
	return true
}

// Counts returns the requests accepted and refused so far, and the time
// between the first and the last accepted one.
func (w *SlidingWindow) Counts() (accepted, refused int, span time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ok, w.over, w.last.Sub(w.first)
}

// Handler answers 429 (Retry-After: 1) over the limit and passes the
// other requests to next.
func (w *SlidingWindow) Handler(next Handler) Handler {
	return func(r Request) Reply {
		if !w.Admit() {
			return Reply{Status: 429, RetryAfter: "1", ErrorMessage: fmt.Sprintf("Rate limit reached: %d requests per %v", w.Limit, w.spanOr())}
		}
		return next(r)
	}
}

func (w *SlidingWindow) spanOr() time.Duration {
	if w.Span <= 0 {
		return time.Minute
	}
	return w.Span
}
