package main

import (
	"github.com/debate-runner/runner/runtime/callview"
)

type showCmd struct {
	RunDir  string `arg:"" name:"RUN" help:"A run directory, or a run id in --runs-dir."`
	Call    string `arg:"" optional:"" name:"CALL" help:"A call key (e.g. propose/round=1/alice) or its number in the list. Without it, the run's calls are listed."`
	JSON    bool   `name:"json" help:"Print JSON instead of text."`
	RunsDir string `name:"runs-dir" default:"runs" placeholder:"DIR" help:"Where to look for a run given by its id."`
}

func (showCmd) Help() string {
	return `Without CALL, lists the model calls of a run: key, agent, where the reply
came from (network, cache, shared, replay, journal), tokens, latency, cost,
retries and repairs. With CALL, shows that call: every message it sent (role,
name, tool calls; the texts when the run logged them with --log-prompts, or
when the same text is elsewhere in the journal), the raw reply, the fields
parsed from it, its retries, repairs and rejections with their reasons,
tools it ran, tokens, cached tokens, cost and latency. Everything is read
from the run directory; nothing is sent anywhere. 'runner view' shows the
same on a call's page.

Examples:
  runner show runs/<run-id>
  runner show runs/<run-id> judge/round=2/judge
  runner show <run-id> 3 --json`
}

func (c *showCmd) Run(e *env) error {
	return callview.Show(e.stdout, c.RunDir, c.RunsDir, c.Call, c.JSON)
}
