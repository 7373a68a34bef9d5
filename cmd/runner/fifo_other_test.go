//go:build !unix

package main

import "testing"

// mkfifo skips the test: named pipes in the file system are Unix's.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	t.Skipf("no named pipe at %s: this system has none in its file system", path)
}
