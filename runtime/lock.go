package runtime

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/gofrs/flock"
)

// ErrLocked means another process is working on the run directory.
var ErrLocked = errors.New("another runner process is working on this run")

// lockDir takes an exclusive lock on a run directory for as long as the
// process lives (or until Unlock), so that two processes never append to one
// journal: a second `runner resume` of a live run is refused. gofrs/flock
// locks with flock(2) on Unix and LockFileEx on Windows; the operating
// system drops the lock when the process dies, so a killed run leaves no
// stale lock behind.
func lockDir(dir string) (*flock.Flock, error) {
	l := flock.New(filepath.Join(dir, ".lock"))
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	if !ok {
		return nil, fmt.Errorf("%s: %w", dir, ErrLocked)
	}
	return l, nil
}
