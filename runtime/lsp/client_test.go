package lsp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/debate-runner/runner/nodes"
)

// client talks to a server in this process over pipes, with the real
// framing, as an editor does.
type client struct {
	t      testing.TB
	in     *io.PipeWriter // the server's stdin
	out    *io.PipeReader // the server's stdout
	w      *writer
	mu     sync.Mutex
	nextID int
	waits  map[string]chan message
	diags  chan publishParams
	served chan error
}

func newClient(t testing.TB, debounce time.Duration) *client {
	return newClientWith(t, Options{Registry: nodes.Registry(), Debounce: debounce})
}

// newClientWith starts a server with o.
func newClientWith(t testing.TB, o Options) *client {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &client{t: t, in: inW, out: outR, w: &writer{w: inW}, waits: map[string]chan message{},
		diags: make(chan publishParams, 1000), served: make(chan error, 1)}
	go func() {
		err := Serve(inR, outW, o)
		outW.Close()
		c.served <- err
	}()
	go c.read()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-c.served:
		case <-time.After(10 * time.Second):
			t.Error("the server did not stop")
		}
	})
	c.call("initialize", map[string]any{"processId": nil, "rootUri": nil, "capabilities": map[string]any{}})
	c.notify("initialized", map[string]any{})
	return c
}

func (c *client) read() {
	r := bufio.NewReader(c.out)
	for {
		body, err := readMessage(r)
		if err != nil {
			close(c.diags)
			return
		}
		var m message
		if err := json.Unmarshal(body, &m); err != nil {
			c.t.Errorf("the server sent a message that is not JSON: %q", body)
			continue
		}
		if m.Method == "textDocument/publishDiagnostics" {
			var p publishParams
			if err := json.Unmarshal(m.Params, &p); err != nil {
				c.t.Errorf("publishDiagnostics: %v", err)
			}
			c.diags <- p
			continue
		}
		c.mu.Lock()
		ch := c.waits[string(m.ID)]
		delete(c.waits, string(m.ID))
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// call sends a request and returns its response.
func (c *client) call(method string, params any) message {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := json.RawMessage(fmt.Sprint(c.nextID))
	ch := make(chan message, 1)
	c.waits[string(id)] = ch
	c.mu.Unlock()
	b, _ := json.Marshal(params)
	if err := c.w.send(message{ID: id, Method: method, Params: b}); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	select {
	case m := <-ch:
		return m
	case <-time.After(20 * time.Second):
		c.t.Fatalf("no answer to %s", method)
	}
	return message{}
}

// result calls and decodes the result into v, failing on an error.
func (c *client) result(method string, params, v any) {
	c.t.Helper()
	m := c.call(method, params)
	if m.Error != nil {
		c.t.Fatalf("%s: %v", method, m.Error)
	}
	if err := json.Unmarshal(m.Result, v); err != nil {
		c.t.Fatalf("%s: %v in %s", method, err, m.Result)
	}
}

func (c *client) notify(method string, params any) {
	c.t.Helper()
	if err := c.w.notify(method, params); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

// waitDiags waits for the diagnostics of a document's version.
func (c *client) waitDiags(uri string, version int) []Diagnostic {
	c.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case p, ok := <-c.diags:
			if !ok {
				c.t.Fatal("the server closed its output")
			}
			if p.URI == uri && p.Version == version {
				return p.Diagnostics
			}
		case <-deadline:
			c.t.Fatalf("no diagnostics for %s version %d", uri, version)
		}
	}
}

func (c *client) open(uri, text string, version int) {
	c.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": "yaml", "version": version, "text": text}})
}

func (c *client) change(uri string, version int, r Range, text string) {
	c.notify("textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": uri, "version": version},
		"contentChanges": []any{map[string]any{"range": r, "text": text}},
	})
}

func fileURI(path string) string {
	abs, _ := filepath.Abs(path)
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
}

// at is the LSP position of byte offset off of src, counted here
// independently of the server: lines at \n, \r\n and \r, UTF-16 units.
func at(src string, off int) Position {
	line, start := 0, 0
	for i := 0; i < off; i++ {
		if src[i] == '\n' || src[i] == '\r' && (i+1 >= len(src) || src[i+1] != '\n') {
			line, start = line+1, i+1
		}
	}
	return Position{Line: line, Character: len(utf16.Encode([]rune(src[start:off])))}
}
