package runtime

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/tools"
	"github.com/debate-runner/runner/runtime/journal"
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

// closeMCP stops the MCP servers the run started.
func (r *Run) closeMCP() {
	if r.mcp != nil {
		r.mcp.Close()
	}
}

// readMCPTools reads the mcp_tools events of a journal: the tool list of
// each server, the last one journaled.
func readMCPTools(events []journal.Event) (map[string]mcpclient.Listing, error) {
	out := map[string]mcpclient.Listing{}
	for _, ev := range events {
		if ev.Type != event.MCPTools {
			continue
		}
		var l mcpclient.Listing
		if err := json.Unmarshal(ev.Data, &l); err != nil {
			return nil, fmt.Errorf("journal event %d: %w", ev.Seq, err)
		}
		out[l.Server] = l
	}
	return out, nil
}
