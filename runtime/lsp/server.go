// Package lsp is runner lsp: a Language Server Protocol server over stdio
// for spec files. Its diagnostics come from the compiler runner validate
// uses (runtime/validate.Spec), on the editor's unsaved text; completion
// and hover read the spec's JSON Schema; definitions, references, symbols
// and renames read the ids the spec declares and uses.
package lsp

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/debate-runner/runner/runtime/spectest"
	"github.com/debate-runner/runner/runtime/validate"
	"github.com/debate-runner/runner/schemas"
	"github.com/debate-runner/runner/spec"
	"github.com/debate-runner/runner/spec/syntax"
)

// Options configure the server.
type Options struct {
	Registry *spec.Registry
	// Debounce is how long after a change the document is checked, so
	// that a burst of keystrokes is checked once; 0 checks at once, before
	// the next message is read.
	Debounce time.Duration
	// Interim publishes the compiler's diagnostics of a spec that
	// compiles before its paths are walked, so that fixed errors leave
	// the editor at once; the walk's complete list follows.
	Interim bool
	// noWalk stops at the compiler (tests of what needs no diagnostics).
	noWalk bool
}

// DefaultDebounce is runner lsp's pause after a keystroke.
const DefaultDebounce = 75 * time.Millisecond

// Serve speaks LSP on in and out until the client says exit or closes in.
// It returns nil after shutdown then exit, an error otherwise.
func Serve(in io.Reader, out io.Writer, o Options) error {
	s := &server{o: o, w: &writer{w: out}, docs: map[string]*document{},
		specSchema: newSchema(schemas.Spec), testSchema: newSchema(schemas.Test)}
	defer s.stop()
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		body, err := readMessage(r)
		if errors.Is(err, io.EOF) {
			return errors.New("the client closed the connection without exit")
		}
		if err != nil {
			return err
		}
		if done, err := s.handle(body); done {
			return err
		}
		if s.w.err != nil {
			return s.w.err
		}
	}
}

type server struct {
	o           Options
	w           *writer
	mu          sync.Mutex
	docs        map[string]*document
	initialized bool
	shutdown    bool
	specSchema  *schema
	testSchema  *schema
	// checking serializes the checks of documents (the compiler is
	// CPU-bound), and checks counts those scheduled or running.
	checking sync.Mutex
	pathing  sync.Mutex
	checks   sync.WaitGroup
}

// document is an open document.
type document struct {
	uri, path string
	version   int
	t         *text
	idx       *index
	// plan is the last plan the document compiled to, kept while later
	// edits break it (completion of library templates reads it).
	plan  *spec.Plan
	diags []Diagnostic
	gen   int
	timer *time.Timer
	test  bool
	// stale is set when the text does not read as YAML: idx is of an
	// earlier text (names only; its offsets are not this text's).
	stale bool
}

func (s *server) stop() {
	s.mu.Lock()
	for _, d := range s.docs {
		if d.timer != nil && d.timer.Stop() {
			s.checks.Done()
		}
	}
	s.docs = map[string]*document{}
	s.mu.Unlock()
	s.checks.Wait()
}

// handle answers one message; done is set by exit.
func (s *server) handle(body []byte) (done bool, err error) {
	var m message
	if jerr := json.Unmarshal(body, &m); jerr != nil {
		return false, s.w.reply(json.RawMessage("null"), nil, &rpcError{codeParseError, "not JSON: " + jerr.Error()})
	}
	isRequest := len(m.ID) > 0 && string(m.ID) != "null"
	if m.Method == "" {
		return false, nil // a response to nothing we asked
	}
	if m.Method == "exit" {
		if !s.shutdown {
			return true, errors.New("exit before shutdown")
		}
		return true, nil
	}
	var result any
	var rerr *rpcError
	func() {
		defer func() {
			if p := recover(); p != nil {
				rerr = &rpcError{-32603, fmt.Sprintf("internal error in %s: %v\n%s", m.Method, p, debug.Stack())}
			}
		}()
		result, rerr = s.dispatch(m.Method, m.Params, isRequest)
	}()
	if !isRequest {
		return false, nil
	}
	return false, s.w.reply(m.ID, result, rerr)
}

func (s *server) dispatch(method string, params json.RawMessage, isRequest bool) (any, *rpcError) {
	if method == "initialize" {
		s.initialized = true
		return initializeResult(), nil
	}
	if !s.initialized {
		return nil, &rpcError{codeNotInitialized, "the server is not initialized"}
	}
	if s.shutdown && method != "exit" {
		return nil, &rpcError{codeInvalidRequest, "the server is shut down"}
	}
	decode := func(v any) *rpcError {
		if err := json.Unmarshal(params, v); err != nil {
			return &rpcError{codeInvalidParams, err.Error()}
		}
		return nil
	}
	switch method {
	case "initialized", "$/cancelRequest", "$/setTrace", "workspace/didChangeConfiguration", "textDocument/didSave", "workspace/didChangeWatchedFiles":
		return nil, nil
	case "shutdown":
		s.shutdown = true
		s.stop()
		return nil, nil
	case "textDocument/didOpen":
		var p struct {
			TextDocument struct {
				URI     string `json:"uri"`
				Version int    `json:"version"`
				Text    string `json:"text"`
			} `json:"textDocument"`
		}
		if e := decode(&p); e != nil {
			return nil, e
		}
		s.open(p.TextDocument.URI, p.TextDocument.Version, p.TextDocument.Text)
		return nil, nil
	case "textDocument/didChange":
		var p struct {
			TextDocument struct {
				URI     string `json:"uri"`
				Version int    `json:"version"`
			} `json:"textDocument"`
			ContentChanges []struct {
				Range *Range `json:"range"`
				Text  string `json:"text"`
			} `json:"contentChanges"`
		}
		if e := decode(&p); e != nil {
			return nil, e
		}
		s.mu.Lock()
		d := s.docs[p.TextDocument.URI]
		if d == nil {
			s.mu.Unlock()
			return nil, nil
		}
		src := d.t.src
		for _, c := range p.ContentChanges {
			if c.Range == nil {
				src = c.Text
				continue
			}
			t := newText(src)
			a, b := t.offset(c.Range.Start), t.offset(c.Range.End)
			if b < a {
				a, b = b, a
			}
			src = src[:a] + c.Text + src[b:]
		}
		s.mu.Unlock()
		s.open(p.TextDocument.URI, p.TextDocument.Version, src)
		return nil, nil
	case "textDocument/didClose":
		var p struct {
			TextDocument struct {
				URI string `json:"uri"`
			} `json:"textDocument"`
		}
		if e := decode(&p); e != nil {
			return nil, e
		}
		s.mu.Lock()
		if d := s.docs[p.TextDocument.URI]; d != nil {
			if d.timer != nil && d.timer.Stop() {
				s.checks.Done()
			}
			delete(s.docs, p.TextDocument.URI)
		}
		s.mu.Unlock()
		return nil, s.w.notifyErr("textDocument/publishDiagnostics", publishParams{URI: p.TextDocument.URI, Diagnostics: []Diagnostic{}})
	}
	if !isRequest {
		return nil, nil
	}
	var p positionParams
	if e := decode(&p); e != nil {
		return nil, e
	}
	s.mu.Lock()
	d := s.docs[p.TextDocument.URI]
	var snap *document
	if d != nil {
		c := *d
		snap = &c
	}
	s.mu.Unlock()
	if snap == nil {
		switch method {
		case "textDocument/completion", "textDocument/hover", "textDocument/definition", "textDocument/references",
			"textDocument/documentSymbol", "textDocument/rename", "textDocument/prepareRename", "textDocument/codeAction":
			return nil, nil
		}
		return nil, &rpcError{codeMethodNotFound, "no method " + method}
	}
	switch method {
	case "textDocument/completion":
		return s.completion(snap, p.Position), nil
	case "textDocument/hover":
		return s.hover(snap, p.Position), nil
	case "textDocument/definition":
		return s.definition(snap, p.Position), nil
	case "textDocument/references":
		return s.references(snap, p.Position, p.Context.IncludeDeclaration), nil
	case "textDocument/documentSymbol":
		return s.symbols(snap), nil
	case "textDocument/prepareRename":
		return s.prepareRename(snap, p.Position), nil
	case "textDocument/rename":
		return s.rename(snap, p.Position, p.NewName)
	case "textDocument/codeAction":
		var ca struct {
			Context struct {
				Diagnostics []Diagnostic `json:"diagnostics"`
			} `json:"context"`
		}
		if e := decode(&ca); e != nil {
			return nil, e
		}
		return codeActions(snap, ca.Context.Diagnostics), nil
	}
	return nil, &rpcError{codeMethodNotFound, "no method " + method}
}

func (w *writer) notifyErr(method string, params any) *rpcError {
	if err := w.notify(method, params); err != nil {
		return &rpcError{-32603, err.Error()}
	}
	return nil
}

type positionParams struct {
	TextDocument struct {
		URI string `json:"uri"`
	} `json:"textDocument"`
	Position Position `json:"position"`
	Context  struct {
		IncludeDeclaration bool `json:"includeDeclaration"`
	} `json:"context"`
	NewName string `json:"newName"`
}

func initializeResult() any {
	return map[string]any{
		"capabilities": map[string]any{
			"positionEncoding": "utf-16",
			"textDocumentSync": map[string]any{"openClose": true, "change": 2},
			"completionProvider": map[string]any{
				"triggerCharacters": []string{".", " ", "[", ",", "\"", "-"},
			},
			"hoverProvider":          true,
			"definitionProvider":     true,
			"referencesProvider":     true,
			"documentSymbolProvider": true,
			"renameProvider":         map[string]any{"prepareProvider": true},
			"codeActionProvider":     map[string]any{"codeActionKinds": []string{"quickfix"}},
		},
		"serverInfo": map[string]any{"name": "runner lsp"},
	}
}

// uriPath is the file a URI names; a URI that is not a file's names
// itself.
func uriPath(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return uri
	}
	p := u.Path
	if len(p) >= 3 && p[0] == '/' && p[2] == ':' { // file:///C:/...
		p = p[1:]
	}
	return filepath.FromSlash(p)
}

// open takes a document's new text and schedules its check.
func (s *server) open(uri string, version int, src string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.docs[uri]
	if d == nil {
		d = &document{uri: uri, path: uriPath(uri)}
		s.docs[uri] = d
	}
	d.version, d.t = version, newText(src)
	if idx, ok := buildIndex(src); ok || d.idx == nil {
		d.idx = idx
		d.stale = !ok
	} else {
		d.stale = true // the last index that read, until the text reads again
	}
	d.test = isTestText(d.path, src)
	d.gen++
	gen := d.gen
	if d.timer != nil && d.timer.Stop() {
		s.checks.Done()
	}
	d.timer = nil
	s.checks.Add(1)
	if s.o.Debounce <= 0 {
		s.mu.Unlock()
		s.check(uri, gen)
		s.mu.Lock()
		return
	}
	d.timer = time.AfterFunc(s.o.Debounce, func() { s.check(uri, gen) })
}

// isTestText says whether a document is a spec test file: by its name,
// or a top level with cases: and no nodes:.
func isTestText(path, src string) bool {
	if strings.HasSuffix(path, spectest.Suffix) || strings.HasSuffix(path, ".test.yml") {
		return true
	}
	return hasTopKey(src, "cases") && !hasTopKey(src, "nodes")
}

func hasTopKey(src, key string) bool {
	return strings.HasPrefix(src, key+":") || strings.Contains(src, "\n"+key+":")
}

// check compiles generation gen of a document and publishes its
// diagnostics, unless a later edit came meanwhile. The compiler runs one
// document at a time; the walk of a compiled plan's paths (which can take
// a second on a large spec) runs one at a time beside it, and is skipped
// when the document changed while it waited.
func (s *server) check(uri string, gen int) {
	defer s.checks.Done()
	s.checking.Lock()
	d, ok := s.current(uri, gen)
	if !ok {
		s.checking.Unlock()
		return
	}
	path, t, version, test := d.path, d.t, d.version, d.test
	var sd syntax.Diagnostics
	var plan *spec.Plan
	opts := validate.Options{Registry: s.o.Registry, NoServers: true}
	if !test {
		guard(path, &sd, func() { sd, plan = validate.Compile(path, []byte(t.src), opts) })
	}
	s.checking.Unlock()
	if plan != nil && !s.o.noWalk {
		if s.o.Interim {
			s.publish(uri, gen, version, toLSP(t, path, sd), plan)
		}
		s.pathing.Lock()
		defer s.pathing.Unlock()
		if _, ok := s.current(uri, gen); !ok {
			return
		}
		guard(path, &sd, func() { sd, plan = validate.Finish(sd, plan, opts) })
	}
	s.publish(uri, gen, version, toLSP(t, path, sd), plan)
}

// current is the open document at generation gen.
func (s *server) current(uri string, gen int) (document, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.docs[uri]
	if d == nil || d.gen != gen {
		return document{}, false
	}
	return *d, true
}

func (s *server) publish(uri string, gen, version int, diags []Diagnostic, plan *spec.Plan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.docs[uri]
	if d == nil || d.gen != gen {
		return
	}
	d.diags = diags
	if plan != nil {
		d.plan = plan
	}
	s.w.notify("textDocument/publishDiagnostics", publishParams{URI: uri, Version: version, Diagnostics: diags})
}

// guard runs f, making a panic in the compiler a diagnostic rather than
// the server's end.
func guard(path string, diags *syntax.Diagnostics, f func()) {
	defer func() {
		if p := recover(); p != nil {
			*diags = syntax.Diagnostics{{File: path, Severity: syntax.Error, Message: fmt.Sprintf("internal error in the compiler (please report it): %v", p)}}
		}
	}()
	f()
}
