// Package mcpclient serves the tools of a spec's MCP servers to a run: it
// starts a server (stdio) or connects to it (streamable HTTP) the first time
// a tool of it is needed, lists its tools, and calls them with a timeout.
//
// A run journals each server's tool list (Listing) so that a resume or a
// replay sends the model the same tool definitions without starting the
// server; tool results are journaled by the run like those of the built-in
// tools, so they are never asked again.
package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/spec"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool is a tool a server lists.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// Listing is what a server listed: the payload of an mcp_tools journal
// event.
type Listing struct {
	Server string `json:"server"`
	Tools  []Tool `json:"tools"`
}

// Options configure a Client.
type Options struct {
	// Getenv expands ${NAME} in env: and headers: values.
	Getenv func(string) string
	// Known are listings journaled before (by the run, or the recording
	// being replayed), by server: they are used instead of asking.
	Known map[string]Listing
	// Journal records a listing the run had not journaled yet.
	Journal func(Listing)
	// Offline, when set, says why no server may be started (a replay).
	Offline string
	// DryRun stands in for tool lists no journal holds, with the tools
	// named, so that a dry run starts no server.
	DryRun bool
	// Dir is the directory commands run in (the spec's).
	Dir string
	// StartTimeout bounds starting a server and listing its tools
	// (default 30s).
	StartTimeout time.Duration
}

// Client serves the tools of a run's MCP servers. It is safe for
// concurrent use.
type Client struct {
	servers map[string]*spec.MCPServerPlan
	opts    Options

	mu       sync.Mutex
	listed   map[string]Listing
	journal  map[string]bool
	conns    map[string]*Conn
	byModel  map[string][2]string // model name -> server, tool
	starting map[string]*sync.Mutex
}

// New returns a client for servers; nothing is started yet.
func New(servers map[string]*spec.MCPServerPlan, opts Options) *Client {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	c := &Client{servers: servers, opts: opts, listed: map[string]Listing{}, journal: map[string]bool{},
		conns: map[string]*Conn{}, byModel: map[string][2]string{}, starting: map[string]*sync.Mutex{}}
	for name, l := range opts.Known {
		c.listed[name] = l
	}
	return c
}

// Conn is a live session with a server.
type Conn struct {
	session *mcp.ClientSession
	stderr  *tail
	cmd     *exec.Cmd
	// broken is why the session cannot be used any more.
	broken error
}

// Definitions implements tools.MCP.
func (c *Client) Definitions(ctx context.Context, names []string) ([]kit.Tool, error) {
	var out []kit.Tool
	seen := map[string]bool{}
	for _, n := range names {
		server, tool, _ := spec.SplitMCPTool(n)
		p := c.servers[server]
		if p == nil {
			return nil, fmt.Errorf("tool %q: no MCP server %q is declared under mcp_servers", n, server)
		}
		c.mu.Lock()
		_, known := c.listed[server]
		c.mu.Unlock()
		if !known && c.opts.DryRun {
			named := []string{tool}
			if tool == "*" {
				named = p.Allowed
			}
			for _, t := range named {
				out = append(out, kit.Tool{Name: spec.MCPModelName(server, t), Description: "(a dry run does not start MCP servers)", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)})
			}
			continue
		}
		l, err := c.listing(ctx, server)
		if err != nil {
			return nil, err
		}
		for _, t := range l.Tools {
			if !(tool == "*" && (p.Allowed == nil || slices.Contains(p.Allowed, t.Name)) || t.Name == tool) {
				continue
			}
			model := spec.MCPModelName(server, t.Name)
			if seen[model] {
				continue
			}
			seen[model] = true
			params := t.InputSchema
			if len(params) == 0 || string(params) == "null" {
				params = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			out = append(out, kit.Tool{Name: model, Description: t.Description, Parameters: params})
			c.mu.Lock()
			c.byModel[model] = [2]string{server, t.Name}
			c.mu.Unlock()
		}
		if tool != "*" && !seen[spec.MCPModelName(server, tool)] {
			return nil, fmt.Errorf("tool %q: mcp server %q lists no tool %q (it has: %s)", n, server, tool, names0(l.Tools))
		}
	}
	return out, nil
}

func names0(ts []Tool) string {
	var ns []string
	for _, t := range ts {
		ns = append(ns, t.Name)
	}
	if len(ns) == 0 {
		return "no tools"
	}
	return strings.Join(ns, ", ")
}

// listing returns what server lists: journaled before, or asked of it now
// (and journaled).
func (c *Client) listing(ctx context.Context, server string) (Listing, error) {
	c.mu.Lock()
	l, ok := c.listed[server]
	c.mu.Unlock()
	if ok {
		c.note(l)
		return l, nil
	}
	cn, err := c.connect(ctx, server)
	if err != nil {
		return Listing{}, err
	}
	c.mu.Lock()
	l, ok = c.listed[server]
	c.mu.Unlock()
	if ok {
		c.note(l)
		return l, nil
	}
	tools, err := List(ctx, cn.session)
	if err != nil {
		return Listing{}, c.failure(server, cn, "listing its tools", err)
	}
	l = Listing{Server: server, Tools: tools}
	c.mu.Lock()
	c.listed[server] = l
	c.mu.Unlock()
	c.note(l)
	return l, nil
}

// note journals a listing once per run.
func (c *Client) note(l Listing) {
	c.mu.Lock()
	done := c.journal[l.Server]
	c.journal[l.Server] = true
	c.mu.Unlock()
	if !done && c.opts.Journal != nil {
		c.opts.Journal(l)
	}
}

// MarkJournaled says the run's journal already holds the listing of server.
func (c *Client) MarkJournaled(server string) {
	c.mu.Lock()
	c.journal[server] = true
	c.mu.Unlock()
}

// List asks a session for all its tools.
func List(ctx context.Context, s *mcp.ClientSession) ([]Tool, error) {
	var out []Tool
	for t, err := range s.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %q: input schema: %v", t.Name, err)
		}
		out = append(out, Tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Call implements tools.MCP.
func (c *Client) Call(ctx context.Context, name, arguments string) (string, error) {
	c.mu.Lock()
	st, ok := c.byModel[name]
	c.mu.Unlock()
	if !ok {
		return fmt.Sprintf("error: unknown tool %q", name), nil
	}
	server, tool := st[0], st[1]
	p := c.servers[server]
	var args map[string]any
	if strings.TrimSpace(arguments) == "" {
		arguments = "{}"
	}
	if err := json.Unmarshal([]byte(arguments), &args); err != nil {
		return fmt.Sprintf("error: arguments are not a JSON object: %v", err), nil
	}
	cn, err := c.connect(ctx, server)
	if err != nil {
		return "", err
	}
	callCtx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	res, err := cn.session.CallTool(callCtx, &mcp.CallToolParams{Name: tool, Arguments: args})
	var werr *jsonrpc.Error
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return "", ctx.Err()
	case errors.As(err, &werr):
		return "error: " + werr.Message, nil
	case callCtx.Err() != nil:
		return fmt.Sprintf("error: the tool took longer than %s (the timeout of mcp server %q) and was stopped", p.Timeout, server), nil
	default:
		return "", c.failure(server, cn, fmt.Sprintf("calling %s", tool), err)
	}
	text := Text(res)
	if res.IsError {
		return "error: " + text, nil
	}
	return text, nil
}

// Text is what the model reads of a tool's result: its text contents, or
// its structured content as JSON when it has no text.
func Text(res *mcp.CallToolResult) string {
	var parts []string
	for _, ct := range res.Content {
		switch v := ct.(type) {
		case *mcp.TextContent:
			parts = append(parts, v.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image, %s, %d bytes]", v.MIMEType, len(v.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio, %s, %d bytes]", v.MIMEType, len(v.Data)))
		default:
			if b, err := json.Marshal(ct); err == nil {
				parts = append(parts, string(b))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

// failure marks a server's session broken and says why, with what it
// last wrote to stderr.
func (c *Client) failure(server string, cn *Conn, doing string, err error) error {
	why := err.Error()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		why = "the server stopped answering (" + why + ")"
	}
	if s := c.redact(server, cn.stderr.String()); s != "" {
		why += "; its last output: " + s
	}
	e := fmt.Errorf("mcp server %q failed while %s: %s; fix the server, then resume the run (tool results already journaled are kept)", server, doing, why)
	c.mu.Lock()
	cn.broken = e
	c.mu.Unlock()
	return e
}

// redact hides the values of a server's env: and headers: (secrets taken
// from the environment) in text a run may write.
func (c *Client) redact(server, s string) string {
	return redact(c.servers[server], c.opts.Getenv, s)
}

func redact(p *spec.MCPServerPlan, getenv func(string) string, s string) string {
	for _, raw := range mapsValues(p.Env, p.Headers) {
		v, err := spec.ExpandEnv(raw, getenv)
		if err == nil && v != raw && len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return strings.TrimSpace(s)
}

func mapsValues(ms ...map[string]string) []string {
	var out []string
	for _, m := range ms {
		for _, v := range m {
			out = append(out, v)
		}
	}
	return out
}

// connect returns the session with server, started on first use.
func (c *Client) connect(ctx context.Context, server string) (*Conn, error) {
	c.mu.Lock()
	lock := c.starting[server]
	if lock == nil {
		lock = &sync.Mutex{}
		c.starting[server] = lock
	}
	c.mu.Unlock()
	lock.Lock()
	defer lock.Unlock()
	c.mu.Lock()
	cn := c.conns[server]
	c.mu.Unlock()
	if cn != nil {
		c.mu.Lock()
		broken := cn.broken
		c.mu.Unlock()
		if broken != nil {
			return nil, broken
		}
		return cn, nil
	}
	if c.opts.Offline != "" {
		return nil, fmt.Errorf("mcp server %q: %s; the run cannot start it", server, c.opts.Offline)
	}
	sctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	cn, err := Connect(sctx, c.servers[server], c.opts.Getenv, c.opts.Dir)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.conns[server] = cn
	c.mu.Unlock()
	return cn, nil
}

// Connect starts (in directory dir) or reaches one server.
func Connect(ctx context.Context, p *spec.MCPServerPlan, getenv func(string) string, dir string) (*Conn, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "runner", Version: "1"}, nil)
	cn := &Conn{stderr: &tail{}}
	var transport mcp.Transport
	if p.Command != "" {
		name := p.Command
		if name == "runner" {
			// This binary itself (runner mcp-demo, say), wherever it is.
			if exe, err := os.Executable(); err == nil {
				name = exe
			}
		}
		cmd := exec.Command(name, p.Args...)
		cmd.Env = os.Environ()
		cmd.Dir = dir
		for k, raw := range p.Env {
			v, err := spec.ExpandEnv(raw, getenv)
			if err != nil {
				return nil, fmt.Errorf("mcp server %q env %s: %w", p.Name, k, err)
			}
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Stderr = cn.stderr
		cn.cmd = cmd
		transport = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	} else {
		endpoint, err := spec.ExpandEnv(p.URL, getenv)
		if err != nil {
			return nil, fmt.Errorf("mcp server %q url: %w", p.Name, err)
		}
		headers := http.Header{}
		for k, raw := range p.Headers {
			v, err := spec.ExpandEnv(raw, getenv)
			if err != nil {
				return nil, fmt.Errorf("mcp server %q header %s: %w", p.Name, k, err)
			}
			headers.Set(k, v)
		}
		transport = &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1, DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: headerTransport{headers: headers, base: http.DefaultTransport}}}
	}
	s, err := client.Connect(ctx, transport, nil)
	if err != nil {
		how := "starting " + p.Command
		if p.Command == "" {
			how = "connecting to " + p.URL
		}
		why := err.Error()
		if out := redact(p, getenv, cn.stderr.String()); out != "" {
			why += "; its output: " + out
		}
		return nil, fmt.Errorf("mcp server %q: %s: %s", p.Name, how, why)
	}
	cn.session = s
	return cn, nil
}

// Close ends every session and stops the servers the client started.
func (c *Client) Close() {
	c.mu.Lock()
	conns := c.conns
	c.conns = map[string]*Conn{}
	c.mu.Unlock()
	for _, cn := range conns {
		_ = cn.session.Close()
	}
}

// Session is the MCP session of a connection (for validate).
func (cn *Conn) Session() *mcp.ClientSession { return cn.session }

// Close ends a connection.
func (cn *Conn) Close() { _ = cn.session.Close() }

// headerTransport adds a server's headers: to each request.
type headerTransport struct {
	headers http.Header
	base    http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// tail keeps the last bytes a server wrote to stderr.
type tail struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

const tailBytes = 512

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if t.buf.Len() > 4*tailBytes {
		b := t.buf.Bytes()[t.buf.Len()-tailBytes:]
		t.buf = *bytes.NewBuffer(append([]byte(nil), b...))
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf.Bytes()
	if len(b) > tailBytes {
		b = b[len(b)-tailBytes:]
	}
	return string(b)
}

// ReadJournal reads the mcp_tools events of a journal: the tool list of
// each server, the last one journaled.
func ReadJournal(events []journal.Event) (map[string]Listing, error) {
	out := map[string]Listing{}
	for _, ev := range events {
		if ev.Type != event.MCPTools {
			continue
		}
		var l Listing
		if err := json.Unmarshal(ev.Data, &l); err != nil {
			return nil, fmt.Errorf("journal event %d: %w", ev.Seq, err)
		}
		out[l.Server] = l
	}
	return out, nil
}
