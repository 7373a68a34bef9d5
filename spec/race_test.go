//go:build race

package spec_test

// raceEnabled: the race detector slows compiles about tenfold; property
// tests check fewer generated cases under it.
const raceEnabled = true
