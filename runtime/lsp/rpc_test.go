package lsp

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/nodes"
)

func frame(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }

// Whatever bytes a client sends, Serve returns (an error, or nil after
// shutdown and exit) without a panic, and everything it writes is framed
// JSON.
func FuzzServeAnyBytes(f *testing.F) {
	initialize := frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	f.Add(initialize + frame(`{"jsonrpc":"2.0","id":2,"method":"shutdown"}`) + frame(`{"jsonrpc":"2.0","method":"exit"}`))
	f.Add(initialize + frame(`{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///x/spec.yaml","version":1,"text":"version: 1\nname: x\n"}}}`) +
		frame(`{"jsonrpc":"2.0","id":3,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///x/spec.yaml"},"position":{"line":1,"character":2}}}`))
	f.Add(frame(`{"jsonrpc":"2.0","id":1,"method":"textDocument/hover","params":{}}`) + frame(`not json`) + "Content-Length: 99999999999\r\n\r\n")
	f.Add(initialize + frame(`{"jsonrpc":"2.0","id":"a","method":"textDocument/didChange","params":{"textDocument":{"uri":"u","version":2},"contentChanges":[{"range":{"start":{"line":-1,"character":9},"end":{"line":0,"character":-3}},"text":"x"}]}}`))
	f.Fuzz(func(t *testing.T, in string) {
		var out bytes.Buffer
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = Serve(strings.NewReader(in), &out, Options{Registry: nodes.Registry()})
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("Serve did not return on %q", in)
		}
		r := bytes.NewReader(out.Bytes())
		br := bufio.NewReader(r)
		for {
			body, err := readMessage(br)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("the server wrote a bad frame: %v in %q", err, out.String())
			}
			if !bytes.HasPrefix(body, []byte(`{"jsonrpc":"2.0"`)) {
				t.Fatalf("the server wrote %q", body)
			}
		}
	})
}

// With Interim, a spec that compiles is shown the compiler's findings
// first and validate's whole list after its walk, both for the edit's
// version, the last being what validate says.
func TestInterimThenWhole(t *testing.T) {
	c := newClientWith(t, Options{Registry: nodes.Registry(), Interim: true})
	f, _ := filepath.Abs("../../examples/reasoning-debate/spec.yaml")
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	uri := fileURI(path)
	c.open(uri, string(data), 1)
	first := c.waitDiags(uri, 1)
	second := c.waitDiags(uri, 1)
	sameAsValidate(t, path, data, second)
	if len(first) > len(second) {
		t.Errorf("the interim list has %d diagnostics, the whole %d", len(first), len(second))
	}
}
