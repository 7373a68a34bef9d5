package runtime

import (
	"path/filepath"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/tools"
	"github.com/debate-runner/runner/runtime/mcpclient"
)

// MCPTools implements tools.MCPHost: the tools of the spec's MCP servers,
// nil when it declares none.
func (h *host) MCPTools() tools.MCP {
	if c := h.run.mcpTools(); c != nil {
		return c
	}
	return nil
}

// mcpTools returns the run's MCP client, made on first use. A server is
// started only when a tool of it must run, or its tool list is in no
// journal; a replay never starts one.
func (r *Run) mcpTools() *mcpclient.Client {
	if len(r.Plan.MCPServers) == 0 || r.emb != nil {
		// An embedded run (a Temporal workflow) must not start processes.
		return nil
	}
	r.mcpOnce.Do(func() {
		known := map[string]mcpclient.Listing{}
		for name, l := range r.mcpReplay {
			known[name] = l
		}
		for name, l := range r.mcpKnown {
			known[name] = l
		}
		opts := mcpclient.Options{Getenv: r.conn.Getenv, Known: known, Dir: filepath.Dir(r.Plan.Path), Journal: func(l mcpclient.Listing) {
			_ = r.event(event.MCPTools, l.Server, l)
		}}
		if r.opts.Replay != nil && !r.opts.ReplayMissingLive {
			opts.Offline = "this run replays a recording (--replay) and never starts MCP servers; the recording has no result for this tool call"
		}
		opts.DryRun = r.dry != nil
		r.mcp = mcpclient.New(r.Plan.MCPServers, opts)
		for name := range r.mcpKnown {
			r.mcp.MarkJournaled(name)
		}
	})
	return r.mcp
}
