package gemini

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/debate-runner/runner/providers/internal/relay"
)

// transport turns Chat Completions requests into generateContent
// requests, sends them over next to the URL the engine chose, and turns
// the replies back.
type transport struct{ next http.RoundTripper }

func newTransport(next http.RoundTripper) *transport {
	return &transport{next: relay.Next(next)}
}

// Gemini's request and reply, as far as runner uses them.
type (
	content struct {
		Role  string `json:"role,omitempty"`
		Parts []part `json:"parts"`
	}
	part struct {
		Text             string        `json:"text,omitempty"`
		InlineData       *inlineData   `json:"inlineData,omitempty"`
		FileData         *fileData     `json:"fileData,omitempty"`
		Thought          bool          `json:"thought,omitempty"`
		FunctionCall     *functionCall `json:"functionCall,omitempty"`
		FunctionResponse *functionResp `json:"functionResponse,omitempty"`
	}
	inlineData struct {
		MimeType string `json:"mimeType"`
		Data     string `json:"data"`
	}
	fileData struct {
		MimeType string `json:"mimeType,omitempty"`
		FileURI  string `json:"fileUri"`
	}
	functionCall struct {
		ID   string          `json:"id,omitempty"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args,omitempty"`
	}
	functionResp struct {
		ID       string          `json:"id,omitempty"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	}
	request struct {
		Contents          []content                  `json:"contents"`
		SystemInstruction *content                   `json:"systemInstruction,omitempty"`
		Tools             []tool                     `json:"tools,omitempty"`
		GenerationConfig  map[string]json.RawMessage `json:"generationConfig,omitempty"`
	}
	tool struct {
		FunctionDeclarations []function `json:"functionDeclarations"`
	}
	function struct {
		Name                 string          `json:"name"`
		Description          string          `json:"description,omitempty"`
		ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
	}
	response struct {
		Candidates []struct {
			Content      content `json:"content"`
			FinishReason string  `json:"finishReason"`
		} `json:"candidates"`
		UsageMetadata  json.RawMessage `json:"usageMetadata"`
		ModelVersion   string          `json:"modelVersion"`
		ResponseID     string          `json:"responseId"`
		PromptFeedback *struct {
			BlockReason string `json:"blockReason"`
		} `json:"promptFeedback"`
		Error json.RawMessage `json:"error"`
	}
)

// config maps Chat Completions' sampling fields to generationConfig's.
var config = map[string]string{
	"max_tokens": "maxOutputTokens", "max_completion_tokens": "maxOutputTokens",
	"temperature": "temperature", "top_p": "topP", "seed": "seed", "stop": "stopSequences",
}

// dropped are fields of the body the translation reads or that Gemini has
// no place for. Any other field (the model's `extra:`: topK,
// thinkingConfig...) goes into generationConfig as it is.
var dropped = map[string]bool{
	"model": true, "messages": true, "tools": true, "response_format": true, "stream": true,
	"stream_options": true, "reasoning_effort": true,
}

// Translate turns a Chat Completions body into a generateContent body.
func Translate(body []byte) ([]byte, error) {
	var req relay.Request
	fields, err := relay.Read(body, &req)
	if err != nil {
		return nil, err
	}
	out := request{Contents: []content{}, GenerationConfig: map[string]json.RawMessage{}}
	names := map[string]string{} // tool call id -> function name
	add := func(role string, parts ...part) {
		if len(parts) == 0 {
			return
		}
		if n := len(out.Contents); n > 0 && out.Contents[n-1].Role == role {
			out.Contents[n-1].Parts = append(out.Contents[n-1].Parts, parts...)
			return
		}
		out.Contents = append(out.Contents, content{Role: role, Parts: parts})
	}
	for i, m := range req.Messages {
		if parts := relay.ImageParts(m.Content); parts != nil && m.Role == "user" {
			add("user", imageParts(parts)...)
			continue
		}
		text, err := textOf(m.Content)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		switch m.Role {
		case "system", "developer":
			if text == "" {
				continue
			}
			if out.SystemInstruction == nil {
				out.SystemInstruction = &content{}
			}
			out.SystemInstruction.Parts = append(out.SystemInstruction.Parts, part{Text: text})
		case "user":
			if text != "" {
				add("user", part{Text: text})
			}
		case "assistant":
			var parts []part
			if text != "" {
				parts = append(parts, part{Text: text})
			}
			for _, tc := range m.ToolCalls {
				names[tc.ID] = tc.Function.Name
				parts = append(parts, part{FunctionCall: &functionCall{ID: tc.ID, Name: tc.Function.Name, Args: object(tc.Function.Arguments, "arguments")}})
			}
			add("model", parts...)
		case "tool":
			add("user", part{FunctionResponse: &functionResp{ID: m.ToolCallID, Name: names[m.ToolCallID], Response: object(text, "result")}})
		default:
			return nil, fmt.Errorf("message %d has role %q, which Gemini has no place for", i, m.Role)
		}
	}
	if len(req.Tools) > 0 {
		var fs []function
		for _, t := range req.Tools {
			fs = append(fs, function{Name: t.Function.Name, Description: t.Function.Description, ParametersJSONSchema: t.Function.Parameters})
		}
		out.Tools = []tool{{FunctionDeclarations: fs}}
	}
	if rf := req.ResponseFormat; rf != nil && rf.Type != "" && rf.Type != "text" {
		out.GenerationConfig["responseMimeType"] = json.RawMessage(`"application/json"`)
		if rf.JSONSchema != nil && len(rf.JSONSchema.Schema) > 0 {
			out.GenerationConfig["responseJsonSchema"] = rf.JSONSchema.Schema
		}
	}
	for name, v := range fields {
		switch {
		case config[name] != "":
			if name == "stop" && len(v) > 0 && v[0] == '"' {
				v = append(append(json.RawMessage{'['}, v...), ']')
			}
			out.GenerationConfig[config[name]] = v
		case !dropped[name]:
			out.GenerationConfig[name] = v
		}
	}
	if len(out.GenerationConfig) == 0 {
		out.GenerationConfig = nil
	}
	return json.Marshal(out)
}

// textOf is a message's text: a string, or text parts joined (Gemini's
// caching is implicit: the breakpoints runner may mark are not sent).
// imageParts are a user message's text and image parts as Gemini's: an
// image's bytes inline, a URL as file data.
func imageParts(parts []relay.ContentPart) []part {
	var out []part
	for _, pt := range parts {
		switch {
		case pt.Type == "image_url":
			if mt, data, ok := relay.DataURL(pt.ImageURL.URL); ok {
				out = append(out, part{InlineData: &inlineData{MimeType: mt, Data: data}})
			} else {
				out = append(out, part{FileData: &fileData{FileURI: pt.ImageURL.URL}})
			}
		case pt.Text != "":
			out = append(out, part{Text: pt.Text})
		}
	}
	return out
}

func textOf(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct{ Type, Text string }
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content is neither text nor text parts: %w", err)
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("a content part of type %q is not supported", p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// object is text as the JSON object Gemini wants for a call's args or a
// function's response: the text itself when it is one, else {name: text}.
func object(text, name string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(text), &obj) == nil && obj != nil {
		return json.RawMessage(text)
	}
	out, _ := json.Marshal(map[string]string{name: text})
	return out
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(hr *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(hr.Body)
	hr.Body.Close()
	if err != nil {
		return nil, err
	}
	out, err := Translate(body)
	if err != nil {
		return errorReply(hr, http.StatusBadRequest, "runner could not make a generateContent request of it: "+err.Error()), nil
	}
	nr, err := http.NewRequestWithContext(hr.Context(), http.MethodPost, hr.URL.String(), bytes.NewReader(out))
	if err != nil {
		return nil, err
	}
	for name, vs := range hr.Header {
		nr.Header[name] = vs
	}
	nr.Header.Set("Content-Type", "application/json")
	resp, err := t.next.RoundTrip(nr)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp, nil // Gemini's error object, read by the engine
	}
	stream := hr.URL.Query().Get("alt") == "sse"
	if !stream {
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		out, err := DecodeResponse(raw)
		if err != nil {
			return errorReply(hr, http.StatusBadGateway, err.Error()), nil
		}
		return relay.Response(hr, resp.StatusCode, resp.Header.Clone(), "application/json", bytes.NewReader(out)), nil
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(Relay(resp.Body, pw))
		resp.Body.Close()
	}()
	return relay.Response(hr, resp.StatusCode, resp.Header.Clone(), "text/event-stream", pr), nil
}

func errorReply(hr *http.Request, status int, message string) *http.Response {
	return relay.JSONError(hr, status, map[string]any{"error": map[string]any{"code": status, "message": message, "status": "INVALID_ARGUMENT"}})
}

// finishReason is a finishReason as Chat Completions names it.
func finishReason(r string, calls bool) string {
	switch r {
	case "STOP":
		if calls {
			return "tool_calls"
		}
		return "stop"
	case "MAX_TOKENS":
		return "length"
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY":
		return "content_filter"
	case "":
		return ""
	}
	return strings.ToLower(r)
}

// parts reads a candidate's parts into text and tool calls (numbered from
// first, for calls without an id); thought parts are not part of the reply.
func parts(ps []part, first int, text *strings.Builder) []relay.Call {
	var calls []relay.Call
	for _, p := range ps {
		switch {
		case p.Thought:
		case p.FunctionCall != nil:
			c := relay.Call{ID: p.FunctionCall.ID, Type: "function"}
			if c.ID == "" {
				c.ID = fmt.Sprintf("call_%d", first+len(calls))
			}
			c.Function.Name = p.FunctionCall.Name
			c.Function.Arguments = "{}"
			if len(bytes.TrimSpace(p.FunctionCall.Args)) > 0 {
				c.Function.Arguments = string(p.FunctionCall.Args)
			}
			calls = append(calls, c)
		default:
			text.WriteString(p.Text)
		}
	}
	return calls
}

// DecodeResponse turns a generateContent reply into a Chat Completions
// reply: the first candidate's text and function calls, its finish
// reason, and usageMetadata as sent. A prompt Gemini blocked is an empty
// reply with finish_reason content_filter; a reply without candidates
// or a block reason is an error.
func DecodeResponse(body []byte) ([]byte, error) {
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("decoding Gemini's reply: %w", err)
	}
	var text strings.Builder
	finish := ""
	msg := &relay.Reply{Role: "assistant"}
	switch {
	case len(r.Candidates) > 0:
		c := r.Candidates[0]
		msg.ToolCalls = parts(c.Content.Parts, 0, &text)
		finish = finishReason(c.FinishReason, len(msg.ToolCalls) > 0)
		if finish == "" {
			finish = "stop"
		}
	case r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "":
		finish = "content_filter"
	default:
		return nil, errors.New("the reply has no candidates and no block reason")
	}
	msg.Content = text.String()
	return relay.Whole(r.ResponseID, r.ModelVersion, msg, finish, relay.Valid(r.UsageMetadata))
}

// Relay writes Gemini's event stream (each event a partial reply) to w as
// Chat Completions chunks: text as content deltas, function calls as
// whole tool-call deltas, then, once the stream has ended after an event
// with a finishReason, the finish chunk, one chunk with the last
// usageMetadata and [DONE]. A stream cut before any finishReason gets no
// finish, so that the engine sees it cut; an event with an error is
// relayed as {"error": ...}.
func Relay(body io.Reader, w io.Writer) error {
	var (
		finish   string
		usage    json.RawMessage
		ncalls   int
		anyCalls bool
	)
	out := &relay.Stream{W: w}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(bytes.TrimSpace(sc.Bytes()), []byte("data:"))
		if !ok {
			continue
		}
		var r response
		if err := json.Unmarshal(bytes.TrimSpace(data), &r); err != nil {
			return fmt.Errorf("reading Gemini's event stream: %w", err)
		}
		if e := relay.Valid(r.Error); e != nil {
			return out.Error(e)
		}
		if r.ModelVersion != "" {
			out.Model = r.ModelVersion
		}
		if u := relay.Valid(r.UsageMetadata); u != nil {
			usage = u
		}
		if len(r.Candidates) == 0 {
			if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
				finish = "content_filter"
			}
			continue
		}
		c := r.Candidates[0]
		var text strings.Builder
		calls := parts(c.Content.Parts, ncalls, &text)
		for i := range calls {
			n := ncalls + i
			calls[i].Index = &n
		}
		ncalls += len(calls)
		anyCalls = anyCalls || len(calls) > 0
		if text.Len() > 0 || len(calls) > 0 {
			if err := out.Delta(&relay.Reply{Content: text.String(), ToolCalls: calls}); err != nil {
				return err
			}
		}
		if f := finishReason(c.FinishReason, anyCalls); f != "" {
			finish = f
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading Gemini's event stream: %w", err)
	}
	if finish == "" {
		return nil // cut: no finish_reason
	}
	return out.End(finish, usage)
}
