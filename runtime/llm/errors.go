package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Error is returned by Complete when the request could not be completed:
// the error was not retryable, the retry budget was exhausted, or the
// caller's context ended. It never contains the API key.
type Error struct {
	Endpoint  string
	Model     string
	Attempts  int  // attempts sent
	Status    int  // HTTP status of the last response, 0 if none
	Retryable bool // the last failure was transient (so the budget ran out)
	Err       error
	// Hint says what to check, when the failure suggests it (a base URL
	// without /v1 that got a 404, an Azure deployment not found, ...).
	Hint string
}

// Error says which endpoint and model failed, after how many attempts, with
// which last status and cause.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "llm: endpoint %q model %q: ", e.Endpoint, e.Model)
	switch {
	case e.Attempts == 0:
		b.WriteString("no attempt sent")
	case e.Retryable:
		fmt.Fprintf(&b, "gave up after %d attempt(s)", e.Attempts)
	default:
		fmt.Fprintf(&b, "failed on attempt %d (not retryable)", e.Attempts)
	}
	if e.Status != 0 {
		fmt.Fprintf(&b, ", last status %d", e.Status)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Hint != "" {
		b.WriteString(" (hint: ")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// redactedError replaces an error whose text contained the API key (a server
// echoing the credential in its error body). The original is dropped rather
// than wrapped, so the key cannot be reached through errors.As either; what
// callers act on (status, retryability) lives in Error.
type redactedError struct{ msg string }

func (e *redactedError) Error() string { return e.msg }

// redact returns err, or a redacted copy of its text if it mentions the
// key or a header value (a server echoing the credential in its error body).
func (c *Client) redact(err error) error {
	msg := err.Error()
	changed := false
	for _, s := range c.secrets {
		if strings.Contains(msg, s) {
			msg = strings.ReplaceAll(msg, s, "[REDACTED]")
			changed = true
		}
	}
	if !changed {
		return err
	}
	return &redactedError{msg: msg}
}

// cancelled makes sure the caller's context error is in the chain of err,
// so errors.Is(err, context.Canceled) holds whatever layer noticed first.
func cancelled(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}
