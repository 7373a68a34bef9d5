package main

import (
	"fmt"
	"os"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/progress"
	"github.com/debate-runner/runner/runtime/view"
)

type viewCmd struct {
	Dir  string `arg:"" optional:"" name:"DIR" default:"runs" help:"Runs directory, or one run or sweep directory in it (default runs)."`
	Addr string `placeholder:"HOST:PORT" help:"Address to listen on (default 127.0.0.1:8642, or a free port when that one is taken). Another host than a loopback address makes the runs readable from the network."`
	Open bool   `negatable:"" default:"true" help:"Open the view in a browser (--no-open only prints its address)."`
	// Specs is the folder the start form lists specs from.
	Specs    string `placeholder:"DIR" help:"Folder of specs the view's start form offers (searched three levels deep), e.g. examples."`
	ReadOnly bool   `name:"read-only" help:"Only read: no starting, answering, cancelling or resuming runs from the page (needed to listen beyond this machine)."`
}

func (viewCmd) Help() string {
	return `Serves a web view of the runs in DIR and opens it in a browser: every run and
sweep with status, usage and first output (filter by spec and status); a run's
flow with the node that runs marked, its transcript by goal and round (whispers
marked, private thoughts on request, rejected replies shown), verdicts, charts,
usage and calls, live while it runs; a sweep's accuracy and calls; two runs
side by side. It serves nothing outside DIR, and listens on 127.0.0.1 unless
--addr says otherwise.

From the page you can also start a run, sweep or study of --specs DIR (inputs,
vars, models, offline among them, a budget, a dataset), answer a run's questions
or a seat's turn (the first answer, page or terminal, wins), cancel and resume. Each of these
needs the token in the address it prints (RUNNER_VIEW_TOKEN sets one, of 16
characters or more); --read-only turns them off. Ctrl-C stops it, and the
runs it started, which can be resumed.

Examples:
  runner view
  runner view runs/20261121T075339.896Z-hiring-panel-a12900
  runner view --specs examples
  runner view --addr 127.0.0.1:9000 --no-open
  runner view --addr 0.0.0.0:8642 --read-only`
}

func (c *viewCmd) Run(e *env) error {
	var act *view.Acting
	switch {
	case c.ReadOnly && c.Specs != "":
		return usageErrorf("--specs lists specs to start from the page, which --read-only turns off; drop one")
	case !c.ReadOnly:
		token := e.getenv("RUNNER_VIEW_TOKEN")
		if token == "" {
			var err error
			if token, err = view.NewToken(); err != nil {
				return err
			}
		} else if len(token) < view.MinTokenLen {
			return usageErrorf("RUNNER_VIEW_TOKEN has %d characters; give at least %d", len(token), view.MinTokenLen)
		}
		act = &view.Acting{Token: token, Specs: c.Specs, Getenv: e.getenv, Version: Version()}
		// Runs started from the page use the response cache as runner
		// run does.
		if err := openCache(e, "", &act.Cache); err != nil {
			return err
		}
	}
	return view.Serve(c.Dir, c.Addr, c.Open, e.getenv, nodes.Registry(), e.stderr, act)
}

// startView serves the view of the runs folder root (made when missing)
// on addr ("" for the default), warning on stderr when it is reachable
// from other machines.
func startView(e *env, root, addr string) (*view.Running, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, usageErrorf("--runs-dir %s: %v", root, err)
	}
	return view.Listen(root, addr, nodes.Registry(), func(msg string) { fmt.Fprintln(e.stderr, "runner: warning: "+msg) })
}

// show prints the address of a page of the view (v, nil for none) and
// opens it in a browser when asked and possible.
func show(e *env, v *view.Running, page string, open bool) {
	if v != nil {
		v.Show(e.stderr, e.getenv, page, open)
	}
}

// linger keeps the view (v, nil for none) up after a run when someone is
// watching at a terminal, until Ctrl-C; scripts go on at once.
func linger(e *env, v *view.Running) {
	if v != nil {
		v.Linger(e.stderr, progress.IsTerminal(e.stderr))
	}
}
