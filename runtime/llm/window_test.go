package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/debate-runner/runner/internal/llmtest"
)

// latency delays each request by 0 to 300 ms on its way to the server, as
// a network does, so that requests admitted a minute apart may arrive less
// than a minute apart.
type latency struct {
	next http.RoundTripper
	mu   sync.Mutex
	rnd  *rand.Rand
}

func (l *latency) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	d := time.Duration(l.rnd.Int64N(int64(300 * time.Millisecond)))
	l.mu.Unlock()
	time.Sleep(d)
	return l.next.RoundTrip(r)
}

// strictWindowRun runs agents calling one client at rpm for d against a
// server that refuses any request beyond rpm in the 60 seconds before it,
// on synctest's virtual clock (so minutes take milliseconds and the
// outcome does not depend on the machine's load). It returns the requests
// the server accepted and refused, and the accepted rate as a share of
// rpm over the span from the first accepted request to the last.
func strictWindowRun(t *testing.T, rpm, agents int, d time.Duration) (accepted, refused int, share float64) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		win := &llmtest.SlidingWindow{Limit: rpm}
		srv := llmtest.NewInProcess(win.Handler(func(llmtest.Request) llmtest.Reply { return llmtest.Reply{Content: "ok"} }))
		c := New(Endpoint{
			Name: "strict", BaseURL: srv.URL, APIKey: "k", RequestsPerMinute: rpm,
			HTTPClient: &http.Client{Transport: &latency{next: srv.Transport(), rnd: rand.New(rand.NewPCG(1, 2))}},
		})
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		var wg sync.WaitGroup
		for range agents {
			wg.Go(func() {
				for ctx.Err() == nil {
					_, err := c.Complete(ctx, simple("m"), nil)
					var e *Error
					switch {
					case err == nil, errors.As(err, &e) && e.Status == http.StatusTooManyRequests:
					case errors.Is(err, context.DeadlineExceeded):
						return // the next turn is after the end
					default:
						t.Errorf("call: %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
		var span time.Duration
		accepted, refused, span = win.Counts()
		share = float64(accepted-1) / span.Minutes() / float64(rpm)
	})
	return accepted, refused, share
}

// TestRateLimitKeepsAStrictWindow: 32 agents sharing an endpoint declared
// at 60 and 600 requests per minute never exceed a strict 60-second
// sliding window, from the first request on, and still reach at least 95%
// of the declared rate. (The token bucket that
// started full, with a second's burst, drew 4 and 18 429s here.)
func TestRateLimitKeepsAStrictWindow(t *testing.T) {
	for _, rpm := range []int{60, 600} {
		t.Run(fmt.Sprint(rpm), func(t *testing.T) {
			accepted, refused, share := strictWindowRun(t, rpm, 32, 5*time.Minute)
			t.Logf("%d rpm, 32 agents, 5 virtual minutes: %d accepted, %d refused (429), %.1f%% of the declared rate", rpm, accepted, refused, 100*share)
			if refused != 0 {
				t.Errorf("%d requests drew a 429", refused)
			}
			if share < 0.95 || share > 1 {
				t.Errorf("throughput %.3f of the declared rate, want 0.95 to 1", share)
			}
		})
	}
}

// TestScheduleTokens: tokens admitted within the last RateSpan plus a new
// request's never exceed tokens_per_minute; a request larger than the
// budget waits for an empty window; a turn given back is free again.
func TestScheduleTokens(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var s Schedule
	for i, want := range []time.Duration{0, 0, RateSpan, RateSpan, 2 * RateSpan} {
		at, byTokens := s.Earliest(t0, 0, 1000, 400)
		if at.Sub(t0) != want || byTokens != (want > 0) {
			t.Fatalf("request %d: at +%v (by tokens %v), want +%v", i, at.Sub(t0), byTokens, want)
		}
		s.Take(at, 0, 1000, 400)
	}
	if at, _ := s.Earliest(t0, 0, 1000, 5000); at.Sub(t0) != 3*RateSpan {
		t.Errorf("an oversized request goes at +%v, want +%v, when the window is empty", at.Sub(t0), 3*RateSpan)
	}
	var r Schedule
	r.Take(t0, 1, 0, 0)
	at, _ := r.Earliest(t0, 1, 0, 0)
	r.Take(at, 1, 0, 0)
	r.Untake(at, 1, 0, 0)
	if again, _ := r.Earliest(t0, 1, 0, 0); !again.Equal(at) {
		t.Errorf("after giving its turn back the next request goes at +%v, want +%v", again.Sub(t0), at.Sub(t0))
	}
}
