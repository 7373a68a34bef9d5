//go:build race

package difffuzz

// raceSlowdown scales the run timeout under the race detector, which
// makes the engine several times slower.
const raceSlowdown = 5
