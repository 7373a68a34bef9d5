//go:build !race

package difffuzz

const raceSlowdown = 1

const defaultMutants = 24
