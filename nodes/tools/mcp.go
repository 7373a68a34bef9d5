package tools

import (
	"context"
	"strings"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/spec"
)

// MCP is the tools of the spec's MCP servers (mcp_servers:), as a run
// serves them.
type MCP interface {
	// Definitions returns the definitions the model is sent for tools
	// named as a spec names them (SERVER.TOOL, or SERVER.* for all the
	// server's allowed tools), under the names the model sees
	// (spec.MCPModelName).
	Definitions(ctx context.Context, names []string) ([]kit.Tool, error)
	// Call runs a tool by the name the model sees. A failed call gives
	// "error: ..." text for the model; err is set only when the server
	// cannot answer at all (it died, or cannot be started).
	Call(ctx context.Context, name, arguments string) (string, error)
}

// MCPHost is a host that serves MCP tools.
type MCPHost interface {
	MCPTools() MCP
}

// MCPOf returns the MCP tools of h, or nil when it serves none.
func MCPOf(h kit.Host) MCP {
	if mh, ok := h.(MCPHost); ok {
		return mh.MCPTools()
	}
	return nil
}

// DefinitionsFor returns the definitions of the named tools: built-in
// ones and those of MCP servers, in the order named.
func DefinitionsFor(ctx context.Context, h kit.Host, names []string) ([]kit.Tool, error) {
	var builtin, external []string
	for _, n := range names {
		if _, _, ok := spec.SplitMCPTool(n); ok {
			external = append(external, n)
		} else {
			builtin = append(builtin, n)
		}
	}
	out := Definitions(builtin)
	if len(external) == 0 {
		return out, nil
	}
	m := MCPOf(h)
	if m == nil {
		return nil, errNoMCP
	}
	defs, err := m.Definitions(ctx, external)
	if err != nil {
		return nil, err
	}
	return append(out, defs...), nil
}

var errNoMCP = mcpError("this run serves no MCP tools (mcp_servers: is not supported here)")

type mcpError string

func (e mcpError) Error() string { return string(e) }

// isMCP reports whether a name the model called is an MCP tool's.
func isMCP(name string) bool { return strings.Contains(name, "__") }
