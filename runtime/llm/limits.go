package llm

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Gate admits requests to an endpoint for many clients together (see
// Endpoint.Gate).
type Gate interface {
	// Admit waits until an attempt estimated at tokens may be sent; the
	// caller calls leave once the attempt is over.
	Admit(ctx context.Context, tokens int) (leave func(), err error)
}

// admit takes a concurrency slot, then a request token, then the attempt's
// token estimate (or whatever the gate, when there is one, takes). The slot
// comes first so that rate tokens are spent right before sending: taken
// earlier, tokens would pile up behind a full semaphore and leave it as a
// burst. On success the caller must call leave once the attempt is over.
func (c *Client) admit(ctx context.Context, cost int) (leave func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.gate != nil {
		start := time.Now()
		leave, err := c.gate.Admit(ctx, cost)
		if err != nil {
			return nil, fmt.Errorf("waiting for the endpoint's shared limits: %w", err)
		}
		waitsOf(ctx).report("shared_limits", start)
		return leave, nil
	}
	if err := c.take(ctx, cost); err != nil {
		return nil, err
	}
	return c.release, nil
}

// take takes the client's own slot and rate tokens.
func (c *Client) take(ctx context.Context, cost int) error {
	waited := waitsOf(ctx)
	if c.slots != nil {
		select {
		case c.slots <- struct{}{}:
		default:
			start := time.Now()
			select {
			case c.slots <- struct{}{}:
				waited.report("max_concurrency", start)
			case <-ctx.Done():
				return fmt.Errorf("waiting for a concurrency slot: %w", ctx.Err())
			}
		}
	}
	if c.rate != nil {
		if err := c.rate.wait(ctx, cost, waited); err != nil {
			c.release()
			return err
		}
	}
	return nil
}

// release frees the slot taken by admit.
func (c *Client) release() {
	if c.slots != nil {
		<-c.slots
	}
}

// settleTokens charges the tokens a reply used beyond its reservation, so
// later callers wait for them. An over-estimate is not refunded: providers
// also count the completion budget against their limit when the request
// arrives.
func (c *Client) settleTokens(reserved, used int) {
	if c.rate == nil || c.rate.tpm == 0 || used <= reserved {
		return
	}
	c.rate.charge(min(used-reserved, c.rate.tpm))
}

// rateLimiter holds the client's own requests_per_minute and
// tokens_per_minute to a Schedule shared by all its callers.
type rateLimiter struct {
	rpm, tpm int
	mu       sync.Mutex
	sched    Schedule
}

// wait schedules a request estimated at tokens and waits for its turn. A
// turn that would come after ctx's deadline fails at once.
func (l *rateLimiter) wait(ctx context.Context, tokens int, waited waitFunc) error {
	l.mu.Lock()
	now := time.Now()
	at, byTokens := l.sched.Earliest(now, l.rpm, l.tpm, tokens)
	limit, what := "requests_per_minute", "request"
	if byTokens {
		limit, what = "tokens_per_minute", "token"
	}
	if dl, ok := ctx.Deadline(); ok && at.After(dl) {
		l.mu.Unlock()
		return rateWaitError(ctx, what, fmt.Errorf("the next turn is in %v", at.Sub(now).Round(time.Millisecond)))
	}
	l.sched.Take(at, l.rpm, l.tpm, tokens)
	l.mu.Unlock()
	d := at.Sub(now)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		waited.report(limit, now)
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		l.sched.Untake(at, l.rpm, l.tpm, tokens)
		l.mu.Unlock()
		return rateWaitError(ctx, what, ctx.Err())
	}
}

func (l *rateLimiter) charge(tokens int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sched.Charge(time.Now(), tokens)
}

// rateWaitError explains a failed limiter wait. Besides cancellation, a
// limiter fails at once when the wait would outlast ctx's deadline; that is
// reported as context.DeadlineExceeded so callers see one kind of timeout.
func rateWaitError(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("waiting for %s rate limit: %w", what, ctx.Err())
	}
	return fmt.Errorf("waiting for %s rate limit: %w: %w", what, context.DeadlineExceeded, err)
}
