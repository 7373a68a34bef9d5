package llm

import "time"

// Providers count requests_per_minute and tokens_per_minute over a window
// that slides: any 60 seconds may hold at most the declared number. A
// token bucket that starts full (one second's burst on top of the steady
// rate) lets the first minute hold a burst more than that, which a strict
// provider answers with 429s. A Schedule keeps the window instead, from
// the first request:
//
//   - requests are spaced evenly, RateSpan/rpm apart, so any n+1 of them
//     span at least RateSpan, longer than a minute;
//   - tokens are logged as they are admitted, and a request waits until the
//     tokens admitted within the last RateSpan plus its own fit the budget.
//
// RateSpan is a minute and a second: the extra second absorbs requests
// that reach the provider up to a second later, relative to each other,
// than they were admitted, at the cost of 1/61 of the declared rate.

// RateSpan is the window a Schedule keeps the declared per-minute limits
// over.
const RateSpan = time.Minute + time.Second

// Schedule admits requests under requests-per-minute and tokens-per-minute
// limits so that no window of RateSpan holds more than the limits. It has
// no clock and no lock of its own: the caller passes the time and
// serializes calls, so a Temporal workflow can hold one (it is plain data
// that continues as new) as well as a local client.
type Schedule struct {
	// NextRequest is the earliest time the next request may be admitted.
	NextRequest time.Time `json:"next_request,omitzero"`
	// Spent are the token reservations of the last RateSpan, oldest first.
	Spent []Spend `json:"spent,omitempty"`

	total   int  // the sum of Spent's tokens, when counted
	counted bool // false in a Schedule fresh from JSON
}

// Spend is a token reservation: Tokens admitted at At.
type Spend struct {
	At     time.Time `json:"at"`
	Tokens int       `json:"tokens"`
}

// Earliest returns when a request estimated at tokens may be admitted, at
// now or later, and whether the token limit (rather than the request rate)
// is what holds it back. Requests are admitted in the order they are
// scheduled: never before one scheduled earlier. rpm or tpm zero is no
// limit of that kind.
//
// Reservations that have left the window by now are dropped.
func (s *Schedule) Earliest(now time.Time, rpm, tpm, tokens int) (at time.Time, byTokens bool) {
	s.prune(now)
	at = now
	if rpm > 0 && s.NextRequest.After(at) {
		at = s.NextRequest
	}
	if tpm <= 0 {
		return at, false
	}
	if n := len(s.Spent); n > 0 && s.Spent[n-1].At.After(at) {
		at, byTokens = s.Spent[n-1].At, true
	}
	need := clampTokens(tokens, tpm)
	if s.total+need <= tpm {
		return at, byTokens // fits even counting every reservation
	}
	sum, i := 0, 0
	for j, sp := range s.Spent {
		if sp.At.Add(RateSpan).After(at) {
			sum += sp.Tokens
		} else {
			i = j + 1
		}
	}
	for ; sum+need > tpm && i < len(s.Spent); i++ {
		// The oldest reservation still in the window leaves it.
		if out := s.Spent[i].At.Add(RateSpan); out.After(at) {
			at, byTokens = out, true
		}
		sum -= s.Spent[i].Tokens
	}
	return at, byTokens
}

// Take records a request admitted at at (from Earliest).
func (s *Schedule) Take(at time.Time, rpm, tpm, tokens int) {
	if rpm > 0 {
		s.NextRequest = at.Add(RateSpan / time.Duration(rpm))
	}
	if tpm <= 0 {
		return
	}
	s.prune(at)
	n := clampTokens(tokens, tpm)
	s.Spent = append(s.Spent, Spend{At: at, Tokens: n})
	s.total += n
}

// Untake gives back a request taken at at that was not sent (its caller
// gave up waiting), when nothing was scheduled after it; otherwise the slot
// stays spent, which only errs on the safe side.
func (s *Schedule) Untake(at time.Time, rpm, tpm, tokens int) {
	s.prune(time.Time{})
	if rpm > 0 && s.NextRequest.Equal(at.Add(RateSpan/time.Duration(rpm))) {
		s.NextRequest = at
	}
	if n := len(s.Spent); tpm > 0 && n > 0 && s.Spent[n-1].At.Equal(at) && s.Spent[n-1].Tokens == clampTokens(tokens, tpm) {
		s.total -= s.Spent[n-1].Tokens
		s.Spent = s.Spent[:n-1]
	}
}

// Charge adds tokens a reply used beyond its reservation, as spent at at,
// so that requests scheduled from now on wait for them. Requests already
// scheduled keep their times.
func (s *Schedule) Charge(at time.Time, tokens int) {
	if tokens <= 0 {
		return
	}
	s.prune(time.Time{})
	i := len(s.Spent)
	for i > 0 && s.Spent[i-1].At.After(at) {
		i--
	}
	s.Spent = append(s.Spent, Spend{})
	copy(s.Spent[i+1:], s.Spent[i:])
	s.Spent[i] = Spend{At: at, Tokens: tokens}
	s.total += tokens
}

// prune drops reservations that have left the window by now: nothing is
// admitted before now any more.
// It counts the total of a Schedule fresh from JSON.
func (s *Schedule) prune(now time.Time) {
	if !s.counted {
		s.total, s.counted = 0, true
		for _, sp := range s.Spent {
			s.total += sp.Tokens
		}
	}
	i := 0
	for i < len(s.Spent) && !s.Spent[i].At.Add(RateSpan).After(now) {
		s.total -= s.Spent[i].Tokens
		i++
	}
	s.Spent = s.Spent[i:]
}

// clampTokens makes a request's estimate at least 1 and at most the whole
// budget: a request larger than a minute's budget waits for an empty
// window instead of failing or waiting forever.
func clampTokens(tokens, tpm int) int {
	return min(max(tokens, 1), tpm)
}
