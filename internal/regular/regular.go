// Package regular opens files that must be regular files (inputs given
// as @PATH, --context FILE, the files tools read) without ever blocking
// on a FIFO or streaming from a device, and tells how many names a file
// has (its hard links).
package regular

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Open opens path for reading if it is a regular file. The check is made
// on the opened file (a path swapped for a FIFO after a Stat is caught),
// and the open itself does not wait for a FIFO's writer where the
// platform can say so (O_NONBLOCK).
func Open(path string) (*os.File, fs.FileInfo, error) {
	if info, err := os.Stat(path); err == nil && !info.Mode().IsRegular() && !info.IsDir() {
		return nil, nil, &NotRegularError{Path: path, Mode: info.Mode()}
	}
	f, err := openNoBlock(path)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegularError{Path: path, Mode: info.Mode()}
	}
	return f, info, nil
}

// ReadFile reads a regular file whole, refusing anything else.
func ReadFile(path string) ([]byte, error) {
	f, _, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// NotRegularError is a path that is not a regular file.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	if e.Mode.IsDir() {
		return fmt.Sprintf("%s is a folder, not a file", e.Path)
	}
	return fmt.Sprintf("%s is not a regular file (%s); only regular files can be read", e.Path, Kind(e.Mode))
}

// Kind names what a file that is not a regular file is.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// Links is how many names (hard links) the opened file f has; 1 where the
// platform cannot tell.
func Links(f *os.File, info fs.FileInfo) uint64 {
	if n := links(f, info); n > 0 {
		return n
	}
	return 1
}
