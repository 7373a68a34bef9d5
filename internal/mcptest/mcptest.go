// Package mcptest is a tiny MCP server for tests and the mcp-tools example:
// add (sums two numbers), lookup (a fact from a small table), sleep (waits,
// to hit timeouts) and crash (the process exits, to test a server that
// dies). It speaks stdio (ServeStdio) or streamable HTTP (Handler).
package mcptest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Facts are what lookup knows.
var Facts = map[string]string{
	"water_boiling_point": "Water boils at 100 degrees Celsius at sea level.",
	"speed_of_light":      "Light travels at 299,792 km/s in a vacuum.",
	"earth_moon_distance": "The Moon is 384,400 km from the Earth on average.",
}

// Options configure a server.
type Options struct {
	// OnCall is told the name of each tool called, before it runs.
	OnCall func(tool string)
	// Crash lets the crash tool end the process.
	Crash bool
}

type addIn struct {
	A float64 `json:"a" jsonschema:"first number"`
	B float64 `json:"b" jsonschema:"second number"`
}

type lookupIn struct {
	Key string `json:"key" jsonschema:"name of the fact"`
}

type sleepIn struct {
	Seconds float64 `json:"seconds" jsonschema:"how long to wait"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// New returns the server.
func New(opts Options) *mcp.Server {
	note := func(n string) {
		if opts.OnCall != nil {
			opts.OnCall(n)
		}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
			note("add")
			return text(fmt.Sprintf("%g + %g = %g", in.A, in.B, in.A+in.B)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Look up a fact by its key: " + strings.Join(keys(), ", ") + "."},
		func(_ context.Context, _ *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, any, error) {
			note("lookup")
			f, ok := Facts[in.Key]
			if !ok {
				r := text(fmt.Sprintf("no fact %q; known keys: %s", in.Key, strings.Join(keys(), ", ")))
				r.IsError = true
				return r, nil, nil
			}
			return text(f), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "Wait some seconds, then say so."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
			note("sleep")
			select {
			case <-time.After(time.Duration(in.Seconds * float64(time.Second))):
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return text(fmt.Sprintf("slept %gs", in.Seconds)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "End the server process (for tests)."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			note("crash")
			if !opts.Crash {
				return text("crash is disabled here"), nil, nil
			}
			fmt.Fprintln(os.Stderr, "mcptest: crashing as asked", os.Getenv("MCPTEST_SAY"))
			os.Exit(3)
			return nil, nil, nil
		})
	return s
}

func keys() []string {
	var ks []string
	for k := range Facts {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// ServeStdio serves over stdin and stdout until the client closes them. When
// countFile is not empty, each call appends the tool's name and a newline
// to it, so that a test can count the calls of a server it does not run.
func ServeStdio(ctx context.Context, countFile string) error {
	opts := Options{Crash: true}
	if countFile != "" {
		opts.OnCall = func(tool string) {
			f, err := os.OpenFile(countFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				fmt.Fprintln(f, tool)
				f.Close()
			}
		}
	}
	return New(opts).Run(ctx, &mcp.StdioTransport{})
}

// Handler serves streamable HTTP. When token is not empty, requests must
// carry "Authorization: Bearer TOKEN".
func Handler(opts Options, token string) http.Handler {
	s := New(opts)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	if token == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Counts reads a count file ServeStdio wrote: calls by tool.
func Counts(countFile string) map[string]int {
	out := map[string]int{}
	b, _ := os.ReadFile(countFile)
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			out[l]++
		}
	}
	return out
}

// ServeIfDemo serves the demo server over stdio, and exits, when this
// process was started as "runner mcp-demo": a spec's `command: runner`
// starts the binary it runs in, and a test binary that runs
// examples/mcp-tools is such a binary. Test packages call it first thing
// in TestMain.
func ServeIfDemo() {
	if len(os.Args) == 2 && os.Args[1] == "mcp-demo" {
		_ = ServeStdio(context.Background(), "")
		os.Exit(0)
	}
}
