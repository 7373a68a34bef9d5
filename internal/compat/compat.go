// Package compat holds the compatibility corpus: the examples of earlier
// commits of this repository (testdata/COMMIT/examples), with what the
// runner of each commit sent for every spec and how its run ended
// (testdata/COMMIT/corpus.json). Its test runs today's runner on each and
// asserts that it sends the same requests and ends the same way, or that
// CHANGELOG.md names the change with the way back.
package compat
