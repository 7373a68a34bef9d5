package dryrun

import "github.com/debate-runner/runner/runtime/llm/tokens"

// Token counting lives in runtime/llm/tokens, which the model client also
// uses for replies without usage; these are its names in dry runs.

// EncodingFor names the tokenizer used to count tokens for a model.
func EncodingFor(model string) string { return tokens.EncodingFor(model) }

// CountTokens counts the tokens of text with the model's tokenizer.
func CountTokens(model, text string) int { return tokens.Count(model, text) }

// CountChatTokens counts the prompt tokens of a chat request.
func CountChatTokens(model string, messages ...string) int {
	return tokens.CountChat(model, messages...)
}
