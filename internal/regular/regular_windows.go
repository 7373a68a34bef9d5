//go:build windows

package regular

import (
	"io/fs"
	"os"
	"syscall"
)

// Windows has no FIFOs in the file system; a plain open cannot block.
func openNoBlock(path string) (*os.File, error) { return os.Open(path) }

func links(f *os.File, _ fs.FileInfo) uint64 {
	var d syscall.ByHandleFileInformation
	if syscall.GetFileInformationByHandle(syscall.Handle(f.Fd()), &d) != nil {
		return 0
	}
	return uint64(d.NumberOfLinks)
}
