package view

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
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
