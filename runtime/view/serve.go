package view

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime/args"
	"github.com/debate-runner/runner/spec"
)

// This file runs the view on a port for runner view and runner run --view:
// where it listens, the page a directory opens, and the browser it opens in.

// DefaultAddr is where the view listens unless told otherwise; when the
// port is taken, another free one on the same address is used.
const DefaultAddr = "127.0.0.1:8642"

// Running is a view serving on a port.
type Running struct {
	// Base is the view's address, http://host:port.
	Base   string
	srv    *http.Server
	view   *Server
	cancel context.CancelFunc
	failed chan error
	// token, when the view acts, is in the address it prints and opens.
	token string
}

// Listen serves the view of root on addr ("" for DefaultAddr, or a free
// port of its host when that one is taken). warn is told when the view is
// reachable from other machines. Bad addresses are usage errors.
func Listen(root, addr string, reg *spec.Registry, warn func(string)) (*Running, error) {
	return ListenActing(root, addr, reg, warn, nil)
}

// ListenActing is Listen for a view that also acts as act says (nil: it
// only reads). A view that acts listens on this machine only: it has no
// TLS, and its token would cross the network in clear.
func ListenActing(root, addr string, reg *spec.Registry, warn func(string), act *Acting) (*Running, error) {
	v, err := New(root, reg)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "%s: %v", root, err)
	}
	fallback := addr == ""
	if fallback {
		addr = DefaultAddr
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "--addr %s: %v (give HOST:PORT, e.g. 127.0.0.1:8642)", addr, err)
	}
	if act != nil && !loopback(host) {
		return nil, exitcode.Errorf(exitcode.Usage, "--addr %s is reachable from other machines, and a view that starts and answers runs has no TLS: its token would cross the network in clear. Listen on 127.0.0.1 (and reach it through an SSH tunnel), or add --read-only to serve the runs for reading only", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil && fallback {
		ln, err = net.Listen("tcp", net.JoinHostPort(host, "0"))
	}
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Usage, "--addr %s: %v", addr, err)
	}
	if !loopback(host) {
		warn(fmt.Sprintf("the view listens on %s, so anyone who can reach this machine can read the runs in %s (prompts, replies, inputs); use 127.0.0.1 to keep them local", ln.Addr(), root))
	}
	v.Hosts = HostsFor(ln.Addr())
	r := &Running{view: v, failed: make(chan error, 1)}
	if act != nil {
		if err := v.Act(*act); err != nil {
			_ = ln.Close()
			return nil, exitcode.With(exitcode.Usage, err)
		}
		r.token = act.Token
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := &http.Server{Handler: v.Handler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	r.srv, r.cancel = srv, cancel
	shown := ln.Addr().(*net.TCPAddr)
	switch {
	case shown.IP.IsUnspecified():
		r.Base = fmt.Sprintf("http://127.0.0.1:%d", shown.Port)
	default:
		r.Base = "http://" + ln.Addr().String()
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.failed <- err
		}
	}()
	return r, nil
}

// loopback reports whether a listening host keeps the view on this machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// URL is the address of a page of the view; a view that acts puts its
// token in it (the page keeps it and takes it out of the address bar).
func (r *Running) URL(page string) string {
	if r.token != "" {
		return r.Base + "/?token=" + r.token + "#" + page
	}
	return r.Base + "/#" + page
}

// Failed tells when the view stopped serving on its own.
func (r *Running) Failed() <-chan error { return r.failed }

// Stop stops serving.
func (r *Running) Stop() {
	r.cancel() // ends the event streams, so that Shutdown need not wait
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
	// The runs the view started stop as killed runs do: resumable.
	r.view.Close()
}

// PageOf is the root a directory given to runner view is served from and
// the page it opens: a run, sweep or study directory opens its own page,
// with the folder it is in as the root; a runs folder the list.
func PageOf(dir string) (root, page string, err error) {
	if info, err := os.Stat(dir); err != nil {
		return "", "", exitcode.Errorf(exitcode.Usage, "%s: %v", dir, args.UnwrapPathError(err))
	} else if !info.IsDir() {
		return "", "", exitcode.Errorf(exitcode.Usage, "%s is not a directory", dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", exitcode.Errorf(exitcode.Usage, "%s: %v", dir, err)
	}
	switch parent, grand := filepath.Dir(abs), filepath.Dir(filepath.Dir(abs)); {
	case fileExists(filepath.Join(abs, "run.json")) && fileExists(filepath.Join(parent, "summary.json")) && fileExists(filepath.Join(grand, "study.json")):
		return filepath.Dir(grand), "/run/" + filepath.Base(grand) + "/" + filepath.Base(parent) + "/" + filepath.Base(abs), nil
	case fileExists(filepath.Join(abs, "run.json")) && fileExists(filepath.Join(parent, "summary.json")):
		return filepath.Dir(parent), "/run/" + filepath.Base(parent) + "/" + filepath.Base(abs), nil
	case fileExists(filepath.Join(abs, "run.json")):
		return parent, "/run/" + filepath.Base(abs), nil
	case fileExists(filepath.Join(abs, "summary.json")) && fileExists(filepath.Join(parent, "study.json")):
		return filepath.Dir(parent), "/sweep/" + filepath.Base(parent) + "/" + filepath.Base(abs), nil
	case fileExists(filepath.Join(abs, "summary.json")):
		return parent, "/sweep/" + filepath.Base(abs), nil
	case fileExists(filepath.Join(abs, "study.json")):
		return parent, "/study/" + filepath.Base(abs), nil
	}
	return dir, "/", nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// OpenBrowser opens url with $BROWSER (none: never) or the system's
// opener; false when there is no way to.
func OpenBrowser(getenv func(string) string, url string) bool {
	var cmd *exec.Cmd
	switch b := getenv("BROWSER"); {
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
		if getenv("DISPLAY") == "" && getenv("WAYLAND_DISPLAY") == "" {
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
