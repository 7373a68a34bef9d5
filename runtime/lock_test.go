package runtime

import (
	"context"
	"errors"
	"testing"

	"github.com/debate-runner/runner/runtime/launch"

	"github.com/debate-runner/runner/internal/llmtest"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/rundir"
)

// TestResumeOfALiveRunRefused: while a run works on its directory, resuming
// it is refused; once it has finished, the lock is gone.
func TestResumeOfALiveRunRefused(t *testing.T) {
	srv := llmtest.New(t, keyed(answerOf))
	plan := simpleSpec(t, "")
	r, err := Start(plan, Options{
		Launch:   launch.Launch{Given: launch.Given{Inputs: []string{"question=q"}}},
		Settings: Settings{RunsDir: t.TempDir(), Getenv: envFor(srv.URL)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Resume(r.Dir, nodes.Registry(), Options{Settings: Settings{Getenv: envFor(srv.URL)}}); !errors.Is(err, rundir.ErrLocked) {
		t.Fatalf("resume of a live run: %v, want ErrLocked", err)
	}
	if _, err := r.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := rundir.TakeLock(r.Dir); err != nil {
		t.Errorf("the finished run still holds its lock: %v", err)
	}
}
