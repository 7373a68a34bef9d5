package durable

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestGateKeepsAStrictWindow drives a gate's admission (the workflow's
// decisions, without Temporal) with 32 callers always asking, on a virtual
// clock: no 60 seconds hold more requests than requests_per_minute or more
// tokens than tokens_per_minute, from the first request on, and the
// requests reach at least 95% of the declared rate; whether the gate
// admits requests when they may be sent or ahead (gateAdmitAhead), the
// requests being sent when its answer says.
func TestGateKeepsAStrictWindow(t *testing.T) {
	for _, tt := range []struct {
		rpm, tpm, tokens int
		ahead            bool
	}{{60, 0, 0, false}, {600, 0, 0, false}, {600, 20000, 700, false}, {60, 0, 0, true}, {600, 0, 0, true}, {600, 20000, 700, true}, {3000, 0, 0, true}} {
		t.Run(fmt.Sprint(tt.rpm, "rpm/", tt.tpm, "tpm/ahead=", tt.ahead), func(t *testing.T) {
			g := &gate{strict: true, ahead: tt.ahead, answered: map[string]answer{}, cancelled: map[string]bool{}}
			limits := GateLimits{RequestsPerMinute: tt.rpm, TokensPerMinute: tt.tpm}
			ask := func(i int) {
				g.queue = append(g.queue, gateRequest{Holder: fmt.Sprint(i), Tokens: tt.tokens, Limits: limits, TTL: time.Minute, Ahead: true})
			}
			n := 0
			for ; n < 32; n++ {
				ask(n)
			}
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			now := start
			type admitted struct {
				at     time.Time
				tokens int
			}
			var log []admitted
			for now.Sub(start) < 5*time.Minute {
				wake := g.serve(now)
				for holder, a := range g.answered {
					if a.err != nil {
						t.Fatalf("%s refused: %v", holder, a.err)
					}
					if a.wait < 0 || a.wait > gateHorizon || a.wait > 0 && !tt.ahead {
						t.Fatalf("%s admitted to wait %v", holder, a.wait)
					}
					delete(g.answered, holder)
					g.release(holder) // the call is over at once
					log = append(log, admitted{now.Add(a.wait), tt.tokens})
					ask(n) // and its caller asks again
					n++
				}
				if wake.IsZero() {
					continue
				}
				now = wake
			}
			slices.SortFunc(log, func(a, b admitted) int { return a.at.Compare(b.at) })
			for i, a := range log {
				reqs, tokens := 0, 0
				for _, b := range log[:i+1] {
					if b.at.After(a.at.Add(-time.Minute)) {
						reqs++
						tokens += b.tokens
					}
				}
				if reqs > tt.rpm || tt.tpm > 0 && tokens > tt.tpm {
					t.Fatalf("the minute up to %v holds %d requests and %d tokens", a.at.Sub(start), reqs, tokens)
				}
			}
			want := float64(tt.rpm)
			if tt.tpm > 0 {
				want = min(want, float64(tt.tpm)/float64(tt.tokens))
			}
			sent := 0
			for _, a := range log {
				if a.at.Sub(start) < 5*time.Minute {
					sent++
				}
			}
			share := float64(sent) / 5 / want
			t.Logf("%d admitted in 5 virtual minutes, %.1f%% of the declared rate", len(log), 100*share)
			if share < 0.95 || share > 1 {
				t.Errorf("throughput %.3f of the declared rate, want 0.95 to 1", share)
			}
		})
	}
}
