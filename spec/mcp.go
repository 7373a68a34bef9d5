package spec

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/debate-runner/runner/spec/syntax"

	"gopkg.in/yaml.v3"
)

// MCPServerPlan is a resolved MCP server. Env and Headers values are kept
// as written: ${NAME} references are expanded only when the server is
// started, so secrets never reach a file the run writes.
type MCPServerPlan struct {
	Name    string            `json:"name"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Allowed are the tools agents may call (tools:), nil for all the
	// server lists.
	Allowed []string      `json:"allowed,omitempty"`
	Timeout time.Duration `json:"timeout"`
	// Pos is where the server is declared.
	Pos syntax.Pos `json:"-"`
	// AllowedPos are where the allowed tools are written, in order.
	AllowedPos []syntax.Pos `json:"-"`
}

// MCPToolRef is a tool of an MCP server an agent or a node names, and where.
type MCPToolRef struct {
	Server, Tool string
	Pos          syntax.Pos
}

// DefaultMCPTimeout bounds one tool call when the server sets no timeout.
const DefaultMCPTimeout = 60 * time.Second

// mcpServerName is what a server may be called: the name is a prefix of
// the names the model sees (SERVER__TOOL), which providers restrict to
// letters, digits, _ and -.
var mcpServerName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]*$`)

// BuiltinTools are the tools the runner itself provides.
var BuiltinTools = []string{"search_history", "read_file", "list_files"}

// SplitMCPTool splits a tool name as a spec writes it, SERVER.TOOL (TOOL
// may be * for all the server's allowed tools); ok is false for a built-in
// tool name.
func SplitMCPTool(name string) (server, tool string, ok bool) {
	return strings.Cut(name, ".")
}

// MCPModelName is the name the model sees for a tool of an MCP server:
// SERVER__TOOL, with characters providers refuse in function names
// replaced by _.
func MCPModelName(server, tool string) string {
	clean := strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, tool)
	return server + "__" + clean
}

// mcpServers compiles mcp_servers: and checks every tool name agents and
// nodes give (tools:): built-in, or SERVER.TOOL of a declared server and,
// when the server lists its allowed tools, one of those.
func (c *compiler) mcpServers() {
	f := c.file
	if f.MCPServers.Len() > 0 {
		c.plan.MCPServers = map[string]*MCPServerPlan{}
	}
	for _, k := range f.MCPServers.Keys {
		s := f.MCPServers.Values[k.V]
		who := fmt.Sprintf("mcp server %q", k.V)
		if !mcpServerName.MatchString(k.V) {
			c.r.Errorf(k.Pos, "%s: a server name is a letter then letters, digits or -", who)
		}
		p := &MCPServerPlan{Name: k.V, Command: s.Command.V, Args: s.Args, URL: s.URL.V, Timeout: DefaultMCPTimeout, Pos: k.Pos}
		switch {
		case s.Command.Set && s.URL.Set:
			c.r.Errorf(s.URL.Pos, "%s has both command: and url:; give command: to start it (stdio) or url: to reach it (streamable HTTP)", who)
		case !s.Command.Set && !s.URL.Set:
			c.r.Errorf(k.Pos, "%s has neither command: (a program to start, spoken to over stdio) nor url: (a streamable HTTP endpoint)", who)
		case s.Command.Set && strings.TrimSpace(s.Command.V) == "":
			c.r.Errorf(s.Command.Pos, "%s: command is empty", who)
		case s.URL.Set:
			c.checkEnvRefs(s.URL, who+" url")
			u, err := url.Parse(envRef.ReplaceAllString(s.URL.V, "x"))
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				c.r.Errorf(s.URL.Pos, "%s: url %q is not an http:// or https:// URL", who, s.URL.V)
			}
		}
		if s.URL.Set && s.Env.Len() > 0 {
			c.r.Errorf(s.Env.Keys[0].Pos, "%s: env: is for a server the run starts (command:); a server at a url: gets headers:", who)
		}
		if s.Command.Set && s.Headers.Len() > 0 {
			c.r.Errorf(s.Headers.Keys[0].Pos, "%s: headers: are for a server at a url:; a server the run starts (command:) gets env:", who)
		}
		for _, e := range s.Env.Keys {
			v := s.Env.Values[e.V]
			c.checkEnvRefs(*v, fmt.Sprintf("%s env %s", who, e.V))
			if p.Env == nil {
				p.Env = map[string]string{}
			}
			p.Env[e.V] = v.V
		}
		for _, h := range s.Headers.Keys {
			v := s.Headers.Values[h.V]
			if !headerName.MatchString(h.V) {
				c.r.Errorf(h.Pos, "%s: %q is not an HTTP header name (letters, digits and -)", who, h.V)
			}
			c.checkEnvRefs(*v, fmt.Sprintf("%s header %s", who, h.V))
			if p.Headers == nil {
				p.Headers = map[string]string{}
			}
			p.Headers[h.V] = v.V
		}
		for _, t := range s.Tools {
			p.Allowed = append(p.Allowed, t.V)
			p.AllowedPos = append(p.AllowedPos, t.Pos)
		}
		if s.Timeout.Set {
			d, err := time.ParseDuration(s.Timeout.V)
			if err != nil || d <= 0 {
				c.r.Errorf(s.Timeout.Pos, "%s: timeout %q is not a positive duration such as 30s or 2m", who, s.Timeout.V)
			} else {
				p.Timeout = d
			}
		}
		c.plan.MCPServers[k.V] = p
	}
	for _, k := range f.Agents.Keys {
		for _, t := range f.Agents.Values[k.V].Tools {
			c.checkToolName(t.V, t.Pos)
		}
	}
	for _, k := range f.Nodes.Keys {
		d := f.Nodes.Values[k.V]
		if d.Raw == nil || d.Raw.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(d.Raw.Content); i += 2 {
			if d.Raw.Content[i].Value != "tools" || d.Raw.Content[i+1].Kind != yaml.SequenceNode {
				continue
			}
			for _, n := range d.Raw.Content[i+1].Content {
				if n.Kind == yaml.ScalarNode {
					c.checkToolName(n.Value, syntax.NodePos(n))
				}
			}
		}
	}
}

// checkToolName checks one tool name of tools: and notes the MCP tools
// named, for validate to check against the servers' lists.
func (c *compiler) checkToolName(name string, pos syntax.Pos) {
	if slices.Contains(BuiltinTools, name) {
		return
	}
	server, tool, ok := SplitMCPTool(name)
	if !ok {
		c.r.Errorf(pos, "tool %q is neither a built-in tool (%s) nor SERVER.TOOL of a server under mcp_servers:%s", name, strings.Join(BuiltinTools, ", "), syntax.DidYouMean(name, BuiltinTools))
		return
	}
	p := c.plan.MCPServers[server]
	if p == nil {
		c.r.Errorf(pos, "tool %q: no MCP server %q is declared under mcp_servers:%s", name, server, syntax.DidYouMean(server, c.file.MCPServers.Names()))
		return
	}
	if tool == "" {
		c.r.Errorf(pos, "tool %q names no tool; write %s.TOOL, or %s.* for all its allowed tools", name, server, server)
		return
	}
	if tool != "*" && p.Allowed != nil && !slices.Contains(p.Allowed, tool) {
		c.r.Errorf(pos, "tool %q: mcp server %q allows only %s (its tools:)%s", name, server, strings.Join(p.Allowed, ", "), syntax.DidYouMean(tool, p.Allowed))
		return
	}
	c.plan.MCPToolRefs = append(c.plan.MCPToolRefs, MCPToolRef{Server: server, Tool: tool, Pos: pos})
}

// Snippet quotes the spec's line at pos with a caret under the column, as
// diagnostics show it (for checks made after compiling, such as validate's
// of MCP tool names).
func (p *Plan) Snippet(pos syntax.Pos) string {
	return syntax.NewSource(p.Path, p.Source).Snippet(pos)
}
