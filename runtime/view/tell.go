package view

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/spec"
)

// Show prints on w the address of a page of the view, and opens it in a
// browser when asked and possible.
func (r *Running) Show(w io.Writer, getenv func(string) string, page string, open bool) {
	url := r.URL(page)
	if open && OpenBrowser(getenv, url) {
		fmt.Fprintf(w, "view: %s (opened in your browser)\n", url)
		return
	}
	fmt.Fprintf(w, "view: %s\n", url)
}

// Linger keeps the view up after a run when someone is watching at a
// terminal (watching), until Ctrl-C; scripts go on at once.
func (r *Running) Linger(w io.Writer, watching bool) {
	if !watching {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(w, "view: still serving %s; press Ctrl-C to stop\n", r.Base)
	<-ctx.Done()
}

// Serve is runner view: it serves the view of dir (a runs folder, or a run
// or sweep in one) on addr until Ctrl-C, printing its address on w (and
// warnings: see Listen) and opening its page in a browser when open.
//
// act, when set, lets the view start, answer, cancel and resume runs (see
// Acting); its token is in the address printed.
func Serve(dir, addr string, open bool, getenv func(string) string, reg *spec.Registry, w io.Writer, act *Acting) error {
	root, page, err := PageOf(dir)
	if err != nil {
		return err
	}
	// Ctrl-C stops the view from the moment its address is printed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	v, err := ListenActing(root, addr, reg, func(msg string) { fmt.Fprintln(w, "runner: warning: "+msg) }, act)
	if err != nil {
		return err
	}
	defer v.Stop()
	v.Show(w, getenv, page, open)
	fmt.Fprintln(w, "view: press Ctrl-C to stop")
	select {
	case <-ctx.Done():
	case err := <-v.Failed():
		return exitcode.With(exitcode.Failure, fmt.Errorf("view: %w", err))
	}
	return nil
}
