package main

import (
	"context"
	"os/signal"
	"syscall"

	"github.com/debate-runner/runner/internal/mcptest"
)

type mcpDemoCmd struct {
	HTTP string `name:"http" placeholder:"ADDR" help:"Serve streamable HTTP at http://ADDR/mcp instead of stdio."`
}

func (mcpDemoCmd) Help() string {
	return `Serves a tiny MCP server with the tools add (two numbers), lookup (a fact
by key), sleep and crash, for examples/mcp-tools and for trying mcp_servers:.
Over stdio by default: a spec starts it with command: runner (this binary) and
args: [mcp-demo].

Examples:
  runner mcp-demo
  runner mcp-demo --http 127.0.0.1:8931`
}

func (c *mcpDemoCmd) Run(e *env) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if c.HTTP == "" {
		err := mcptest.ServeStdio(ctx, "")
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	return mcptest.ServeHTTP(ctx, c.HTTP, e.stderr)
}
