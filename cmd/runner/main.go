// Command runner runs multi-agent LLM debates described in YAML specs.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/alecthomas/kong"

	"github.com/debate-runner/runner/internal/buildinfo"
	"github.com/debate-runner/runner/internal/completion"
	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/runtime/progress"
	"github.com/debate-runner/runner/runtime/tracing"
	"github.com/debate-runner/runner/spec/syntax"
)

// usageErrorf is a problem with the command line: exit 2.
func usageErrorf(format string, args ...any) error {
	return exitcode.Errorf(exitcode.Usage, format, args...)
}

// env is what commands write to; tests replace it.
type env struct {
	stdout, stderr io.Writer
	stdin          io.Reader
	getenv         func(string) string
	// jsonLines is set by a command given --json: everything it writes to
	// stderr is then a JSON line (see say).
	jsonLines bool
	// tracer traces runs when OTEL_* variables ask for it (startTracing).
	tracer *tracing.Tracer
}

// say writes a line for the user on stderr: text, or under --json the
// same as a JSON line of the given type and data.
func (e *env) say(typ string, data any, text string) { e.teller().Say(typ, data, text) }

// teller is what the command tells its user on stderr with (see say).
func (e *env) teller() progress.Teller { return progress.Teller{W: e.stderr, JSON: e.jsonLines} }

type cli struct {
	VersionFlag kong.VersionFlag `name:"version" help:"Print the runner version, commit, spec language and Go version (as runner version does)."`

	Validate   validateCmd   `cmd:"" help:"Check specs: schema, references, templates and expressions."`
	Run        runCmd        `cmd:"" help:"Run a debate spec against an OpenAI-compatible endpoint."`
	Resume     resumeCmd     `cmd:"" help:"Continue a killed, failed or waiting run from its journal."`
	Runs       runsCmd       `cmd:"" help:"List runs (and the runs of sweeps) with status, usage and first output."`
	Compare    compareCmd    `cmd:"" help:"Compare runs or sweeps side by side: vars, outputs, scores, usage."`
	Export     exportCmd     `cmd:"" help:"Write a run or a sweep in another tool's format (Inspect's eval log)."`
	Dynamics   dynamicsCmd   `cmd:"" help:"How a debate moved: verdict changes, consensus, whispers and their effect, of a run or summed over a sweep."`
	Show       showCmd       `cmd:"" help:"Show a run's model calls, or one call: messages sent, reply, parsed output, repairs, retries, source, tokens, cost."`
	Study      studyCmd      `cmd:"" help:"Run specs x models over one dataset and compare each with a baseline in one table."`
	View       viewCmd       `cmd:"" help:"Watch and explore runs in a browser: a local web view, live while a run goes."`
	Cache      cacheCmd      `cmd:"" help:"Show or clear the response cache."`
	Test       testCmd       `cmd:"" help:"Run spec tests offline: scripted replies, assertions, golden prompts."`
	Init       initCmd       `cmd:"" help:"Start a project: a working spec, its test, .env.example and the schemas."`
	Graph      graphCmd      `cmd:"" help:"Draw the compiled flow of a spec (Mermaid or Graphviz dot)."`
	Schema     schemaCmd     `cmd:"" help:"Print the JSON Schema of spec files (for editors)."`
	Migrate    migrateCmd    `cmd:"" help:"Pin a spec's built-in template libraries to versions, so it means the same with later runners."`
	Version    versionCmd    `cmd:"" help:"Print the runner version."`
	Worker     workerCmd     `cmd:"" help:"Make runs submitted to Temporal (runner run --temporal): a worker of a Temporal cluster."`
	Completion completionCmd `cmd:"" help:"Print a shell completion script (bash, zsh or fish)."`
	Lsp        lspCmd        `cmd:"" help:"Serve the Language Server Protocol on stdio for editors: diagnostics, completion, hover, definitions."`
	McpDemo    mcpDemoCmd    `cmd:"" name:"mcp-demo" help:"Serve a tiny MCP server (add, lookup) over stdio or HTTP, for examples/mcp-tools."`
}

const description = `runner runs multi-agent LLM debates described in YAML.

A spec names agents, prompt templates, a graph of nodes and the conditions that
end its loops. 'runner validate' checks it without spending a token; 'runner run'
runs it against any OpenAI-compatible endpoint and leaves a replayable record.

Exit codes: 0 ok, 1 failure, 2 usage error, 3 model endpoint failure after
retries, 4 invalid spec, 5 run waiting for human input, 6 run stopped at its
budget, 7 a CI gate failed (--fail-under, compare --baseline), 8 the run
finished inconclusive (a goal without a verdict, an output from a fallback).

'runner help COMMAND' (or 'runner COMMAND --help') describes a command.

Examples:
  runner validate examples/*/spec.yaml
  runner graph examples/reasoning-debate/spec.yaml
  runner run examples/reasoning-debate/spec.yaml -i question="What is 12+7*3?"`

func main() {
	os.Exit(run(os.Args[1:], &env{stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin, getenv: os.Getenv}))
}

// run parses args, runs the command and returns the exit code.
func run(args []string, e *env) int {
	var c cli
	exitCode := -1
	parser, err := kong.New(&c,
		kong.Name("runner"),
		kong.Description(description),
		kong.UsageOnError(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, NoExpandSubcommands: true}),
		kong.Writers(e.stdout, e.stderr),
		kong.Exit(func(code int) { exitCode = code; panic(exitSignal{}) }),
		kong.BindTo(e, (*env)(nil)),
		kong.Vars{"version": buildinfo.With(version).String()},
	)
	if err != nil {
		fmt.Fprintln(e.stderr, "runner:", err)
		return exitcode.Failure
	}
	if len(args) > 0 && args[0] == completeCommand {
		return complete(parser.Model, args[1:], e)
	}
	if len(args) > 0 && args[0] == "help" {
		var err error
		if args, err = completion.HelpArgs(parser.Model, args[1:], syntax.DidYouMean); err != nil {
			fmt.Fprintf(e.stderr, "runner: %v\n", err)
			return exitcode.Usage
		}
	}
	code, done := parseArgs(parser, completion.GoTestFlags(args), e)
	if done {
		return code
	}
	if exitCode >= 0 {
		return exitCode
	}
	return code
}

type exitSignal struct{}

// parseArgs parses and runs, turning kong's exit calls (after --help) and
// errors into exit codes.
func parseArgs(parser *kong.Kong, args []string, e *env) (code int, done bool) {
	exitCalled := false
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(exitSignal); !ok {
				panic(r)
			}
			exitCalled = true
		}
		if exitCalled {
			done = false
		}
	}()
	if len(args) == 0 {
		args = []string{"--help"}
	}
	ctx, err := parser.Parse(args)
	if err != nil {
		fmt.Fprintf(e.stderr, "runner: %v\n", err)
		var pe *kong.ParseError
		if errors.As(err, &pe) {
			fmt.Fprintln(e.stderr, "Run 'runner --help' (or 'runner COMMAND --help') for usage.")
		}
		return exitcode.Usage, true
	}
	if err := ctx.Run(e); err != nil {
		// The error knows its exit code (see package exitcode).
		code := exitcode.Of(err)
		if err.Error() != "" {
			e.say("error", map[string]any{"message": err.Error(), "exit_code": code}, "runner: "+err.Error())
		}
		return code, true
	}
	return exitcode.OK, true
}
