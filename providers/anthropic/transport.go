package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/debate-runner/runner/providers/internal/relay"
)

// DefaultMaxTokens is the max_tokens sent when a model sets none: the
// Messages API requires one.
const DefaultMaxTokens = 4096

// transport turns Chat Completions requests into Messages requests, sends
// them with the SDK over next, and turns the replies back.
type transport struct{ next http.RoundTripper }

func newTransport(next http.RoundTripper) *transport {
	return &transport{next: relay.Next(next)}
}

// chatRequest is what the translation reads of a Chat Completions body.
type chatRequest struct {
	relay.Request
	Model               string `json:"model"`
	MaxTokens           int64  `json:"max_tokens"`
	MaxCompletionTokens int64  `json:"max_completion_tokens"`
	ReasoningEffort     string `json:"reasoning_effort"`
	Stream              bool   `json:"stream"`
}

// part is a content part of a message the engine sent with cache
// breakpoints.
type part struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	CacheControl json.RawMessage `json:"cache_control"`
}

// translated are the Chat Completions fields the translation reads, or
// drops (seed and stream_options: the Messages API has neither). Every
// other field of the body (temperature, top_p, top_k, stop_sequences,
// thinking, metadata: the model's `extra:`) is sent as it is.
var translated = map[string]bool{
	"model": true, "messages": true, "max_tokens": true, "max_completion_tokens": true,
	"reasoning_effort": true, "tools": true, "response_format": true, "stream": true,
	"stream_options": true, "seed": true,
}

// Translate turns a Chat Completions body into the Messages request the
// transport sends, and whether it streams.
func Translate(body []byte) (sdk.MessageNewParams, bool, error) {
	var req chatRequest
	fields, err := relay.Read(body, &req)
	if err != nil {
		return sdk.MessageNewParams{}, false, err
	}
	p := sdk.MessageNewParams{Model: sdk.Model(req.Model), MaxTokens: DefaultMaxTokens}
	switch {
	case req.MaxTokens > 0:
		p.MaxTokens = req.MaxTokens
	case req.MaxCompletionTokens > 0:
		p.MaxTokens = req.MaxCompletionTokens
	}
	leading := true
	for i, m := range req.Messages {
		if parts := relay.ImageParts(m.Content); parts != nil && m.Role == "user" {
			leading = false
			p.Messages = appendTurn(p.Messages, "user", imageBlocks(parts))
			continue
		}
		texts, err := textBlocks(m.Content)
		if err != nil {
			return p, false, fmt.Errorf("message %d: %w", i, err)
		}
		if m.Role != "system" && m.Role != "developer" {
			leading = false
		}
		switch m.Role {
		case "system", "developer":
			if leading {
				p.System = append(p.System, texts...)
			} else if len(texts) > 0 {
				p.Messages = append(p.Messages, sdk.MessageParam{OfSystem: &sdk.SystemMessageParam{Content: texts}})
			}
		case "user":
			p.Messages = appendTurn(p.Messages, "user", contentOf(texts))
		case "assistant":
			blocks := contentOf(texts)
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{
					ID: tc.ID, Name: tc.Function.Name, Input: toolInput(tc.Function.Arguments),
				}})
			}
			p.Messages = appendTurn(p.Messages, "assistant", blocks)
		case "tool":
			result := &sdk.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			for i := range texts {
				result.Content = append(result.Content, sdk.ToolResultBlockParamContentUnion{OfText: &texts[i]})
			}
			p.Messages = appendTurn(p.Messages, "user", []sdk.ContentBlockParamUnion{{OfToolResult: result}})
		default:
			return p, false, fmt.Errorf("message %d has role %q, which the Messages API has no place for", i, m.Role)
		}
	}
	for _, t := range req.Tools {
		tool := &sdk.ToolParam{Name: t.Function.Name, InputSchema: inputSchema(t.Function.Parameters)}
		if t.Function.Description != "" {
			tool.Description = param.NewOpt(t.Function.Description)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: tool})
	}
	if rf := req.ResponseFormat; rf != nil && rf.Type != "" && rf.Type != "text" {
		schema := map[string]any{"type": "object"}
		if rf.JSONSchema != nil && len(rf.JSONSchema.Schema) > 0 {
			if err := json.Unmarshal(rf.JSONSchema.Schema, &schema); err != nil {
				return p, false, fmt.Errorf("the reply's JSON Schema: %w", err)
			}
		}
		p.OutputConfig.Format = sdk.JSONOutputFormatParam{Schema: schema}
	}
	if req.ReasoningEffort != "" {
		p.OutputConfig.Effort = sdk.OutputConfigEffort(req.ReasoningEffort)
	}
	extra := map[string]any{}
	for name, v := range fields {
		if translated[name] {
			continue
		}
		if !fieldName.MatchString(name) {
			// The SDK reads extra fields' names as paths ("a.b" would nest).
			return p, false, fmt.Errorf("request field %q cannot be sent to the Messages API (a field's name is letters, digits, _ and -)", name)
		}
		extra[name] = v
	}
	if len(extra) > 0 {
		p.SetExtraFields(extra)
	}
	if _, err := json.Marshal(p); err != nil {
		return p, false, fmt.Errorf("encoding the Messages request: %w", err)
	}
	return p, req.Stream, nil
}

// fieldName is the name of a field sent as it is.
var fieldName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// textBlocks reads a message's content: a string, or the engine's text
// parts with their cache breakpoints. Empty text is left out (the Messages
// API refuses empty text blocks).
func textBlocks(raw json.RawMessage) ([]sdk.TextBlockParam, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return []sdk.TextBlockParam{{Text: s}}, nil
	}
	var parts []part
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, fmt.Errorf("content is neither text nor text parts: %w", err)
	}
	var out []sdk.TextBlockParam
	for _, pt := range parts {
		if pt.Type != "text" {
			return nil, fmt.Errorf("a content part of type %q is not supported", pt.Type)
		}
		if pt.Text == "" {
			continue
		}
		b := sdk.TextBlockParam{Text: pt.Text}
		if len(pt.CacheControl) > 0 && string(pt.CacheControl) != "null" {
			b.CacheControl = sdk.NewCacheControlEphemeralParam()
		}
		out = append(out, b)
	}
	return out, nil
}

// imageBlocks are a user message's text and image parts as the Messages
// API's blocks: an image's bytes as a base64 source, a URL as a URL source.
func imageBlocks(parts []relay.ContentPart) []sdk.ContentBlockParamUnion {
	var out []sdk.ContentBlockParamUnion
	for _, pt := range parts {
		switch {
		case pt.Type == "image_url":
			if mt, data, ok := relay.DataURL(pt.ImageURL.URL); ok {
				out = append(out, sdk.NewImageBlockBase64(mt, data))
			} else {
				out = append(out, sdk.NewImageBlock(sdk.URLImageSourceParam{URL: pt.ImageURL.URL}))
			}
		case pt.Text != "":
			out = append(out, sdk.NewTextBlock(pt.Text))
		}
	}
	return out
}

func contentOf(texts []sdk.TextBlockParam) []sdk.ContentBlockParamUnion {
	out := make([]sdk.ContentBlockParamUnion, len(texts))
	for i := range texts {
		out[i] = sdk.ContentBlockParamUnion{OfText: &texts[i]}
	}
	return out
}

// appendTurn adds blocks as a turn of role, or to the last turn when it
// is of the same role (tool results that follow one another go in one
// user turn, as the Messages API wants them).
func appendTurn(msgs []sdk.MessageParam, role string, blocks []sdk.ContentBlockParamUnion) []sdk.MessageParam {
	if n := len(msgs); n > 0 {
		last := &msgs[n-1]
		switch {
		case role == "user" && last.OfUser != nil:
			last.OfUser.Content = append(last.OfUser.Content, blocks...)
			return msgs
		case role == "assistant" && last.OfAssistant != nil:
			last.OfAssistant.Content = append(last.OfAssistant.Content, blocks...)
			return msgs
		}
	}
	if role == "user" {
		return append(msgs, sdk.MessageParam{OfUser: &sdk.UserMessageParam{Content: blocks}})
	}
	return append(msgs, sdk.MessageParam{OfAssistant: &sdk.AssistantMessageParam{Content: blocks}})
}

// toolInput is a tool call's arguments as the object tool_use carries; an
// argument text that is not a JSON object (a model's broken call, sent back
// to it) goes as {"arguments": text}.
func toolInput(args string) any {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) == nil && obj != nil {
		return json.RawMessage(args)
	}
	if strings.TrimSpace(args) == "" {
		return map[string]any{}
	}
	return map[string]any{"arguments": args}
}

// inputSchema is a tool's JSON Schema as the Messages API takes it.
func inputSchema(raw json.RawMessage) sdk.ToolInputSchemaParam {
	out := sdk.ToolInputSchemaParam{Properties: map[string]any{}}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return out
	}
	extra := map[string]any{}
	for k, v := range m {
		switch k {
		case "type":
		case "properties":
			out.Properties = v
		case "required":
			var req []string
			if json.Unmarshal(v, &req) == nil {
				out.Required = req
			} else {
				extra[k] = v
			}
		default:
			extra[k] = v
		}
	}
	if len(extra) > 0 {
		out.ExtraFields = extra
	}
	return out
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(hr *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(hr.Body)
	hr.Body.Close()
	if err != nil {
		return nil, err
	}
	params, stream, err := Translate(body)
	if err != nil {
		return errorReply(hr, http.StatusBadRequest, nil, "invalid_request_error", "runner could not make a Messages request of it: "+err.Error()), nil
	}
	base := *hr.URL
	base.Path = strings.TrimSuffix(base.Path, messagesPath) + "/"
	base.RawPath, base.RawQuery = "", ""
	var raw *http.Response
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base.String()),
		option.WithHTTPClient(&http.Client{Transport: t.next}),
		option.WithMaxRetries(0), // the engine retries, by the kind's rules
		option.WithResponseInto(&raw),
	}
	// The engine's headers, the key's among them, go as they are: the key in
	// x-api-key, as Anthropic documents it (the SDK's WithAPIKey would send
	// it as a Bearer token).
	for name, vs := range hr.Header {
		switch http.CanonicalHeaderKey(name) {
		case "Content-Type", "Accept", "Cache-Control", "Content-Length":
		default:
			opts = append(opts, option.WithHeader(name, vs[0]))
		}
	}
	// The message service alone, not sdk.NewClient: the client refers to
	// every service of the API (beta, organization, files...), which would
	// all be linked into runner.
	messages := sdk.NewMessageService(opts...)
	ctx := hr.Context()
	if !stream {
		timeout := 10 * time.Minute
		if d, ok := ctx.Deadline(); ok {
			timeout = time.Until(d)
		}
		msg, err := messages.New(ctx, params, option.WithRequestTimeout(timeout))
		if err != nil {
			return failure(hr, err)
		}
		out, err := completionOf(msg)
		if err != nil {
			return errorReply(hr, http.StatusBadGateway, header(raw), "api_error", err.Error()), nil
		}
		return relay.Response(hr, http.StatusOK, header(raw), "application/json", bytes.NewReader(out)), nil
	}
	s := messages.NewStreaming(ctx, params)
	if err := s.Err(); err != nil {
		return failure(hr, err)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(Relay(s, pw))
		s.Close()
	}()
	return relay.Response(hr, http.StatusOK, header(raw), "text/event-stream", pr), nil
}

func header(r *http.Response) http.Header {
	if r == nil {
		return http.Header{}
	}
	return r.Header.Clone()
}

// failure is the engine's view of a failed exchange: an error response
// from the API as it came (status, headers such as retry-after, and
// Anthropic's error object, whose type the engine reads), or the
// transport's error.
func failure(hr *http.Request, err error) (*http.Response, error) {
	var ae *sdk.Error
	if !errors.As(err, &ae) || ae.StatusCode == 0 {
		return nil, err
	}
	h := http.Header{}
	var body []byte
	if ae.Response != nil {
		h = ae.Response.Header.Clone()
		if ae.Response.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(ae.Response.Body, 64<<10))
		}
	}
	if len(body) == 0 {
		body = []byte(ae.RawJSON())
	}
	h.Del("Content-Length")
	return relay.Response(hr, ae.StatusCode, h, h.Get("Content-Type"), bytes.NewReader(body)), nil
}

func errorReply(hr *http.Request, status int, h http.Header, kind, message string) *http.Response {
	body, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": kind, "message": message}})
	return relay.Response(hr, status, h, "application/json", bytes.NewReader(body))
}

// finishReason is a stop reason as Chat Completions names it.
func finishReason(r sdk.StopReason) string {
	switch r {
	case sdk.StopReasonEndTurn, sdk.StopReasonStopSequence, sdk.StopReasonPauseTurn:
		return "stop"
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return "length"
	case sdk.StopReasonToolUse:
		return "tool_calls"
	case sdk.StopReasonRefusal:
		return "content_filter"
	}
	return string(r)
}

// DecodeMessage turns a Messages API reply body into a Chat Completions
// reply body.
func DecodeMessage(body []byte) ([]byte, error) {
	var msg sdk.Message
	if err := json.Unmarshal(body, &msg); err != nil {
		return nil, fmt.Errorf("decoding the Message: %w", err)
	}
	return completionOf(&msg)
}

// completionOf is a Message as a Chat Completions reply: its text blocks
// joined, its tool_use blocks as tool calls (thinking blocks are not part
// of the reply), its stop reason, and its usage object as sent.
func completionOf(msg *sdk.Message) ([]byte, error) {
	if msg.Type != "message" {
		return nil, fmt.Errorf("the API's reply is not a Message (type %q)", msg.Type)
	}
	var text strings.Builder
	out := &relay.Reply{Role: "assistant"}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			c := relay.Call{ID: b.ID, Type: "function"}
			c.Function.Name, c.Function.Arguments = b.Name, relay.Arguments(b.Input)
			out.ToolCalls = append(out.ToolCalls, c)
		}
	}
	out.Content = text.String()
	return relay.Whole(msg.ID, string(msg.Model), out, finishReason(msg.StopReason), rawObject(msg.Usage.RawJSON()))
}

// rawObject is raw when it is a JSON value, else nil.
func rawObject(raw string) json.RawMessage {
	if raw == "" || !json.Valid([]byte(raw)) {
		return nil
	}
	return json.RawMessage(raw)
}

// Relay writes a Messages event stream to w as Chat Completions chunks:
// text deltas as content, tool_use blocks and their input_json_delta as
// tool-call deltas, the stop reason at message_stop, then one chunk with
// the usage (message_start's usage object with message_delta's counts
// over it, as sent) and [DONE]. A stream that ends before message_stop
// gets no finish_reason, so that the engine sees it cut; an error event
// is relayed as {"error": ...}, which the engine reads by its type.
func Relay(s *ssestream.Stream[sdk.MessageStreamEventUnion], w io.Writer) error {
	var (
		finish string
		usage  = map[string]json.RawMessage{}
		tools  = map[int64]int{} // content block index -> tool call index
		out    = &relay.Stream{W: w}
	)
	for s.Next() {
		ev := s.Current()
		var err error
		switch ev.Type {
		case "message_start":
			out.Model = string(ev.Message.Model)
			mergeUsage(usage, ev.Message.Usage.RawJSON())
			err = out.Delta(&relay.Reply{Role: "assistant"})
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				n := len(tools)
				tools[ev.Index] = n
				c := relay.Call{Index: &n, ID: ev.ContentBlock.ID, Type: "function"}
				c.Function.Name = ev.ContentBlock.Name
				err = out.Delta(&relay.Reply{ToolCalls: []relay.Call{c}})
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				if ev.Delta.Text != "" {
					err = out.Delta(&relay.Reply{Content: ev.Delta.Text})
				}
			case "input_json_delta":
				if n, ok := tools[ev.Index]; ok && ev.Delta.PartialJSON != "" {
					c := relay.Call{Index: &n}
					c.Function.Arguments = ev.Delta.PartialJSON
					err = out.Delta(&relay.Reply{ToolCalls: []relay.Call{c}})
				}
			}
		case "message_delta":
			if ev.Delta.StopReason != "" {
				finish = finishReason(ev.Delta.StopReason)
			}
			mergeUsage(usage, ev.Usage.RawJSON())
		case "message_stop":
			if finish == "" {
				finish = "stop"
			}
			var u json.RawMessage
			if len(usage) > 0 {
				u, _ = json.Marshal(usage)
			}
			return out.End(finish, u)
		}
		if err != nil {
			return err
		}
	}
	err := s.Err()
	var ae *sdk.Error
	if errors.As(err, &ae) {
		var env struct {
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal([]byte(ae.RawJSON()), &env) != nil || len(env.Error) == 0 || env.Error[0] != '{' {
			env.Error, _ = json.Marshal(map[string]string{"type": "api_error", "message": ae.Error()})
		}
		return out.Error(env.Error)
	}
	if err != nil {
		return fmt.Errorf("reading Anthropic's event stream: %w", err)
	}
	return nil // cut before message_stop: no finish_reason
}

// mergeUsage lays a usage object's members over usage, as sent; a member
// that is null, or an object that is not one, changes nothing.
func mergeUsage(usage map[string]json.RawMessage, raw string) {
	var m map[string]json.RawMessage
	if raw == "" || json.Unmarshal([]byte(raw), &m) != nil {
		return
	}
	for k, v := range m {
		if string(v) != "null" {
			usage[k] = v
		}
	}
}
