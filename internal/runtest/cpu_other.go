//go:build !unix

package runtest

import "time"

// CPUTime is unknown here: benchmarks that report CPU report zeros.
func CPUTime() (user, sys time.Duration) { return 0, 0 }
