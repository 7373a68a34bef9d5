//go:build race

package difffuzz

// raceSlowdown scales the run timeout under the race detector, which
// makes the engine several times slower.
const raceSlowdown = 5

// defaultMutants is TestDifferential's number of mutants in a plain
// `go test`: fewer under the race detector, where each costs five times
// as much (the timed runs, RUNNER_FUZZ_TIME, are where the fuzzing is).
const defaultMutants = 12
