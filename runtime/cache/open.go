package cache

import (
	"os"

	"github.com/debate-runner/runner/internal/exitcode"
)

// OpenFor opens the cache a run uses: the one in dir (--cache-dir), or in
// the default folder when dir is empty. A cache that cannot be opened is a
// usage error when dir was given, else no cache (nil) and a warning; so is
// no home to put a default cache in (and then no warning).
func OpenFor(dir string, getenv func(string) string) (st *Store, warning, err error) {
	explicit := dir != ""
	if dir == "" {
		d, err := DefaultDir(getenv)
		if err != nil {
			return nil, err, nil
		}
		if dir = d; dir == "" {
			return nil, nil, nil
		}
	}
	st, err = Open(dir)
	if err != nil {
		if explicit {
			return nil, nil, exitcode.Errorf(exitcode.Usage, "--cache-dir %s: %v", dir, err)
		}
		return nil, err, nil
	}
	return st, nil, nil
}

// OpenExisting opens the cache in dir, or in the default folder when dir is
// empty, for the cache commands: an absent cache is nil (not created, so
// that they leave no folder behind), an unknown default a usage error.
func OpenExisting(dir string, getenv func(string) string) (*Store, error) {
	if dir == "" {
		d, err := DefaultDir(getenv)
		if err != nil {
			return nil, exitcode.Errorf(exitcode.Usage, "cache directory: %v", err)
		}
		if d == "" {
			return nil, exitcode.Errorf(exitcode.Usage, "no cache directory: set %s or give --cache-dir", EnvDir)
		}
		dir = d
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, nil
	}
	st, err := Open(dir)
	if err != nil {
		return nil, exitcode.With(exitcode.Failure, err)
	}
	return st, nil
}

// Where is the cache directory a command that makes runs uses besides
// its responses (runtime.LoadRemembering keeps path checks' verdicts in
// it): dir (--cache-dir), else the default folder; "" with noCache
// (--no-cache reads and writes nothing there) or no default known.
func Where(dir string, noCache bool, getenv func(string) string) string {
	if noCache {
		return ""
	}
	if dir == "" {
		dir, _ = DefaultDir(getenv)
	}
	return dir
}
