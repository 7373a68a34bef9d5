package main

import (
	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/lsp"
)

type lspCmd struct {
	Stdio bool `help:"Speak over stdin and stdout (the default and only transport; accepted because editors pass it)."`
}

func (lspCmd) Help() string {
	return `Serves the Language Server Protocol over stdin and stdout for spec files,
for editors: diagnostics as you type from the same checks as runner validate
(on the unsaved text; MCP servers are not started), completion of keys with
their docs and of ids where a reference goes, hover, go to definition, find
references, document symbols, rename of an id and "did you mean" quick fixes.
Start it from the editor, not by hand: docs/editors.md shows VS Code, Neovim
and Helix.

Examples:
  runner lsp`
}

func (c *lspCmd) Run(e *env) error {
	if err := lsp.Serve(e.stdin, e.stdout, lsp.Options{Registry: nodes.Registry(), Debounce: lsp.DefaultDebounce, Interim: true}); err != nil {
		return exitcode.With(exitcode.Failure, err)
	}
	return nil
}
