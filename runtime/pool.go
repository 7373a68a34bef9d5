package runtime

import (
	"fmt"

	"github.com/debate-runner/runner/runtime/calls"
	"github.com/debate-runner/runner/runtime/connect"
)

// ClientPool holds the endpoint clients of one or more runs (see
// connect.Pool): runs that share one (a sweep's) share endpoint limits and
// identical calls in flight.
type ClientPool = connect.Pool

// NewClientPool returns an empty pool.
func NewClientPool() *ClientPool { return connect.NewPool() }

// CallCounts say where a run's model calls were answered from.
type CallCounts = calls.Counts

// writeBehind are the replies on their way into the response cache (see
// connect.WriteBehind).
type writeBehind = connect.WriteBehind

// CallCounts returns where the run's calls were answered from so far.
func (r *Run) CallCounts() CallCounts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.callCounts
}

// countCall notes where a call was answered from ("" is the network).
func (r *Run) countCall(source string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch source {
	case "":
		r.callCounts.Network++
	case "cache":
		r.callCounts.Cache++
	case "shared":
		r.callCounts.Shared++
	case "replay":
		r.callCounts.Replay++
	case "journal":
		r.callCounts.Journal++
	case "human":
		r.callCounts.Human++
	}
}

// sampleKey is the sample discriminator of a call's cache key: the call key,
// extended by the sample index of a repeated run so repeats draw new samples.
func (r *Run) sampleKey(callKey string) string {
	if r.opts.Sample > 0 {
		return fmt.Sprintf("%s#sample%d", callKey, r.opts.Sample)
	}
	return callKey
}
