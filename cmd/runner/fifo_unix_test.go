//go:build unix

package main

import (
	"syscall"
	"testing"
)

// mkfifo makes a named pipe at path, which nobody writes to.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatalf("making a FIFO: %v", err)
	}
}
