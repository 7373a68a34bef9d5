// Package rundir is a run directory on disk: its unique name, the lock a
// process holds while it works on it, its manifest (run.json), and the
// atomic writes every file of it goes through, so that a reader never sees
// half a file. Runs and sweeps both use it.
package rundir

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"time"

	"github.com/gofrs/flock"
)

// Layouts of the time in directory names: runs to the millisecond, sweeps
// to the second.
const (
	RunTime   = "20060102T150405.000Z"
	SweepTime = "20060102T150405Z"
)

// Create makes a new directory under parent named prefix + ID, where ID is
// the time (in layout, UTC), the name (as Name spells it) and six random hex
// digits, and returns the ID and the directory's path. It never reuses a
// directory that exists.
func Create(parent, prefix, name, layout string, now time.Time) (id, dir string, err error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", "", fmt.Errorf("runs directory: %w", err)
	}
	for range 10 {
		var b [3]byte
		_, _ = rand.Read(b[:])
		id = fmt.Sprintf("%s-%s-%s", now.UTC().Format(layout), Name(name), hex.EncodeToString(b[:]))
		dir = filepath.Join(parent, prefix+id)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return id, dir, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", "", fmt.Errorf("run directory: %w", err)
		}
	}
	return "", "", errors.New("could not create a unique run directory")
}

// StagingSuffix ends the name of a run directory being set up: a hidden
// folder (".ID.partial") that becomes the run directory, whole, once
// everything a resume needs is in it (see CreateStaged).
const StagingSuffix = ".partial"

// CreateStaged is Create for a directory that appears whole: it makes a
// hidden staging folder next to where the directory will be, and returns
// both paths. The caller fills the staging folder and renames it into
// place with Publish, so that a process killed while setting a run up
// leaves no run directory that cannot be resumed, only a hidden folder
// that IsStaging recognises.
func CreateStaged(parent, prefix, name, layout string, now time.Time) (id, final, staging string, err error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", "", "", fmt.Errorf("runs directory: %w", err)
	}
	for range 10 {
		var b [3]byte
		_, _ = rand.Read(b[:])
		id = fmt.Sprintf("%s-%s-%s", now.UTC().Format(layout), Name(name), hex.EncodeToString(b[:]))
		final = filepath.Join(parent, prefix+id)
		staging = filepath.Join(parent, "."+prefix+id+StagingSuffix)
		if _, err := os.Lstat(final); err == nil {
			continue
		}
		err := os.Mkdir(staging, 0o755)
		if err == nil {
			return id, final, staging, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return "", "", "", fmt.Errorf("run directory: %w", err)
		}
	}
	return "", "", "", errors.New("could not create a unique run directory")
}

// Publish renames a staging folder into place and makes the rename
// durable.
func Publish(staging, final string) error {
	if err := os.Rename(staging, final); err != nil {
		return fmt.Errorf("run directory: %w", err)
	}
	return SyncDir(filepath.Dir(final))
}

// IsStaging reports whether dir is a run directory that was never set up
// whole (its process was killed while creating it).
func IsStaging(dir string) bool {
	base := filepath.Base(filepath.Clean(dir))
	return strings.HasPrefix(base, ".") && strings.HasSuffix(base, StagingSuffix)
}

// SyncDir makes the entries of a directory (files created or renamed in
// it) durable. Systems that cannot sync a directory are not an error.
func SyncDir(dir string) error {
	if goruntime.GOOS == "windows" {
		// Directories cannot be opened for sync there; NTFS journals the
		// entry itself.
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

// Name is a spec name as directory names spell it: letters, digits, '-'
// and '_' kept, anything else '-'.
func Name(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return "run"
	}
	return b.String()
}

// ErrLocked means another process is working on the run directory.
var ErrLocked = errors.New("another runner process is working on this run")

// Lock is a process's exclusive hold on a run directory.
type Lock struct{ f *flock.Flock }

// TakeLock takes an exclusive lock on a run directory, so that two
// processes never append to one journal: a second `runner resume` of a live
// run is refused with ErrLocked. The lock is held until Unlock or the end
// of the process; the operating system drops it when the process dies
// (flock(2) on Unix, LockFileEx on Windows, through gofrs/flock), so a
// killed run leaves no stale lock behind.
func TakeLock(dir string) (*Lock, error) {
	l := flock.New(filepath.Join(dir, ".lock"))
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	if !ok {
		return nil, fmt.Errorf("%s: %w", dir, ErrLocked)
	}
	return &Lock{f: l}, nil
}

// Unlock lets the directory go.
func (l *Lock) Unlock() error {
	if l == nil {
		return nil
	}
	return l.f.Unlock()
}

// WriteJSON writes v as indented JSON through WriteAtomic.
func WriteJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteFile(path, append(data, '\n'))
}

// WriteFile writes data through WriteAtomic.
func WriteFile(path string, data []byte) error {
	return WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteAtomic writes a file through a temporary file next to it, synced,
// and a rename, so a reader never sees a half-written file and a failed
// write leaves the old file (or none) in place.
func WriteAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	err = write(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		// The rename is durable only once the directory is synced: a crash
		// right after a run "completed" must not lose its result.json.
		err = SyncDir(filepath.Dir(path))
	}
	if err != nil {
		// Only a failed write leaves the temporary file behind.
		os.Remove(tmp.Name())
	}
	return err
}
