package mcpclient

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
)

// Check starts (or reaches) each MCP server of plan and checks the tool
// names the spec gives against the tools it lists: its allowed tools
// (tools:) and those agents and nodes name. A server that cannot be
// started gives a warning, as its names cannot be checked.
func Check(ctx context.Context, plan *spec.Plan, getenv func(string) string, timeout time.Duration) syntax.Diagnostics {
	var out syntax.Diagnostics
	diag := func(sev syntax.Severity, pos syntax.Pos, format string, args ...any) {
		out = append(out, syntax.Diagnostic{File: plan.Path, Pos: pos, Severity: sev, Message: fmt.Sprintf(format, args...), Snippet: plan.Snippet(pos)})
	}
	names := make([]string, 0, len(plan.MCPServers))
	for n := range plan.MCPServers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		p := plan.MCPServers[name]
		sctx, cancel := context.WithTimeout(ctx, timeout)
		cn, err := Connect(sctx, p, getenv, filepath.Dir(plan.Path))
		if err != nil {
			cancel()
			diag(syntax.Warning, p.Pos, "%v; its tool names were not checked", err)
			continue
		}
		tools, err := List(sctx, cn.session)
		cn.Close()
		cancel()
		if err != nil {
			diag(syntax.Warning, p.Pos, "mcp server %q: listing its tools: %v; its tool names were not checked", name, err)
			continue
		}
		listed := make([]string, len(tools))
		for i, t := range tools {
			listed[i] = t.Name
		}
		has := func(pos syntax.Pos, what, tool string) {
			if !slices.Contains(listed, tool) {
				diag(syntax.Error, pos, "%s: mcp server %q lists no tool %q%s (it has: %s)", what, name, tool, nearest(tool, listed), strings.Join(listed, ", "))
			}
		}
		for i, t := range p.Allowed {
			has(p.AllowedPos[i], "tools", t)
		}
		for _, r := range plan.MCPToolRefs {
			if r.Server == name && r.Tool != "*" && !slices.Contains(p.Allowed, r.Tool) {
				has(r.Pos, fmt.Sprintf("tool %q", name+"."+r.Tool), r.Tool)
			}
		}
	}
	return out
}

// nearest suggests the listed name closest to a misspelt one, if any is
// close.
func nearest(name string, listed []string) string {
	best, bestD := "", 3
	for _, l := range listed {
		if d := distance(strings.ToLower(name), strings.ToLower(l)); d < bestD {
			best, bestD = l, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
