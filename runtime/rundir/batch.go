package rundir

import (
	"bufio"
	"errors"
	"io"
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
	// fill, set on the first file of a group queued by ReplaceWith,
	// writes the bytes of the group's files (group of them, this one and
	// those after it) in place of data, streamed to disk rather than made
	// whole in memory.
	fill  func([]io.Writer) error
	group int
	out   *os.File // open between write and sync
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

// ReplaceWith is Replace for files whose bytes fill writes, one writer per
// path in order, streamed to their temporary files as it makes them (a
// writer is buffered; fill need not flush it). The files of a batch are
// written at once, so fill may run while other files are written.
func (b *Batch) ReplaceWith(paths []string, fill func([]io.Writer) error) {
	for i, p := range paths {
		f := batchFile{path: p, tmp: "-"}
		if i == 0 {
			f.fill, f.group = fill, len(paths)
		}
		b.files = append(b.files, f)
	}
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
	// covers the entries of the files written in place; the files are
	// written at once.
	var writes []func() error
	for i := 0; i < len(files); i++ {
		if f := &files[i]; f.fill != nil {
			group := files[i : i+f.group]
			writes = append(writes, func() error { return writeGroup(group, f.fill) })
			i += f.group - 1
			continue
		}
		writes = append(writes, files[i].write)
	}
	if err := all(writes); err != nil {
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
		if fs[i].tmp != "" && fs[i].tmp != "-" { // "-": never created
			os.Remove(fs[i].tmp)
		}
	}
}

// write creates and writes one file, in place or to a new temporary file
// next to it (f.tmp is then set to its name), and leaves it open for sync.
func (f *batchFile) write() error {
	if err := f.create(); err != nil {
		return err
	}
	if _, err := f.out.Write(f.data); err != nil {
		f.out.Close()
		f.out = nil
		return err
	}
	return nil
}

// writeGroup creates the files of a group and has fill write them, and
// leaves them open for sync.
func writeGroup(fs []batchFile, fill func([]io.Writer) error) error {
	ws := make([]*bufio.Writer, len(fs))
	args := make([]io.Writer, len(fs))
	var err error
	for i := range fs {
		if err = fs[i].create(); err != nil {
			break
		}
		ws[i] = bufio.NewWriterSize(fs[i].out, 64<<10)
		args[i] = ws[i]
	}
	if err == nil {
		err = fill(args)
	}
	for i := 0; err == nil && i < len(ws); i++ {
		err = ws[i].Flush()
	}
	if err != nil {
		for i := range fs {
			if fs[i].out != nil {
				fs[i].out.Close()
				fs[i].out = nil
			}
		}
	}
	return err
}

// create creates a file of the batch, in place or as a new temporary file
// next to it (f.tmp is then set to its name), and leaves it open.
func (f *batchFile) create() error {
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
