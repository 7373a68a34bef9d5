package main

import (
	"encoding/json"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime/dynamics"
)

type dynamicsCmd struct {
	Dir  string `arg:"" name:"RUN" help:"A run directory, or a sweep directory (summed over its finished runs)."`
	JSON bool   `name:"json" help:"Print the dynamics as JSON: each thread, each run's whisper graph, the totals."`
}

func (dynamicsCmd) Help() string {
	return `Reads how a debate moved from a finished run's record (result.json), or from
every finished run of a sweep: for each thread (a node on one goal), each
participant's verdict changes with their turns, whether the participants
ended agreeing and from which turn, and the most held verdict when they did
not; whispers and public messages addressed to one agent, and how often the
addressee's next verdict changed, or took the sender's verdict. A consensus
reached with verdicts the conversation forced is marked. The definitions are
in docs/experiments.md (Debate dynamics).

Examples:
  runner dynamics runs/<run-id>
  runner dynamics runs/sweep-<id> --json`
}

func (c *dynamicsCmd) Run(e *env) error {
	rep, err := dynamics.Read(c.Dir)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	if !c.JSON {
		return rep.WriteText(e.stdout)
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	_, err = e.stdout.Write(append(data, '\n'))
	return err
}
