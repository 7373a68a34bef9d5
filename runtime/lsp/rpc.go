package lsp

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
)

// maxMessage bounds one message's body: a spec is at most 2 MiB, and an
// editor sends it whole at most once per message.
const maxMessage = 16 << 20

// JSON-RPC 2.0 error codes the server answers with.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeNotInitialized = -32002
)

// message is a JSON-RPC 2.0 request, notification or response: a request
// has an id and a method, a notification a method only, a response an id
// and a result or an error.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%s (%d)", e.Message, e.Code) }

// readMessage reads one message framed by a Content-Length header. A
// frame whose body is not JSON is returned as raw bytes with errBadJSON,
// so that the server can answer it and go on.
func readMessage(r *bufio.Reader) ([]byte, error) {
	tp := textproto.NewReader(r)
	hdr, err := tp.ReadMIMEHeader()
	if err != nil {
		if errors.Is(err, io.EOF) && len(hdr) == 0 {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("reading a message's headers: %w", err)
	}
	v := hdr.Get("Content-Length")
	if v == "" {
		return nil, errors.New("a message without a Content-Length header")
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return nil, fmt.Errorf("Content-Length %q is not a length", v)
	}
	if n > maxMessage {
		return nil, fmt.Errorf("a message of %d bytes is larger than %d", n, maxMessage)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("reading a message's %d bytes: %w", n, err)
	}
	return body, nil
}

// writer frames messages onto the client's stream, one at a time.
type writer struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (w *writer) send(m message) error {
	m.JSONRPC = "2.0"
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if _, err := fmt.Fprintf(w.w, "Content-Length: %d\r\n\r\n%s", len(body), body); err != nil {
		w.err = err
	}
	return w.err
}

func (w *writer) reply(id json.RawMessage, result any, rerr *rpcError) error {
	m := message{ID: id, Error: rerr}
	if rerr == nil {
		b, err := json.Marshal(result)
		if err != nil {
			return err
		}
		m.Result = b
	}
	return w.send(m)
}

func (w *writer) notify(method string, params any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return w.send(message{Method: method, Params: b})
}
