package llm

import (
	"context"
	"fmt"
	"time"
)

// admit takes a concurrency slot, then a request token, then the attempt's
// token estimate. The slot comes first so that rate tokens are spent right
// before sending: taken earlier, tokens would pile up behind a full
// semaphore and leave it as a burst. On success the caller must release.
func (c *Client) admit(ctx context.Context, cost int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
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
	if c.rpm != nil {
		start := time.Now()
		if err := c.rpm.Wait(ctx); err != nil {
			c.release()
			return rateWaitError(ctx, "request", err)
		}
		waited.report("requests_per_minute", start)
	}
	if c.tpm != nil {
		start := time.Now()
		// A request larger than a minute's budget can never fit the bucket;
		// it waits for a full bucket instead of failing or blocking forever.
		if err := c.tpm.WaitN(ctx, min(cost, c.tpm.Burst())); err != nil {
			c.release()
			return rateWaitError(ctx, "token", err)
		}
		waited.report("tokens_per_minute", start)
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
// later callers wait for them. An over-estimate is not refunded: rate.Limiter
// cannot return spent tokens, and providers also count the completion budget
// against their limit when the request arrives.
func (c *Client) settleTokens(reserved, used int) {
	if c.tpm == nil || used <= reserved {
		return
	}
	c.tpm.ReserveN(time.Now(), min(used-reserved, c.tpm.Burst()))
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
