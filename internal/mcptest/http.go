package mcptest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
)

// ServeHTTP serves streamable HTTP at http://addr/mcp until ctx ends,
// saying where on w (runner mcp-demo --http).
func ServeHTTP(ctx context.Context, addr string, w io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", Handler(Options{}, ""))
	fmt.Fprintf(w, "serving MCP at http://%s/mcp\n", ln.Addr())
	srv := &http.Server{Handler: mux}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.Serve(ln); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}
