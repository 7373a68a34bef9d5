package difffuzz

import (
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWorkersLeaveNoFolder: whichever workers the pool kills (as it does
// a hang, a dead worker or a check cut off at a campaign's deadline) and
// whichever it closes, no worker's folder is left in the temporary
// folder. A killed worker runs no deferred call, and an hour's campaign
// had left gigabytes of them behind.
func TestWorkersLeaveNoFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	n := 1 + rng.Intn(3)
	p := NewPool(os.Args[0], []string{"-test.run=^$"}, n, time.Minute)
	if err := p.Warm(); err != nil {
		t.Fatal(err)
	}
	// the workers are at work once each has copied the seeds into its
	// folder
	deadline := time.Now().Add(60 * time.Second)
	for {
		busy := 0
		dirs, _ := filepath.Glob(filepath.Join(tmp, "difffuzz-worker-*"))
		for _, d := range dirs {
			if entries, _ := os.ReadDir(d); len(entries) > 0 {
				busy++
			}
		}
		if busy >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d workers at work after 60 s", busy, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	killed := 0
	p.mu.Lock()
	all := append([]*worker(nil), p.all...)
	p.mu.Unlock()
	for _, w := range all {
		if rng.Intn(2) == 0 {
			w.kill()
			killed++
		}
	}
	p.mu.Lock()
	p.all = nil
	for _, w := range all {
		if w.cmd.ProcessState == nil {
			p.all = append(p.all, w)
		}
	}
	p.mu.Unlock()
	p.Close()
	if left, _ := filepath.Glob(filepath.Join(tmp, "difffuzz-worker-*")); len(left) > 0 {
		t.Errorf("%d workers (%d killed) left %d folders: %v", n, killed, len(left), left)
	}
}
