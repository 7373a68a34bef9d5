package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

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
	dir := c.RunDir
	if _, err := os.Stat(filepath.Join(dir, "run.json")); err != nil {
		alt := filepath.Join(c.RunsDir, c.RunDir)
		if _, err := os.Stat(filepath.Join(alt, "run.json")); err == nil {
			dir = alt
		}
	}
	run, err := callview.Read(dir)
	if err != nil {
		if errors.Is(err, callview.ErrNoRun) || errors.Is(err, os.ErrNotExist) {
			return usageErrorf("%s: not a run directory (no run.json), nor a run id in %s; 'runner runs %s' lists the runs", c.RunDir, c.RunsDir, c.RunsDir)
		}
		return err
	}
	// A --replay run did not ask its replayed calls: their requests are
	// the recording's, when it is still where the run found it.
	if rec := run.RecordingDir("."); rec != "" {
		if recorded, err := callview.Read(rec); err == nil {
			run.FillFromRecording(recorded)
		}
	}
	if c.Call == "" {
		if c.JSON {
			return writeJSONOut(e, map[string]any{"run_id": run.ID, "spec": run.Spec, "dir": run.Dir, "calls": run.Summaries()})
		}
		return callview.WriteList(e.stdout, run)
	}
	call, err := run.Find(c.Call)
	if err != nil {
		return usageErrorf("%v", err)
	}
	if c.JSON {
		return writeJSONOut(e, call)
	}
	return callview.Write(e.stdout, call)
}

func writeJSONOut(e *env, v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
