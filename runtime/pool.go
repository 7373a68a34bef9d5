package runtime

import (
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
