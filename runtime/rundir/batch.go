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
	files batchFiles
	dirs  []string
	also  []func() error
}

type batchFile struct {
	path string // where the file ends up
	tmp  string // the temporary file renamed to path, "" when written in place
	data []byte
	out  *os.File // open between write and sync
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

// Also queues fn to run while the files are synced, for another file that
// must be durable with them (a journal's first lines).
func (b *Batch) Also(fn func() error) { b.also = append(b.also, fn) }

// Sync writes the queued files, syncs them all at once, renames the
// replaced ones into place and syncs their folders. The folders of files
// written in place are synced with the files, since their entries exist
// before any sync begins; the folders of replaced files once the renames
// are done. On an error the temporary files are removed; files written in
// place may remain.
func (b *Batch) Sync() error {
	files, extra, also := b.files, b.dirs, b.also
	b.files, b.dirs, b.also = nil, nil, nil
	// Every file is created and written first, so that syncing a folder
	// covers the entries of the files written in place.
	errs := make([]error, len(files))
	for i := range files {
		errs[i] = files[i].write()
	}
	if err := errors.Join(errs...); err != nil {
		files.discard()
		return err
	}
	now := map[string]bool{}   // folders synced with the files
	later := map[string]bool{} // folders synced after the renames
	for _, d := range extra {
		now[d] = true
	}
	for _, f := range files {
		if f.tmp == "" {
			now[filepath.Dir(f.path)] = true
		}
	}
	for _, f := range files {
		if d := filepath.Dir(f.path); f.tmp != "" {
			later[d], now[d] = true, false
		}
	}
	var tasks []func() error
	for i := range files {
		tasks = append(tasks, files[i].sync)
	}
	tasks = append(tasks, also...)
	tasks = append(tasks, folderSyncs(now)...)
	if err := all(tasks); err != nil {
		files.discard()
		return err
	}
	for i, f := range files {
		if f.tmp == "" {
			continue
		}
		if err := os.Rename(f.tmp, f.path); err != nil {
			files[i:].discard()
			return err
		}
	}
	return all(folderSyncs(later))
}

// folderSyncs are the syncs of the folders set in dirs, in order.
func folderSyncs(dirs map[string]bool) []func() error {
	var names []string
	for d, ok := range dirs {
		if ok {
			names = append(names, d)
		}
	}
	sort.Strings(names)
	out := make([]func() error, len(names))
	for i, d := range names {
		out[i] = func() error { return SyncDir(d) }
	}
	return out
}

// all runs tasks at once and returns their errors.
func all(tasks []func() error) error {
	errs := make([]error, len(tasks))
	var wg sync.WaitGroup
	for i, task := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = task()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

type batchFiles []batchFile

// discard closes the files still open and removes the temporary files not
// renamed yet.
func (fs batchFiles) discard() {
	for i := range fs {
		if fs[i].out != nil {
			fs[i].out.Close()
			fs[i].out = nil
		}
		if fs[i].tmp != "" {
			os.Remove(fs[i].tmp)
		}
	}
}

// write creates and writes one file, in place or to a new temporary file
// next to it (f.tmp is then set to its name), and leaves it open for sync.
func (f *batchFile) write() error {
	var err error
	if f.tmp == "" {
		f.out, err = os.OpenFile(f.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	} else {
		f.tmp = ""
		f.out, err = os.CreateTemp(filepath.Dir(f.path), "."+filepath.Base(f.path)+".tmp*")
		if err == nil {
			f.tmp = f.out.Name()
		}
	}
	if err != nil {
		return err
	}
	if _, err = f.out.Write(f.data); err != nil {
		f.out.Close()
		f.out = nil
	}
	return err
}

// sync syncs and closes a written file.
func (f *batchFile) sync() error {
	err := f.out.Sync()
	if cerr := f.out.Close(); err == nil {
		err = cerr
	}
	f.out = nil
	return err
}
