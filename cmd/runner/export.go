package main

import (
	"encoding/json"
	"fmt"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime/export"
	"github.com/debate-runner/runner/runtime/rundir"
)

type exportCmd struct {
	Format string `name:"format" enum:"inspect" required:"" help:"The format to write: inspect (Inspect's eval log, which its viewer, inspect view, opens)."`
	Dir    string `arg:"" name:"RUN" help:"A run directory (one sample) or a sweep directory (a sample per finished run)."`
	Output string `name:"output" short:"o" placeholder:"FILE" help:"Write the log to FILE (its name should end in .json for Inspect) instead of printing it."`
}

func (exportCmd) Help() string {
	return `Writes a run or a sweep in another tool's format. --format inspect writes
Inspect's eval log (JSON, version 2): the spec is the task, each run a sample
with the question as the user's message, every agent's message as an
assistant message (agent, node, round and record in its metadata), the outputs
as the completion, the score with the expected value as target, tokens per
model, and the accuracy over the scored samples. Put the file in a folder and
open it with inspect view --log-dir FOLDER.

Examples:
  runner export --format inspect runs/sweep-<id> -o logs/debate.json
  runner export --format inspect runs/<run-id>`
}

func (c *exportCmd) Run(e *env) error {
	log, err := export.Inspect(c.Dir)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	data, err := json.MarshalIndent(log, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if c.Output == "" {
		_, err = e.stdout.Write(data)
		return err
	}
	if err := rundir.WriteFile(c.Output, data); err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	return nil
}
