package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// Batch writes several files and makes them durable together: their
// fsyncs run at once, so the file system commits them in one go rather
// than one after the other (each fsync of a new file costs a journal
// commit, a few milliseconds), and each folder is synced once, after
// every entry in it is in place.
//
// In a folder nobody reads yet (a run's staging folder, see CreateStaged)
// files are written in place (Stage); elsewhere through a temporary file
// and a rename (Replace), so a reader never sees half a file.
type Batch struct {
	files []batchFile
	dirs  []string
}

type batchFile struct {
	path string // where the file ends up
	tmp  string // the temporary file renamed to path, "" when written in place
	data []byte
}

// Stage queues data to be written to path in place. Use it only in a
// folder no reader sees before Sync returns.
func (b *Batch) Stage(path string, data []byte) {
	b.files = append(b.files, batchFile{path: path, data: data})
}

// Folder queues a folder to be synced with the files' folders, for one
// made to hold folders.
func (b *Batch) Folder(dir string) { b.dirs = append(b.dirs, dir) }

// Replace queues data to replace path through a temporary file, renamed
// into place once every file of the batch is durable, in the order the
// files were queued.
func (b *Batch) Replace(path string, data []byte) {
	b.files = append(b.files, batchFile{path: path, tmp: "-", data: data})
}

// Sync writes the queued files, syncs them all at once, renames the
// replaced ones into place and syncs their folders. On an error the
// temporary files are removed; files written in place may remain.
func (b *Batch) Sync() error {
	files, extra := b.files, b.dirs
	b.files, b.dirs = nil, nil
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = files[i].write()
		}()
	}
	wg.Wait()
	err := errors.Join(errs...)
	dirs := map[string]bool{}
	for _, d := range extra {
		dirs[d] = true
	}
	for _, f := range files {
		dirs[filepath.Dir(f.path)] = true
		if f.tmp == "" {
			continue
		}
		if err == nil {
			err = os.Rename(f.tmp, f.path)
		}
		if err != nil {
			os.Remove(f.tmp)
		}
	}
	if err != nil {
		return err
	}
	names := make([]string, 0, len(dirs))
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	errs = make([]error, len(names))
	for i, d := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = SyncDir(d)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// write writes and syncs one file: in place, or to a new temporary file
// next to it (f.tmp is then set to its name).
func (f *batchFile) write() error {
	var out *os.File
	var err error
	if f.tmp == "" {
		out, err = os.OpenFile(f.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	} else {
		f.tmp = ""
		out, err = os.CreateTemp(filepath.Dir(f.path), "."+filepath.Base(f.path)+".tmp*")
		if err == nil {
			f.tmp = out.Name()
		}
	}
	if err != nil {
		return err
	}
	_, err = out.Write(f.data)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
