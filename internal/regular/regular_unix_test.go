//go:build unix

package regular

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// within fails the test when f takes longer than a few seconds: what it
// guards against is an open that waits forever on a FIFO.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s blocked", what)
	}
}

// TestFIFOIsRefusedWithoutBlocking: a FIFO nobody writes to is refused by
// Open and ReadFile, and the non-blocking open itself returns at once (a
// file swapped for a FIFO after the Stat is caught by the check on the
// open file, not waited on).
func TestFIFOIsRefusedWithoutBlocking(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatalf("making a FIFO: %v", err)
	}
	within(t, "ReadFile of a FIFO", func() {
		_, err := ReadFile(fifo)
		var nr *NotRegularError
		if !errors.As(err, &nr) || nr.Mode&os.ModeNamedPipe == 0 {
			t.Errorf("ReadFile(FIFO) = %v; want a NotRegularError naming a named pipe", err)
		}
	})
	within(t, "the non-blocking open of a FIFO", func() {
		f, err := openNoBlock(fifo)
		if err != nil {
			t.Errorf("openNoBlock: %v", err)
			return
		}
		f.Close()
	})
	if _, err := ReadFile("/dev/null"); err == nil {
		t.Error("ReadFile(/dev/null) read a device")
	}
}

// TestLinksCountsHardLinks: a file with a second name has two links.
func TestLinksCountsHardLinks(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(a, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	count := func() uint64 {
		f, info, err := Open(a)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return Links(f, info)
	}
	if n := count(); n != 1 {
		t.Errorf("links before = %d, want 1", n)
	}
	if err := os.Link(a, b); err != nil {
		t.Skipf("hard links not supported here: %v", err)
	}
	if n := count(); n != 2 {
		t.Errorf("links after os.Link = %d, want 2", n)
	}
}
