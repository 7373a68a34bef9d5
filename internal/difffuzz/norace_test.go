//go:build !race

package difffuzz

const raceSlowdown = 1
