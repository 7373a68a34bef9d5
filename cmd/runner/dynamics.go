package main

import (
	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime/dynamics"
)

type dynamicsCmd struct {
	Dir  string `arg:"" name:"RUN" help:"A run directory, or a sweep directory (summed over its finished runs)."`
	JSON bool   `name:"json" help:"Print the dynamics as JSON: each thread, each run's whisper graph, the totals."`
}

func (dynamicsCmd) Help() string {
	return `For each thread (a node on one goal) of a finished run, or summed over a
sweep: verdict changes with their turns, consensus and the turn it formed
(forced verdicts marked), and how often a whisper or a public message to one
agent was followed by a change of the addressee's verdict, or by the sender's.
Terms: docs/experiments.md (Debate dynamics).

Examples:
  runner dynamics runs/<run-id>
  runner dynamics runs/sweep-<id> --json`
}

func (c *dynamicsCmd) Run(e *env) error {
	rep, err := dynamics.Read(c.Dir)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	return rep.Write(e.stdout, c.JSON)
}
