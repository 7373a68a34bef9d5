// Command mcptest is the tiny MCP server of internal/mcptest: over stdio by
// default, or streamable HTTP with -http ADDR (path /mcp).
//
//	go run ./internal/mcptest/cmd/mcptest               # stdio
//	go run ./internal/mcptest/cmd/mcptest -http 127.0.0.1:8931
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"

	"github.com/debate-runner/runner/internal/mcptest"
)

func main() {
	addr := flag.String("http", "", "serve streamable HTTP on this address (path /mcp) instead of stdio")
	count := flag.String("count", os.Getenv("MCPTEST_COUNT"), "append the name of each tool called to this file")
	token := flag.String("token-env", "", "with -http, require Authorization: Bearer $VALUE of this environment variable")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *addr == "" {
		if err := mcptest.ServeStdio(ctx, *count); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "mcptest:", err)
			os.Exit(1)
		}
		return
	}
	tok := ""
	if *token != "" {
		tok = os.Getenv(*token)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcptest.Handler(mcptest.Options{}, tok))
	fmt.Fprintf(os.Stderr, "mcptest: serving http://%s/mcp\n", *addr)
	srv := &http.Server{Addr: *addr, Handler: mux}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.ListenAndServe(); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		os.Exit(1)
	}
}
