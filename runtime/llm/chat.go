package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Errors for 2xx responses that cannot be used; both are treated as
// transient and retried.
var (
	ErrNoChoices       = errors.New("response has no choices")
	ErrStreamTruncated = errors.New("stream ended without a finish_reason")
)

// emptyParameters stands in for a tool without a schema: servers reject a
// function whose parameters are null.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// buildRequest converts req to go-openai's request once; attempts reuse it.
func buildRequest(req *Request) openai.ChatCompletionRequest {
	out := openai.ChatCompletionRequest{
		Model:    req.Model,
		Messages: make([]openai.ChatCompletionMessage, len(req.Messages)),
		Seed:     req.Seed,
		Stream:   req.Stream,
	}
	for i, m := range req.Messages {
		out.Messages[i] = openai.ChatCompletionMessage{
			Role:       m.Role,
			Content:    m.Content,
			Name:       m.Name,
			ToolCallID: m.ToolCallID,
			ToolCalls:  toOpenAICalls(m.ToolCalls),
		}
	}
	out.Temperature = sampling(req.Temperature)
	out.TopP = sampling(req.TopP)
	if len(req.Tools) > 0 {
		out.Tools = make([]openai.Tool, len(req.Tools))
		for i, t := range req.Tools {
			params := t.Parameters
			if len(params) == 0 {
				params = emptyParameters
			}
			out.Tools[i] = openai.Tool{
				Type:     openai.ToolTypeFunction,
				Function: &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params},
			}
		}
	}
	if req.JSONMode {
		out.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
	}
	if req.Stream {
		out.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	setMaxTokens(&out, req.MaxTokens)
	return out
}

// setMaxTokens sets the completion budget. max_tokens is deprecated by
// OpenAI but it is the field every OpenAI-compatible server (Ollama,
// llama.cpp, older vLLM, gateways) understands, so it stays the default;
// reasoning models (o1, o3, gpt-5, ...) reject it and get
// max_completion_tokens. go-openai's validator knows which models those are,
// so it is asked rather than a list of our own kept.
func setMaxTokens(r *openai.ChatCompletionRequest, n int) {
	if n <= 0 {
		return
	}
	//lint:ignore SA1019 the probe asks go-openai whether this model rejects max_tokens
	probe := openai.ChatCompletionRequest{Model: r.Model, MaxTokens: n}
	if errors.Is(openai.NewReasoningValidator().Validate(probe), openai.ErrReasoningModelMaxTokensDeprecated) {
		r.MaxCompletionTokens = n
		return
	}
	//lint:ignore SA1019 deliberate, see above: the field all compatible servers accept
	r.MaxTokens = n
}

// sampling converts an optional temperature or top_p. go-openai's fields are
// float32 with omitempty, so an explicit 0 would silently become the server
// default (1.0 for temperature); the smallest positive float32 is sent
// instead, which servers treat as 0.
func sampling(v *float64) float32 {
	if v == nil {
		return 0
	}
	if *v == 0 {
		return math.SmallestNonzeroFloat32
	}
	return float32(*v)
}

func toOpenAICalls(calls []ToolCall) []openai.ToolCall {
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

// once performs a non-streaming attempt.
func (c *Client) once(ctx context.Context, creq openai.ChatCompletionRequest) (Response, error) {
	r, err := c.api.CreateChatCompletion(ctx, creq)
	if err != nil {
		return Response{}, err
	}
	if len(r.Choices) == 0 {
		return Response{}, ErrNoChoices
	}
	ch := r.Choices[0]
	out := Response{
		Content:          ch.Message.Content,
		FinishReason:     string(ch.FinishReason),
		Model:            r.Model,
		PromptTokens:     r.Usage.PromptTokens,
		CompletionTokens: r.Usage.CompletionTokens,
	}
	if len(ch.Message.ToolCalls) > 0 {
		out.ToolCalls = make([]ToolCall, len(ch.Message.ToolCalls))
		for i, tc := range ch.Message.ToolCalls {
			out.ToolCalls[i] = ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments}
		}
	}
	return out, nil
}

// partialCall is a tool call being reassembled from stream deltas.
type partialCall struct {
	index int
	call  ToolCall
}

// stream performs a streaming attempt and reassembles the reply.
func (c *Client) stream(ctx context.Context, creq openai.ChatCompletionRequest, onDelta func(string)) (Response, error) {
	s, err := c.api.CreateChatCompletionStream(ctx, creq)
	if err != nil {
		return Response{}, err
	}
	defer s.Close()

	var (
		out     Response
		content strings.Builder
		calls   []partialCall
	)
	for {
		chunk, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Response{}, fmt.Errorf("reading stream: %w", err)
		}
		if chunk.Model != "" {
			out.Model = chunk.Model
		}
		if chunk.Usage != nil {
			out.PromptTokens = chunk.Usage.PromptTokens
			out.CompletionTokens = chunk.Usage.CompletionTokens
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue // only one choice is ever requested
			}
			if d := ch.Delta.Content; d != "" {
				content.WriteString(d)
				if onDelta != nil {
					onDelta(d)
				}
			}
			for _, tc := range ch.Delta.ToolCalls {
				calls = mergeCallDelta(calls, tc)
			}
			if ch.FinishReason != "" && ch.FinishReason != openai.FinishReasonNull {
				out.FinishReason = string(ch.FinishReason)
			}
		}
	}
	// A connection cut between two events looks like a clean end to the
	// stream reader; only a finish_reason proves the reply is complete.
	if out.FinishReason == "" {
		return Response{}, ErrStreamTruncated
	}
	out.Content = content.String()
	if len(calls) > 0 {
		slices.SortStableFunc(calls, func(a, b partialCall) int { return a.index - b.index })
		out.ToolCalls = make([]ToolCall, len(calls))
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

// estimateTokens is the tokens-per-minute reservation for req: about four
// characters per token for everything sent, a few tokens of framing per
// message, plus the completion budget.
func estimateTokens(req *Request) int {
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
	completion := req.MaxTokens
	if completion <= 0 {
		completion = DefaultCompletionEstimate
	}
	return chars/4 + 4*len(req.Messages) + completion
}
