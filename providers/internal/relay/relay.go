// Package relay is what the provider kinds whose APIs are not Chat
// Completions (anthropic, gemini) share in their transports, which stand
// between the engine's Chat Completions requests and the provider's own
// API: the request as their translations read it, the replies and stream
// chunks they write back, and the HTTP responses they hand the engine.
// What differs from one API to the next (the request sent, the reply and
// events read) stays in each kind's package.
package relay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Next is the round tripper a transport sends its requests over: next,
// or, when nil, one like the engine's own client, with enough idle
// connections for a burst of concurrent calls.
func Next(next http.RoundTripper) http.RoundTripper {
	if next != nil {
		return next
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return tr
}

// Request is what the translations read of a Chat Completions body: the
// messages, the tools and the reply format. A kind that reads more embeds
// it.
type Request struct {
	Messages       []Message       `json:"messages"`
	Tools          []Tool          `json:"tools"`
	ResponseFormat *ResponseFormat `json:"response_format"`
}

// Message is a message of a Chat Completions request. Content is a string
// or text parts, as the engine sent it.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// Tool is a function the request offers the model.
type Tool struct {
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// ResponseFormat is the reply format the request asks for.
type ResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

// Read decodes a Chat Completions body into req (a Request, or a kind's
// type that embeds one) and returns its top-level fields, each as sent.
func Read(body []byte, req any) (map[string]json.RawMessage, error) {
	if err := json.Unmarshal(body, req); err != nil {
		return nil, fmt.Errorf("reading the request: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, fmt.Errorf("reading the request: %w", err)
	}
	return fields, nil
}

// Chat Completions' reply and stream chunks, as the engine reads them.
type (
	// Completion is a reply, or a chunk of a streamed one.
	Completion struct {
		ID      string          `json:"id,omitempty"`
		Object  string          `json:"object"`
		Model   string          `json:"model"`
		Choices []Choice        `json:"choices"`
		Usage   json.RawMessage `json:"usage,omitempty"`
	}
	Choice struct {
		Index        int     `json:"index"`
		Reply        *Reply  `json:"message,omitempty"`
		Delta        *Reply  `json:"delta,omitempty"`
		FinishReason *string `json:"finish_reason"`
	}
	// Reply is a reply's message, or a chunk's delta.
	Reply struct {
		Role      string `json:"role,omitempty"`
		Content   string `json:"content"`
		ToolCalls []Call `json:"tool_calls,omitempty"`
	}
	// Call is a tool call of a reply; in a chunk, Index says which.
	Call struct {
		Index    *int   `json:"index,omitempty"`
		ID       string `json:"id,omitempty"`
		Type     string `json:"type,omitempty"`
		Function struct {
			Name      string `json:"name,omitempty"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
)

// Whole is a reply as a Chat Completions body: one choice with msg and its
// finish reason, and the provider's usage object as it came (nil: none).
func Whole(id, model string, msg *Reply, finish string, usage json.RawMessage) ([]byte, error) {
	return json.Marshal(Completion{ID: id, Object: "chat.completion", Model: model,
		Choices: []Choice{{Reply: msg, FinishReason: &finish}}, Usage: usage})
}

// Stream writes a reply to the engine as Chat Completions chunks (server
// sent events) as the provider's events come.
type Stream struct {
	W io.Writer
	// Model is the model the chunks name, once the provider has said it.
	Model string
}

func (s *Stream) emit(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(s.W, "data: %s\n\n", data)
	return err
}

// Delta writes a chunk with a part of the reply.
func (s *Stream) Delta(d *Reply) error {
	return s.emit(Completion{Object: "chat.completion.chunk", Model: s.Model, Choices: []Choice{{Delta: d}}})
}

// End writes the chunk with the finish reason, the chunk with the usage
// object as it came (none when nil) and [DONE]. A stream that is cut gets
// no End, so that the engine sees it cut.
func (s *Stream) End(finish string, usage json.RawMessage) error {
	if err := s.emit(Completion{Object: "chat.completion.chunk", Model: s.Model, Choices: []Choice{{Delta: &Reply{}, FinishReason: &finish}}}); err != nil {
		return err
	}
	if usage != nil {
		if err := s.emit(Completion{Object: "chat.completion.chunk", Model: s.Model, Choices: []Choice{}, Usage: usage}); err != nil {
			return err
		}
	}
	_, err := io.WriteString(s.W, "data: [DONE]\n\n")
	return err
}

// Error writes the provider's error object as {"error": ...}, which the
// engine reads as the kind's protocol says.
func (s *Stream) Error(e json.RawMessage) error {
	return s.emit(map[string]json.RawMessage{"error": e})
}

// Response is the HTTP response a transport hands the engine: status, the
// provider's headers (h, which it takes; its length and encoding dropped,
// the body being another), contentType when not "", and body.
func Response(hr *http.Request, status int, h http.Header, contentType string, body io.Reader) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	h.Del("Content-Length")
	h.Del("Content-Encoding")
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	rc, ok := body.(io.ReadCloser)
	if !ok {
		rc = io.NopCloser(body)
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: rc, ContentLength: -1, Request: hr,
	}
}

// JSONError is a transport's own error reply: body, a JSON value, with
// status.
func JSONError(hr *http.Request, status int, body any) *http.Response {
	data, _ := json.Marshal(body)
	return Response(hr, status, nil, "application/json", bytes.NewReader(data))
}

// Arguments are a tool call's arguments as Chat Completions sends them: the
// provider's input as it came, "{}" when it sent none.
func Arguments(input json.RawMessage) string {
	if len(bytes.TrimSpace(input)) == 0 {
		return "{}"
	}
	return string(input)
}

// Valid is raw when it is a JSON value other than null, else nil.
func Valid(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" || !json.Valid(raw) {
		return nil
	}
	return raw
}

// Relayed is a chunk stream as the engine reads it back (see ReadChunks).
type Relayed struct {
	Text  string
	Calls []ReadCall // by index
	// Finish is the last finish reason; Finished says one came.
	Finish   string
	Finished bool
	Usage    json.RawMessage
	Errors   []json.RawMessage // the {"error": ...} events' objects
	Done     bool              // [DONE] came
}

// ReadCall is a tool call put together from its deltas.
type ReadCall struct{ ID, Name, Arguments string }

// ReadChunks reads a stream a transport wrote (Stream's events) as the
// engine reads it: each line blank or a "data: " event, each event [DONE]
// or a JSON chunk, the deltas' text and tool calls (each with its index)
// put together. The transports' tests read what they relayed with it.
func ReadChunks(r io.Reader) (Relayed, error) {
	var out Relayed
	var text bytes.Buffer
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			return out, fmt.Errorf("a line that is not an event: %q", line)
		}
		if data == "[DONE]" {
			out.Done = true
			continue
		}
		var c struct {
			Completion
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return out, fmt.Errorf("event %q: %w", data, err)
		}
		if c.Error != nil {
			out.Errors = append(out.Errors, c.Error)
		}
		if c.Usage != nil {
			out.Usage = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.FinishReason != nil {
				out.Finish, out.Finished = *ch.FinishReason, true
			}
			if ch.Delta == nil {
				continue
			}
			text.WriteString(ch.Delta.Content)
			for _, d := range ch.Delta.ToolCalls {
				if d.Index == nil || *d.Index < 0 || *d.Index > len(out.Calls) {
					return out, fmt.Errorf("a tool call delta without the index of a call so far: %q", data)
				}
				if *d.Index == len(out.Calls) {
					out.Calls = append(out.Calls, ReadCall{})
				}
				c := &out.Calls[*d.Index]
				if d.ID != "" {
					c.ID = d.ID
				}
				if d.Function.Name != "" {
					c.Name = d.Function.Name
				}
				c.Arguments += d.Function.Arguments
			}
		}
	}
	out.Text = text.String()
	return out, sc.Err()
}

// ContentPart is a part of a message's content as the engine sends it:
// text, or an image (image_url: a data: URL of the bytes, or an http(s)
// URL; see runtime/images).
type ContentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

// ImageParts are a message's content parts when it holds an image, else
// nil: the kinds that translate requests send such a user message as
// their own text and image parts.
func ImageParts(raw json.RawMessage) []ContentPart {
	if len(raw) == 0 || raw[0] != '[' {
		return nil
	}
	var parts []ContentPart
	if json.Unmarshal(raw, &parts) != nil {
		return nil
	}
	for _, p := range parts {
		if p.Type == "image_url" {
			return parts
		}
	}
	return nil
}

// DataURL reads a data: URL of base64 bytes as its media type and the
// base64 text; ok is false for any other URL.
func DataURL(u string) (mediaType, base64Data string, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", "", false
	}
	head, data, found := strings.Cut(rest, ",")
	mediaType, isBase64 := strings.CutSuffix(head, ";base64")
	if !found || !isBase64 || mediaType == "" {
		return "", "", false
	}
	return mediaType, data, true
}
