package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"time"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/view"
)

// defaultViewAddr is where the view listens unless told otherwise; when the
// port is taken, another free one on the same address is used.
const defaultViewAddr = "127.0.0.1:8642"

type viewCmd struct {
	Dir  string `arg:"" optional:"" name:"DIR" default:"runs" help:"Runs directory, or one run or sweep directory in it (default runs)."`
	Addr string `placeholder:"HOST:PORT" help:"Address to listen on (default 127.0.0.1:8642, or a free port when that one is taken). Another host than a loopback address makes the runs readable from the network."`
	Open bool   `negatable:"" default:"true" help:"Open the view in a browser (--no-open only prints its address)."`
}

func (viewCmd) Help() string {
	return `Serves a web view of the runs in DIR and opens it in a browser: every run and
sweep with status, usage and first output (filter by spec and status); a run's
flow with the node that runs marked, its transcript by goal and round (whispers
marked, private thoughts on request, rejected replies shown), verdicts, charts,
usage and calls, live while it runs; a sweep's accuracy and calls; two runs
side by side. The view only reads, and serves nothing outside DIR. It listens on
127.0.0.1 unless --addr says otherwise. Ctrl-C stops it.

Examples:
  runner view
  runner view runs/20261121T075339.896Z-hiring-panel-a12900
  runner view --addr 127.0.0.1:9000 --no-open`
}

func (c *viewCmd) Run(e *env) error {
	root, page := c.Dir, "/"
	if info, err := os.Stat(c.Dir); err != nil {
		return usageErrorf("%s: %v", c.Dir, errorsUnwrapPath(err))
	} else if !info.IsDir() {
		return usageErrorf("%s is not a directory", c.Dir)
	}
	// A run or sweep directory opens its own page, with the folder it is
	// in as the root.
	abs, err := filepath.Abs(c.Dir)
	if err != nil {
		return usageErrorf("%s: %v", c.Dir, err)
	}
	switch parent := filepath.Dir(abs); {
	case fileExists(filepath.Join(abs, "run.json")) && fileExists(filepath.Join(parent, "summary.json")):
		root, page = filepath.Dir(parent), "/run/"+filepath.Base(parent)+"/"+filepath.Base(abs)
	case fileExists(filepath.Join(abs, "run.json")):
		root, page = parent, "/run/"+filepath.Base(abs)
	case fileExists(filepath.Join(abs, "summary.json")):
		root, page = parent, "/sweep/"+filepath.Base(abs)
	}
	// Ctrl-C stops the view from the moment its address is printed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	v, err := startView(e, root, c.Addr)
	if err != nil {
		return err
	}
	defer v.stop()
	v.show(e, page, c.Open)
	fmt.Fprintln(e.stderr, "view: press Ctrl-C to stop")
	select {
	case <-ctx.Done():
	case err := <-v.failed:
		return exitcode.With(exitcode.Failure, fmt.Errorf("view: %w", err))
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// viewServer is a running view.
type viewServer struct {
	base   string // http://host:port
	srv    *http.Server
	cancel context.CancelFunc
	failed chan error
}

// startView serves the view of root on addr ("" for the default) and
// says where on stderr, warning when it is reachable from other machines.
func startView(e *env, root, addr string) (*viewServer, error) {
	v, err := view.New(root, nodes.Registry())
	if err != nil {
		return nil, usageErrorf("%s: %v", root, err)
	}
	fallback := addr == ""
	if fallback {
		addr = defaultViewAddr
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usageErrorf("--addr %s: %v (give HOST:PORT, e.g. 127.0.0.1:8642)", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil && fallback {
		ln, err = net.Listen("tcp", net.JoinHostPort(host, "0"))
	}
	if err != nil {
		return nil, usageErrorf("--addr %s: %v", addr, err)
	}
	if !loopback(host) {
		fmt.Fprintf(e.stderr, "runner: warning: the view listens on %s, so anyone who can reach this machine can read the runs in %s (prompts, replies, inputs); use 127.0.0.1 to keep them local\n", ln.Addr(), root)
	}
	v.Hosts = view.HostsFor(ln.Addr())
	ctx, cancel := context.WithCancel(context.Background())
	srv := &http.Server{Handler: v.Handler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	vs := &viewServer{srv: srv, cancel: cancel, failed: make(chan error, 1)}
	shown := ln.Addr().(*net.TCPAddr)
	switch {
	case shown.IP.IsUnspecified():
		vs.base = fmt.Sprintf("http://127.0.0.1:%d", shown.Port)
	default:
		vs.base = "http://" + ln.Addr().String()
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			vs.failed <- err
		}
	}()
	return vs, nil
}

// loopback reports whether a listening host keeps the view on this machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// show prints the address of a page of the view and opens it in a browser
// when asked and possible.
func (v *viewServer) show(e *env, page string, open bool) {
	url := v.base + "/#" + page
	if open && openBrowser(e, url) {
		fmt.Fprintf(e.stderr, "view: %s (opened in your browser)\n", url)
		return
	}
	fmt.Fprintf(e.stderr, "view: %s\n", url)
}

// linger keeps the view up after a run when someone is watching at a
// terminal, until Ctrl-C; scripts go on at once.
func (v *viewServer) linger(e *env) {
	if !isTerminal(e.stderr) {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(e.stderr, "view: still serving %s; press Ctrl-C to stop\n", v.base)
	<-ctx.Done()
}

func (v *viewServer) stop() {
	v.cancel() // ends the event streams, so that Shutdown need not wait
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = v.srv.Shutdown(ctx)
}

// openBrowser opens url with $BROWSER (none: never) or the system's
// opener; false when there is no way to.
func openBrowser(e *env, url string) bool {
	var cmd *exec.Cmd
	switch b := e.getenv("BROWSER"); {
	case b == "none":
		return false
	case b != "":
		fields := strings.Fields(b)
		cmd = exec.Command(fields[0], append(fields[1:], url)...)
	case goruntime.GOOS == "darwin":
		cmd = exec.Command("open", url)
	case goruntime.GOOS == "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		if e.getenv("DISPLAY") == "" && e.getenv("WAYLAND_DISPLAY") == "" {
			return false // no desktop to open it on
		}
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err != nil {
		return false
	}
	go func() { _ = cmd.Wait() }()
	return true
}
