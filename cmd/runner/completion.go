package main

import (
	"fmt"

	"github.com/alecthomas/kong"

	"github.com/debate-runner/runner/internal/completion"
	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/scaffold"
	"github.com/debate-runner/runner/runtime/spectest"
)

type completionCmd struct {
	Shell string `arg:"" name:"SHELL" enum:"bash,zsh,fish" help:"bash, zsh or fish."`
}

func (completionCmd) Help() string {
	return `Prints a script that completes runner's commands, flags, spec files and run
folders in the shell, and the input and var names of the spec on the command
line after -i/--input and -s/--set, test case names after test --run, and
starting points after init --from. The script asks runner itself what to
offer, so it stays right as runner changes.

Examples:
  runner completion zsh > ~/.zfunc/_runner   # with fpath=(~/.zfunc $fpath) before compinit in ~/.zshrc
  runner completion fish > ~/.config/fish/completions/runner.fish
  source <(runner completion bash)                     # in ~/.bashrc`
}

func (c *completionCmd) Run(e *env) error {
	_, err := fmt.Fprint(e.stdout, completion.Script(c.Shell))
	return err
}

// completeCommand is the hidden command the scripts run: `runner
// __complete WORD...` prints what may follow, one candidate a line, for the
// last word (the one being completed, "" at a new word). It is answered
// before kong parses, so it is no command of the CLI.
const completeCommand = "__complete"

// complete answers `runner __complete WORD...`.
func complete(app *kong.Application, words []string, e *env) int {
	if len(words) == 0 {
		words = []string{""}
	}
	// go test's -run before the word being completed reads as --run.
	words = append(completion.GoTestFlags(words[:len(words)-1]), words[len(words)-1])
	for _, c := range completion.Candidates(app, words, commandValues) {
		fmt.Fprintln(e.stdout, c)
	}
	return exitcode.OK
}

// commandValues are the values of flags whose values a command knows:
// init's starting points, and the names of the cases test would run.
func commandValues(f *kong.Flag, cur string, args []string) ([]string, bool) {
	switch f.Name {
	case "from":
		return completion.Filter(scaffold.Names(), cur), true
	case "run":
		return completion.Filter(spectest.CaseIDs(args), cur), true
	}
	return nil, false
}
