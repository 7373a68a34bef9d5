package view

import (
	"os"
	"syscall"
)

// inode is a file's inode number, which /proc/locks names locks by.
func inode(info os.FileInfo) (uint64, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Ino, true
}
