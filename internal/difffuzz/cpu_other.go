//go:build !unix

package difffuzz

import "time"

var cpuEpoch = time.Now()

// processCPU is wall time where the process's CPU time is not read: the
// watchdog then measures what it did before (wall time).
func processCPU() time.Duration { return time.Since(cpuEpoch) }
