package llm

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	openai "github.com/sashabaranov/go-openai"

	"github.com/debate-runner/runner/runtime/llm/tokens"
)

// What an endpoint refuses is learned from its 400 errors, the way a person
// would read them: the error names the field. Servers say it differently
// (OpenAI: "Unsupported parameter: 'max_tokens' is not supported with this
// model. Use 'max_completion_tokens' instead."; LM Studio:
// "'response_format.type' must be 'json_schema' or 'text'"; Azure with an
// older api-version: "Unrecognized request argument supplied:
// max_completion_tokens"), so matching is by field name plus a word of
// refusal, never by one server's exact sentence.

// learned is what a client found out about its endpoint; it holds for the
// client's life (a run, or every run of a sweep).
type learned struct {
	mu       sync.Mutex
	refused  map[openai.ChatCompletionResponseFormatType]bool
	field    map[string]string // model -> token field that works
	noStream bool              // stream_options refused
}

func (l *learned) init() {
	l.refused = map[openai.ChatCompletionResponseFormatType]bool{}
	l.field = map[string]string{}
}

// TokenFieldFor is the token-limit field sent for a model when nothing says
// otherwise: max_completion_tokens for OpenAI's reasoning models (o1, o3,
// o4-mini, gpt-5 and their dated versions, also behind a "openai/" prefix),
// which refuse max_tokens, and max_tokens, which every other
// OpenAI-compatible server understands, for the rest. gpt-5-chat models are
// chat models and take max_tokens. A deployment or alias with another name
// is found out from its first refusal (see adapt).
func TokenFieldFor(model string) string {
	name := strings.ToLower(model)
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	reasoning := strings.HasPrefix(name, "gpt-5") && !strings.Contains(name, "-chat") ||
		len(name) >= 2 && name[0] == 'o' && name[1] >= '1' && name[1] <= '9'
	if reasoning {
		return MaxCompletionTokensField
	}
	return MaxTokensField
}

// ladder lists the response formats a JSON request may be sent with, from
// the first to try to the last resort (none).
func ladder(j *JSONReply) []openai.ChatCompletionResponseFormatType {
	const (
		schema = openai.ChatCompletionResponseFormatTypeJSONSchema
		object = openai.ChatCompletionResponseFormatTypeJSONObject
	)
	switch j.Mode {
	case JSONNone:
		return []openai.ChatCompletionResponseFormatType{""}
	case JSONObject:
		return []openai.ChatCompletionResponseFormatType{object, ""}
	case JSONSchema:
		return []openai.ChatCompletionResponseFormatType{schema, object, ""}
	}
	if len(j.Schema) > 0 {
		return []openai.ChatCompletionResponseFormatType{schema, object, ""}
	}
	// Without a schema json_object says the same with less; servers that
	// refuse it (LM Studio) take json_schema with any object.
	return []openai.ChatCompletionResponseFormatType{object, schema, ""}
}

// shape is where a request starts: what the caller asked for, changed by
// what the endpoint refused before.
func (l *learned) shape(req *Request) shape {
	l.mu.Lock()
	defer l.mu.Unlock()
	sh := shape{streamUsage: req.Stream && !req.NoStreamUsage && !l.noStream}
	if req.MaxTokens > 0 {
		sh.tokenField = req.TokenField
		if f, ok := l.field[req.Model]; ok {
			sh.tokenField = f
		}
		if sh.tokenField == "" {
			sh.tokenField = TokenFieldFor(req.Model)
		}
	}
	if req.JSON != nil {
		sh.format = l.nextFormat(req.JSON, "", true)
	}
	return sh
}

// nextFormat is the first format of j's ladder after from (or from the
// start) that the endpoint has not refused; "" when none is left. Call with
// l.mu held.
func (l *learned) nextFormat(j *JSONReply, from openai.ChatCompletionResponseFormatType, start bool) openai.ChatCompletionResponseFormatType {
	steps := ladder(j)
	i := 0
	if !start {
		for i < len(steps) && steps[i] != from {
			i++
		}
		i++
	}
	for ; i < len(steps); i++ {
		if steps[i] == "" || !l.refused[steps[i]] {
			return steps[i]
		}
	}
	return ""
}

// adapt reads a refused request's error: when it names a field the client
// can do without or send differently, it returns the shape to send the
// request again with, and, for the first call to learn it, a note saying
// what changed. ok is false when the error is about something else.
func (l *learned) adapt(req *Request, sh shape, status int, err error) (next shape, note string, ok bool) {
	if status != http.StatusBadRequest && status != http.StatusUnprocessableEntity {
		return sh, "", false
	}
	msg := strings.ToLower(errorMessage(err))
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case req.JSON != nil && sh.format != "" && (strings.Contains(msg, "response_format") || strings.Contains(msg, string(sh.format))):
		first := !l.refused[sh.format]
		l.refused[sh.format] = true
		refusedFormat := sh.format
		sh.format = l.nextFormat(req.JSON, sh.format, false)
		if first {
			note = fmt.Sprintf("refused response_format %s (%s); sent %s instead, and will for the rest of the run (json_mode in the spec chooses where to start)",
				refusedFormat, quote(err), formatName(sh.format))
		}
		return sh, note, true
	case sh.tokenField != "" && !sh.swapped && strings.Contains(msg, sh.tokenField) && refusal(msg):
		other := MaxTokensField
		if sh.tokenField == MaxTokensField {
			other = MaxCompletionTokensField
		}
		if l.field[req.Model] != other {
			note = fmt.Sprintf("model %q refused %s (%s); sent the token limit as %s instead, and will for the rest of the run (max_tokens_field in the spec sets it)",
				req.Model, sh.tokenField, quote(err), other)
		}
		l.field[req.Model] = other
		sh.tokenField, sh.swapped = other, true
		return sh, note, true
	case sh.streamUsage && strings.Contains(msg, "stream_options"):
		if !l.noStream {
			note = fmt.Sprintf("refused stream_options (%s); streams without it from now on, and its token counts are estimated (stream_usage: false in the spec skips it)", quote(err))
		}
		l.noStream = true
		sh.streamUsage = false
		return sh, note, true
	}
	return sh, "", false
}

// refusal reports whether an error message says a field is not taken.
func refusal(msg string) bool {
	for _, w := range []string{"unsupported", "not supported", "unrecognized", "unknown", "not allowed", "not permitted", "extra inputs", "instead", "invalid parameter"} {
		if strings.Contains(msg, w) {
			return true
		}
	}
	return false
}

// errorMessage is the server's own words when err carries them.
func errorMessage(err error) string {
	var api *openai.APIError
	if errors.As(err, &api) {
		msg := api.Message
		if api.Param != nil {
			msg += " (param " + *api.Param + ")"
		}
		return msg
	}
	var h *HTTPError
	if errors.As(err, &h) {
		return h.Body
	}
	return err.Error()
}

// quote shortens an error for a warning.
func quote(err error) string {
	msg := errorMessage(err)
	if len(msg) > 160 {
		msg = msg[:160] + "..."
	}
	var api *openai.APIError
	if errors.As(err, &api) && api.HTTPStatusCode != 0 {
		return fmt.Sprintf("%d: %s", api.HTTPStatusCode, msg)
	}
	return msg
}

func formatName(f openai.ChatCompletionResponseFormatType) string {
	if f == "" {
		return "no response_format (the reply is still parsed as JSON)"
	}
	return "response_format " + string(f)
}

// hint says what to check after a failure, when the error suggests it:
// the provider kind's hint first, then what any endpoint may be told.
func (c *Client) hint(req *Request, st *attemptState, err error) string {
	msg := strings.ToLower(errorMessage(err))
	if h := c.provider.Hint(Failure{Base: c.base, Settings: c.settings, KeyHeader: c.keyHeader, Request: req, Status: st.status, Message: msg}); h != "" {
		return h
	}
	if st.status == http.StatusBadRequest && (strings.Contains(msg, "temperature") || strings.Contains(msg, "top_p") || strings.Contains(msg, "seed")) && refusal(msg) {
		return "this model takes no such sampling parameter: remove it from the model, or list it under omit"
	}
	return ""
}

// estimateUsage fills in token counts for a reply whose server sent none,
// with the model's tokenizer (o200k_base for models OpenAI's tables do not
// know).
func estimateUsage(req *Request, resp *Response) {
	texts := make([]string, 0, len(req.Messages)+len(req.Tools))
	for _, m := range req.Messages {
		t := m.Content
		for _, tc := range m.ToolCalls {
			t += tc.Name + tc.Arguments
		}
		texts = append(texts, t)
	}
	for _, t := range req.Tools {
		texts = append(texts, t.Name+t.Description+string(t.Parameters))
	}
	out := resp.Content
	for _, tc := range resp.ToolCalls {
		out += tc.Name + tc.Arguments
	}
	resp.PromptTokens = tokens.CountChat(req.Model, texts...)
	resp.CompletionTokens = tokens.Count(req.Model, out)
	resp.UsageEstimated = true
}

// estimateTokens is the tokens-per-minute reservation for req: about four
// characters per token for everything sent, a few tokens of framing per
// message, plus the completion budget.
func estimateTokens(req *Request) int {
	completion := req.MaxTokens
	if completion <= 0 {
		completion = DefaultCompletionEstimate
	}
	return EstimatePromptTokens(req) + completion
}

// EstimatePromptTokens is a quick estimate of a request's prompt tokens
// (its characters over four, plus a few per message), for limits that are
// checked before a call is sent.
func EstimatePromptTokens(req *Request) int {
	chars := 0
	for _, m := range req.Messages {
		chars += len(m.Content) + len(m.Name)
		for _, tc := range m.ToolCalls {
			chars += len(tc.Name) + len(tc.Arguments)
		}
	}
	for _, t := range req.Tools {
		chars += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return chars/4 + 4*len(req.Messages)
}
