package progress

import (
	"io"
	"os"

	"golang.org/x/term"

	"github.com/debate-runner/runner/runtime"
)

// For is the progress display a command's flags ask for on w: JSON lines
// (--json), nothing (--quiet), plain lines (--verbose, or w is no
// terminal), else the live line, as wide as the terminal.
func For(w io.Writer, quiet, verbose, asJSON bool) func(runtime.Notice) {
	mode := Plain
	opts := Options{}
	switch {
	case asJSON:
		mode = JSON
	case quiet:
		mode = Quiet
	case verbose:
		mode = Plain
	case IsTerminal(w):
		mode = Live
		f := w.(*os.File)
		opts.Width = func() int {
			width, _, err := term.GetSize(int(f.Fd()))
			if err != nil {
				return 0
			}
			return width
		}
	}
	return New(w, mode, opts)
}

// IsTerminal reports whether v (a reader or writer) is a terminal someone
// may be at.
func IsTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	if err != nil || info.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	// /dev/null is a character device too, and what stdin is in CI and
	// cron jobs: nobody is there to answer.
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(info, null)
}
