package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/textproto"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/runtime/validate"
	"github.com/debate-runner/runner/spec/syntax"
)

// runner lsp as an editor starts it: the real binary over stdio. A typo
// made with an incremental change to an example is reported where and as
// runner validate reports it for the same bytes, its quick fix puts the
// name back, and the server exits 0 after shutdown and exit.
func TestLSPOverTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := runnerBinary(t)
	cmd := exec.Command(bin, "lsp", "--stdio")
	stdin, _ := cmd.StdinPipe()
	stdoutPipe, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	out := bufio.NewReader(stdoutPipe)
	id := 0
	send := func(method string, params any, request bool) int {
		m := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
		if request {
			id++
			m["id"] = id
		}
		body, _ := json.Marshal(m)
		if _, err := fmt.Fprintf(stdin, "Content-Length: %d\r\n\r\n%s", len(body), body); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return id
	}
	type msg struct {
		ID     *int            `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  any             `json:"error"`
	}
	msgs := make(chan msg, 100)
	go func() {
		defer close(msgs)
		for {
			h, err := textproto.NewReader(out).ReadMIMEHeader()
			if err != nil {
				return
			}
			n, _ := strconv.Atoi(h.Get("Content-Length"))
			body := make([]byte, n)
			if _, err := io.ReadFull(out, body); err != nil {
				return
			}
			var m msg
			if err := json.Unmarshal(body, &m); err != nil {
				t.Errorf("not JSON: %q", body)
			}
			msgs <- m
		}
	}()
	wait := func(ok func(msg) bool) msg {
		deadline := time.After(30 * time.Second)
		for {
			select {
			case m, open := <-msgs:
				if !open {
					t.Fatalf("runner lsp closed its output; stderr: %s", stderr.String())
				}
				if ok(m) {
					return m
				}
			case <-deadline:
				t.Fatal("runner lsp did not answer")
			}
		}
	}
	reply := func(want int) msg {
		return wait(func(m msg) bool { return m.ID != nil && *m.ID == want && m.Method == "" })
	}

	if m := reply(send("initialize", map[string]any{"processId": nil, "rootUri": nil, "capabilities": map[string]any{}}, true)); m.Error != nil {
		t.Fatalf("initialize: %v", m.Error)
	}
	send("initialized", map[string]any{}, false)

	data, err := os.ReadFile("../../examples/reasoning-debate/spec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "spec.yaml")
	uri := (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
	src := string(data)
	send("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": "yaml", "version": 1, "text": src}}, false)

	// The typo: reasoning/answer becomes reasoning/anwser.
	const good, typo = "reasoning/answer", "reasoning/anwser"
	off := strings.Index(src, "template: "+good) + len("template: ")
	line := strings.Count(src[:off], "\n")
	col := off - strings.LastIndex(src[:off], "\n") - 1
	rng := map[string]any{"start": map[string]any{"line": line, "character": col}, "end": map[string]any{"line": line, "character": col + len(good)}}
	send("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": 2},
		"contentChanges": []any{map[string]any{"range": rng, "text": typo}}}, false)
	edited := src[:off] + typo + src[off+len(good):]
	var pub struct {
		Version     int `json:"version"`
		Diagnostics []struct {
			Range struct {
				Start struct{ Line, Character int }
			} `json:"range"`
			Severity int    `json:"severity"`
			Message  string `json:"message"`
		} `json:"diagnostics"`
	}
	wait(func(m msg) bool {
		if m.Method != "textDocument/publishDiagnostics" {
			return false
		}
		_ = json.Unmarshal(m.Params, &pub)
		return pub.Version == 2
	})

	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	var jsonOut, errOut bytes.Buffer
	_ = validate.Files([]string{path}, validate.Options{Registry: nodes.Registry(), JSON: true, NoServers: true}, &jsonOut, &errOut)
	var want syntax.Diagnostics
	if err := json.Unmarshal(jsonOut.Bytes(), &want); err != nil || len(want) == 0 {
		t.Fatalf("validate: %v %s", err, jsonOut.String())
	}
	if len(pub.Diagnostics) != len(want) {
		t.Fatalf("runner lsp published %+v, validate says %s", pub.Diagnostics, want.Format())
	}
	for i, w := range want {
		g := pub.Diagnostics[i]
		if g.Message != w.Message || g.Range.Start.Line != w.Pos.Line-1 || g.Range.Start.Character != w.Pos.Col-1 || g.Severity != 1+int(w.Severity) {
			t.Errorf("runner lsp: %d:%d %q (severity %d); validate: %s", g.Range.Start.Line+1, g.Range.Start.Character+1, g.Message, g.Severity, w)
		}
	}
	if !strings.Contains(pub.Diagnostics[0].Message, `did you mean "reasoning/answer"`) {
		t.Errorf("the typo's message does not suggest the name: %s", pub.Diagnostics[0].Message)
	}

	actions := reply(send("textDocument/codeAction", map[string]any{"textDocument": map[string]any{"uri": uri}, "range": rng,
		"context": map[string]any{"diagnostics": []any{map[string]any{"range": map[string]any{"start": map[string]any{"line": line, "character": col}, "end": map[string]any{"line": line, "character": col + len(typo)}}, "severity": 1, "message": pub.Diagnostics[0].Message}}}}, true))
	if !strings.Contains(string(actions.Result), `"newText":"reasoning/answer"`) {
		t.Errorf("quick fix: %s", actions.Result)
	}

	if m := reply(send("shutdown", nil, true)); m.Error != nil {
		t.Fatalf("shutdown: %v", m.Error)
	}
	send("exit", nil, false)
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("runner lsp exited with %v; stderr: %s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("runner lsp did not exit")
	}
}
