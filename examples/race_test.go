//go:build race

package examples

// raceDetector is true in a test binary built with -race, where the
// engine runs several times slower.
const raceDetector = true
