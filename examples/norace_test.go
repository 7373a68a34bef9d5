//go:build !race

package examples

const raceDetector = false
