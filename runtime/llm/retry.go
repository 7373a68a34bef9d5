package llm

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// attemptState is what the HTTP exchange of one attempt saw, for
// classifying its error and waiting before the next attempt.
type attemptState struct {
	sent       bool          // the request reached the HTTP client
	status     int           // status of the last response, 0 if none
	retryAfter time.Duration // server-requested wait, 0 if none
	final      bool          // an error in a 2xx body that a retry cannot fix
	err        error         // redacted error of the attempt, kept for later failures
	// usage reads a reply's usage member (the provider kind's).
	usage func(json.RawMessage) (Usage, error)
}

// retryable classifies the attempt's error, an error status by the
// provider kind's status classes. parent is the caller's context: once it
// is done nothing is retried.
func (st *attemptState) retryable(parent context.Context, err error, status func(int) bool) bool {
	switch {
	case parent.Err() != nil:
		return false
	case !st.sent:
		// Failed before anything was sent (a request that cannot be
		// encoded): the same request would fail again.
		return false
	case st.final:
		return false
	case st.status >= 400:
		return status(st.status)
	case st.status > 0:
		// A success status with an unusable body (malformed JSON, no
		// choices, cut stream, attempt timeout while reading) is transient.
		return true
	default:
		return transientTransport(err)
	}
}

// retryableStatus reports whether an HTTP error status is worth retrying:
// timeouts, conflicts, rate limits and server errors.
func retryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return code >= 500
}

// transientTransport reports whether an error without any response is worth
// retrying. Connection failures, resets, EOFs and timeouts are; an unknown
// host and a certificate the client rejects are configuration errors that a
// retry cannot fix.
func transientTransport(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return !dns.IsNotFound
	}
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		invalid          x509.CertificateInvalidError
		verify           *tls.CertificateVerificationError
	)
	if errors.As(err, &unknownAuthority) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify) {
		return false
	}
	return true
}

// retryAfter reads the server's requested wait: retry-after-ms (OpenAI,
// Azure) first, then Retry-After in seconds (possibly fractional) or as an
// HTTP-date. Unparseable or past values mean no request.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && ms > 0 && !math.IsInf(ms, 0) {
			return durationOf(ms / 1000)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && !math.IsInf(s, 0) {
			return durationOf(s)
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// durationOf converts seconds to a Duration, saturating instead of
// overflowing on absurd values.
func durationOf(seconds float64) time.Duration {
	if seconds >= float64(math.MaxInt64)/float64(time.Second) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(seconds * float64(time.Second))
}

// backoff is the full-jitter wait before retry n (1-based): r, in [0, 1),
// times the exponential ceiling min(ceil, base*2^(n-1)).
func backoff(n int, base, ceil time.Duration, r float64) time.Duration {
	limit := ceil
	if n-1 < 62 && base <= ceil>>(n-1) {
		limit = base << (n - 1)
	}
	return time.Duration(r * float64(limit))
}
