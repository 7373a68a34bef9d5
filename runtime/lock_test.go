package runtime

import (
	"context"
	"errors"
	"testing"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
)

// TestLockDir: a run directory is locked by one holder at a time, and free
// again once the holder lets go.
func TestLockDir(t *testing.T) {
	dir := t.TempDir()
	first, err := lockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockDir(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: %v, want ErrLocked", err)
	}
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	again, err := lockDir(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	_ = again.Unlock()
}

// TestResumeOfALiveRunRefused: while a run works on its directory, resuming
// it is refused; once it has finished, the lock is gone.
func TestResumeOfALiveRunRefused(t *testing.T) {
	srv := llmtest.New(t, keyed(answerOf))
	plan := simpleSpec(t, "")
	r, err := Start(plan, Options{RunsDir: t.TempDir(), Inputs: []string{"question=q"}, Getenv: envFor(srv.URL)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Resume(r.Dir, nodes.Registry(), Options{Getenv: envFor(srv.URL)}); !errors.Is(err, ErrLocked) {
		t.Fatalf("resume of a live run: %v, want ErrLocked", err)
	}
	if _, err := r.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := lockDir(r.Dir); err != nil {
		t.Errorf("the finished run still holds its lock: %v", err)
	}
}
