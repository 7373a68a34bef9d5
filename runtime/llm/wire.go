package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/debate-runner/runner/runtime/images"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/debate-runner/runner/nodes/kit"
)

// Errors for 2xx responses that cannot be used; both are treated as
// transient and retried.
var (
	ErrNoChoices       = errors.New("response has no choices")
	ErrStreamTruncated = errors.New("stream ended without a finish_reason")
)

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// emptyParameters stands in for a tool without a schema: servers reject a
// function whose parameters are null.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// anyObject is the schema sent with json_schema for a reply that has none.
var anyObject = json.RawMessage(`{"type":"object"}`)

// shape is what of a request depends on the endpoint rather than on the
// caller: the response_format sent, the field the token limit goes in and
// whether stream_options is sent. The client starts from what it learned
// and changes it when the endpoint refuses a request (adapt.go).
type shape struct {
	format      openai.ChatCompletionResponseFormatType // json_schema, json_object, or "" for none
	tokenField  string
	streamUsage bool
	// swapped is set once the token field was changed for this call, so a
	// server refusing both fields cannot make the client swap forever.
	swapped bool
}

// wireRequest is the body of a chat completion. It uses go-openai's message,
// tool and response-format types, but its own fields for the parameters
// go-openai would drop or refuse: a temperature of exactly 0 (float32 with
// omitempty there), reasoning_effort for any model, both token-limit fields.
type wireRequest struct {
	Model string `json:"model"`
	// Messages are go-openai's messages, or cachedMessage for those that
	// carry a cache breakpoint.
	Messages            []any                                `json:"messages"`
	Temperature         *float64                             `json:"temperature,omitempty"`
	TopP                *float64                             `json:"top_p,omitempty"`
	MaxTokens           int                                  `json:"max_tokens,omitempty"`
	MaxCompletionTokens int                                  `json:"max_completion_tokens,omitempty"`
	Seed                *int                                 `json:"seed,omitempty"`
	ReasoningEffort     string                               `json:"reasoning_effort,omitempty"`
	Tools               []openai.Tool                        `json:"tools,omitempty"`
	ResponseFormat      *openai.ChatCompletionResponseFormat `json:"response_format,omitempty"`
	Stream              bool                                 `json:"stream,omitempty"`
	StreamOptions       *openai.StreamOptions                `json:"stream_options,omitempty"`
}

// cachedMessage is a message sent as one text part marked as a cache
// breakpoint: providers that cache only where the request says so
// (Anthropic's models, directly or through OpenRouter and other
// OpenAI-compatible gateways) cache the request up to the end of it.
type cachedMessage struct {
	Role       string       `json:"role"`
	Content    []cachedPart `json:"content"`
	Name       string       `json:"name,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type cachedPart struct {
	Type         string        `json:"type"`
	Text         string        `json:"text"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

// partsMessage is a message sent as content parts: text and images
// (OpenAI's image_url parts, which the provider kinds that translate the
// request read too).
type partsMessage struct {
	Role       string `json:"role"`
	Content    []any  `json:"content"`
	Name       string `json:"name,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
}

type textPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type imagePart struct {
	Type     string `json:"type"`
	ImageURL struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

// imageMessage is a message whose text holds image markers, as text and
// image parts (see runtime/images).
func imageMessage(m Message) partsMessage {
	out := partsMessage{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID}
	for _, p := range images.Split(m.Content) {
		if !p.IsImage {
			out.Content = append(out.Content, textPart{Type: "text", Text: p.Text})
			continue
		}
		ip := imagePart{Type: "image_url"}
		ip.ImageURL.URL = p.URL
		out.Content = append(out.Content, ip)
	}
	return out
}

type cacheControl struct {
	Type string `json:"type"`
}

// ephemeral is the breakpoint a part carries: Anthropic's five-minute cache.
var ephemeral = &cacheControl{Type: "ephemeral"}

// content is a message's text as parts: one, or two split at split.
func (b breakpoint) content(text string, split int) []cachedPart {
	end := func(on bool) *cacheControl {
		if on {
			return ephemeral
		}
		return nil
	}
	if !b.parts {
		return []cachedPart{{Type: "text", Text: text, CacheControl: end(b.end)}}
	}
	return []cachedPart{
		{Type: "text", Text: text[:split], CacheControl: end(b.split)},
		{Type: "text", Text: text[split:], CacheControl: end(b.end)},
	}
}

// breakpoint is where a message of a request with CacheBreakpoints
// carries cache breakpoints: at its end, at its split (Message.CacheSplit),
// and whether it is sent as two parts at all.
type breakpoint struct {
	end, split, parts bool
}

// cacheBreakpoints says which messages of a request with CacheBreakpoints
// carry a breakpoint: the system prompt (the leading system messages'
// last), the last message before the final user turn (where the previous
// request of a thread ended, so it is read back from the cache), the last
// message when the next request extends this one (a thread's turn, or a
// tool round: the next round adds the tools' results), so that it can read
// all of this one, and the last message's split, where its template marked
// the end of its stable start ({{cacheBreak}}). The end of a one-off prompt
// is not marked: a cache write costs more than the prompt price
// (Anthropic: 1.25x) and nothing would read it. That is at most four
// breakpoints, Anthropic's limit. Every message with a split goes as two
// parts, so that an earlier turn of a thread is sent as it was when it was
// last; only the last message's split is marked. Messages with tool calls
// or no text carry none.
func cacheBreakpoints(req *Request) map[int]breakpoint {
	if !req.CacheBreakpoints || len(req.Messages) == 0 {
		return nil
	}
	marks := map[int]breakpoint{}
	plain := func(m Message) bool { return len(m.ToolCalls) == 0 && m.Content != "" }
	mark := func(i int) {
		if m := req.Messages[i]; plain(m) {
			b := marks[i]
			b.end = true
			marks[i] = b
		}
	}
	for i, m := range req.Messages {
		if plain(m) && m.CacheSplit > 0 && m.CacheSplit < len(m.Content) {
			marks[i] = breakpoint{parts: true}
		}
	}
	sys := -1
	for i, m := range req.Messages {
		if m.Role != "system" {
			break
		}
		sys = i
	}
	if sys >= 0 {
		mark(sys)
	}
	last := len(req.Messages) - 1
	continued := req.Continued
	for _, m := range req.Messages {
		continued = continued || m.Role == "tool"
	}
	if continued {
		mark(last)
	}
	if b, ok := marks[last]; ok && b.parts {
		b.split = true
		marks[last] = b
	}
	for i := last - 1; i > sys; i-- {
		if req.Messages[i].Role == "user" {
			mark(i)
			break
		}
	}
	return marks
}

// encode builds the request body: the modelled fields, then req.Extra
// appended as members of the same object, in order.
func encode(req *Request, sh shape) ([]byte, error) {
	w := wireRequest{
		Model:           req.Model,
		Messages:        make([]any, len(req.Messages)),
		Temperature:     req.Temperature,
		TopP:            req.TopP,
		Seed:            req.Seed,
		ReasoningEffort: req.ReasoningEffort,
		Stream:          req.Stream,
	}
	marks := cacheBreakpoints(req)
	for i, m := range req.Messages {
		if len(m.ToolCalls) == 0 && images.Has(m.Content) {
			w.Messages[i] = imageMessage(m)
			continue
		}
		if b, ok := marks[i]; ok {
			w.Messages[i] = cachedMessage{Role: m.Role, Content: b.content(m.Content, m.CacheSplit), Name: m.Name, ToolCallID: m.ToolCallID}
			continue
		}
		w.Messages[i] = openai.ChatCompletionMessage{
			Role:       m.Role,
			Content:    m.Content,
			Name:       m.Name,
			ToolCallID: m.ToolCallID,
			ToolCalls:  toOpenAICalls(m.ToolCalls),
		}
	}
	if len(req.Tools) > 0 {
		w.Tools = make([]openai.Tool, len(req.Tools))
		for i, t := range req.Tools {
			params := t.Parameters
			if len(params) == 0 {
				params = emptyParameters
			}
			w.Tools[i] = openai.Tool{
				Type:     openai.ToolTypeFunction,
				Function: &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params},
			}
		}
	}
	if req.MaxTokens > 0 {
		if sh.tokenField == MaxCompletionTokensField {
			w.MaxCompletionTokens = req.MaxTokens
		} else {
			w.MaxTokens = req.MaxTokens
		}
	}
	switch sh.format {
	case openai.ChatCompletionResponseFormatTypeJSONObject:
		w.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: sh.format}
	case openai.ChatCompletionResponseFormatTypeJSONSchema:
		schema := req.JSON.Schema
		if len(schema) == 0 {
			schema = anyObject
		}
		w.ResponseFormat = &openai.ChatCompletionResponseFormat{
			Type: sh.format,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
				Name: schemaName(req.JSON.Name), Schema: schema, Strict: Strictable(schema),
			},
		}
	}
	if req.Stream && sh.streamUsage {
		w.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	body, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	if len(req.Extra) == 0 {
		return body, nil
	}
	// The object ends in '}'; extra members go before it.
	body = body[:len(body)-1]
	for _, f := range req.Extra {
		name, err := json.Marshal(f.Name)
		if err != nil {
			return nil, fmt.Errorf("encoding request field %q: %w", f.Name, err)
		}
		if !json.Valid(f.Value) {
			return nil, fmt.Errorf("request field %q is not valid JSON", f.Name)
		}
		body = append(body, ',')
		body = append(body, name...)
		body = append(body, ':')
		body = append(body, f.Value...)
	}
	return append(body, '}'), nil
}

// schemaName makes a json_schema name OpenAI accepts: letters, digits, '_'
// and '-', at most 64 of them.
func schemaName(name string) string {
	var b strings.Builder
	for _, r := range name {
		if b.Len() == 64 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "reply"
	}
	return b.String()
}

func toOpenAICalls(calls []kit.ToolCall) []openai.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]openai.ToolCall, len(calls))
	for i, tc := range calls {
		out[i] = openai.ToolCall{
			ID:       tc.ID,
			Type:     openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
		}
	}
	return out
}

// send makes one HTTP exchange and decodes its reply.
func (c *Client) send(ctx context.Context, st *attemptState, req *Request, sh shape) (Response, error) {
	body, err := encode(req, sh)
	if err != nil {
		return Response{}, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.provider.URL(*c.base, c.settings, req), bytes.NewReader(body))
	if err != nil {
		return Response{}, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	if req.Stream {
		hreq.Header.Set("Accept", "text/event-stream")
		hreq.Header.Set("Cache-Control", "no-cache")
	} else {
		hreq.Header.Set("Accept", "application/json")
	}
	if c.key != "" {
		if strings.EqualFold(c.keyHeader, "Authorization") {
			hreq.Header.Set("Authorization", "Bearer "+c.key)
		} else {
			hreq.Header.Set(c.keyHeader, c.key)
		}
	}
	for k, v := range c.headers {
		hreq.Header.Set(k, v)
	}
	st.sent = true
	resp, err := c.http.Do(hreq)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	st.status = resp.StatusCode
	st.retryAfter = c.provider.RetryAfter(resp.Header, time.Now())
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Response{}, errorFrom(resp)
	}
	if batch := resp.Header.Get(BatchHeader); batch != "" {
		out, err := readCompletion(st, resp.Body)
		out.Batch = batch
		out.BatchShared = resp.Header.Get(BatchSharedHeader) != ""
		return out, err
	}
	if !req.Stream {
		return readCompletion(st, resp.Body)
	}
	r := bufio.NewReader(resp.Body)
	if jsonAhead(r) {
		// Not streamed after all: some servers ignore stream: true and
		// answer in one piece (whatever content type they claim).
		return readCompletion(st, r)
	}
	return readStream(st, r, req.OnDelta)
}

// jsonAhead reports whether the body starts with a JSON object rather than
// server-sent events.
func jsonAhead(r *bufio.Reader) bool {
	for n := 1; n <= r.Size(); n++ {
		b, err := r.Peek(n)
		if len(b) < n || err != nil {
			return false
		}
		switch b[n-1] {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}

// errorFrom turns an error response into go-openai's *APIError when it is
// an OpenAI-style error object (or LM Studio's plain error string), else an
// *HTTPError with the start of the body.
func errorFrom(resp *http.Response) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return fmt.Errorf("status %s; reading the error body: %w", resp.Status, err)
	}
	if e := apiError(body); e != nil {
		e.HTTPStatus, e.HTTPStatusCode = resp.Status, resp.StatusCode
		return e
	}
	return &HTTPError{Status: resp.Status, StatusCode: resp.StatusCode, Body: snippet(body)}
}

// apiError reads {"error": {...}} or {"error": "text"}; nil when body is
// neither.
func apiError(body []byte) *openai.APIError {
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil {
		return nil
	}
	return errorValue(env.Error)
}

// errorValue decodes the value of an "error" member.
func errorValue(raw json.RawMessage) *openai.APIError {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return &openai.APIError{Message: text}
	}
	var e openai.APIError
	if json.Unmarshal(raw, &e) != nil {
		return nil
	}
	return &e
}

// HTTPError is an error response that is not an OpenAI-style error object:
// a plain-text 404 from Ollama, FastAPI's {"detail": ...} from vLLM, a
// gateway's HTML page.
type HTTPError struct {
	Status     string
	StatusCode int
	Body       string // the start of the body
}

func (e *HTTPError) Error() string {
	if e.Body == "" {
		return "status " + e.Status
	}
	return fmt.Sprintf("status %s: %s", e.Status, e.Body)
}

// snippet is the start of a body, on one line.
func snippet(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// bodyError is an error in a 2xx body: LM Studio answers an unknown path
// with 200 and {"error": "Unexpected endpoint or method..."}, and servers
// report a failure mid-stream in a data event. A refusal (a bare message,
// or type invalid_request_error) is final; anything else is transient. nil
// when raw holds no error.
func bodyError(st *attemptState, raw json.RawMessage) error {
	e := errorValue(raw)
	if e == nil {
		return nil
	}
	if e.Type == "invalid_request_error" || len(raw) > 0 && raw[0] == '"' {
		st.final = true
	}
	return fmt.Errorf("the server answered with an error: %w", e)
}

// completion is a reply with usage as a pointer, so that a reply without
// usage can be told from one that used no tokens.
type completion struct {
	openai.ChatCompletionResponse
	Usage json.RawMessage `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// setUsage puts a reply's usage member into out, read by the provider
// kind; usage that cannot be read is kept as sent, with why, and the reply
// with it (its tokens are then counted with a tokenizer). Absent or null
// usage leaves out as it is.
func (st *attemptState) setUsage(out *Response, raw json.RawMessage) {
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	u, err := st.usage(raw)
	if err != nil {
		out.PromptTokens, out.CompletionTokens, out.CachedTokens, out.CacheWriteTokens = 0, 0, 0, 0
		out.UsageError = err.Error()
		out.UsageRaw = append(json.RawMessage(nil), raw...)
		return
	}
	out.UsageError, out.UsageRaw = "", nil
	out.PromptTokens, out.CompletionTokens = u.PromptTokens, u.CompletionTokens
	out.CachedTokens, out.CacheWriteTokens = u.CachedTokens, u.CacheWriteTokens
}

// readCompletion decodes a non-streaming reply.
func readCompletion(st *attemptState, body io.Reader) (Response, error) {
	var r completion
	raw, err := io.ReadAll(body)
	if err != nil {
		return Response{}, fmt.Errorf("reading the response: %w", err)
	}
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&r); err != nil {
		return Response{}, fmt.Errorf("decoding the response: %w", err)
	}
	if len(r.Choices) == 0 {
		if err := bodyError(st, r.Error); err != nil {
			return Response{}, err
		}
		return Response{}, ErrNoChoices
	}
	ch := r.Choices[0]
	out := Response{
		Content:      ch.Message.Content,
		FinishReason: string(ch.FinishReason),
		Model:        r.Model,
	}
	st.setUsage(&out, r.Usage)
	if len(ch.Message.ToolCalls) > 0 {
		out.ToolCalls = make([]kit.ToolCall, len(ch.Message.ToolCalls))
		for i, tc := range ch.Message.ToolCalls {
			out.ToolCalls[i] = kit.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
		}
	}
	return out, nil
}

// chunk is one streamed event.
type chunk struct {
	openai.ChatCompletionStreamResponse
	Usage json.RawMessage `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// partialCall is a tool call being reassembled from stream deltas.
type partialCall struct {
	index int
	call  kit.ToolCall
}

var (
	dataPrefix = []byte("data:")
	doneMarker = []byte("[DONE]")
)

// readStream reads server-sent events and reassembles the reply. Comment
// lines (OpenRouter's ": OPENROUTER PROCESSING" keep-alives), event names
// and ids are skipped.
func readStream(st *attemptState, r *bufio.Reader, onDelta func(string)) (Response, error) {
	var (
		out     Response
		content strings.Builder
		calls   []partialCall
		line    []byte
	)
	for {
		part, err := r.ReadSlice('\n')
		line = append(line, part...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // a long event: read on
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return Response{}, fmt.Errorf("reading stream: %w", err)
		}
		data, ok := bytes.CutPrefix(bytes.TrimSpace(line), dataPrefix)
		line = line[:0]
		if ok {
			data = bytes.TrimSpace(data)
			if bytes.Equal(data, doneMarker) {
				break
			}
			var ch chunk
			if derr := json.Unmarshal(data, &ch); derr != nil {
				return Response{}, fmt.Errorf("reading stream: decoding an event: %w", derr)
			}
			if err := bodyError(st, ch.Error); err != nil {
				return Response{}, err
			}
			if ch.Model != "" {
				out.Model = ch.Model
			}
			st.setUsage(&out, ch.Usage)
			for _, c := range ch.Choices {
				if c.Index != 0 {
					continue // only one choice is ever requested
				}
				if d := c.Delta.Content; d != "" {
					content.WriteString(d)
					if onDelta != nil {
						onDelta(d)
					}
				}
				for _, tc := range c.Delta.ToolCalls {
					calls = mergeCallDelta(calls, tc)
				}
				if c.FinishReason != "" && c.FinishReason != openai.FinishReasonNull {
					out.FinishReason = string(c.FinishReason)
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	// A connection cut between two events looks like a clean end to the
	// reader; only a finish_reason proves the reply is complete.
	if out.FinishReason == "" {
		return Response{}, ErrStreamTruncated
	}
	out.Content = content.String()
	if len(calls) > 0 {
		slices.SortStableFunc(calls, func(a, b partialCall) int { return a.index - b.index })
		out.ToolCalls = make([]kit.ToolCall, len(calls))
		for i, p := range calls {
			out.ToolCalls[i] = p.call
		}
	}
	return out, nil
}

// mergeCallDelta folds one streamed tool-call fragment into calls. OpenAI
// sends the id and name once and then argument fragments under the same
// index; servers that omit the index are matched by id, or else continue
// the latest call.
func mergeCallDelta(calls []partialCall, d openai.ToolCall) []partialCall {
	at := -1
	switch {
	case d.Index != nil:
		for i := range calls {
			if calls[i].index == *d.Index {
				at = i
				break
			}
		}
	case d.ID != "":
		for i := range calls {
			if calls[i].call.ID == d.ID {
				at = i
				break
			}
		}
	case len(calls) > 0:
		at = len(calls) - 1
	}
	if at < 0 {
		idx := len(calls)
		if d.Index != nil {
			idx = *d.Index
		}
		calls = append(calls, partialCall{index: idx})
		at = len(calls) - 1
	}
	p := &calls[at].call
	if p.ID == "" {
		p.ID = d.ID
	}
	if p.Name == "" {
		p.Name = d.Function.Name
	}
	p.Arguments += d.Function.Arguments
	return calls
}

// BreakpointOffsets are where the request would carry cache breakpoints if
// it were sent with CacheBreakpoints (whatever its own setting), as offsets
// into its messages counted the way a shared start is (each message's role
// and content, one after the other), in increasing order: the end of a
// marked message, or its split. The cacheable share by Anthropic's rule
// reads them (a cache entry is written and read only at a breakpoint).
func BreakpointOffsets(req *Request) []int {
	r := *req
	r.CacheBreakpoints = true
	marks := cacheBreakpoints(&r)
	var out []int
	at := 0
	for i, m := range r.Messages {
		start := at + len(m.Role)
		at = start + len(m.Content)
		b, ok := marks[i]
		if !ok {
			continue
		}
		if b.split {
			out = append(out, start+m.CacheSplit)
		}
		if b.end {
			out = append(out, at)
		}
	}
	return out
}
