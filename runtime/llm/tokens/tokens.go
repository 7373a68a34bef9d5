// Package tokens counts tokens the way OpenAI's tokenizers do, for estimates
// (dry runs) and for replies whose server reported no usage.
package tokens

import (
	"fmt"
	"strings"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// The BPE tables are embedded in the binary (tiktoken-go-loader), so
// counting needs no network. OpenAI models get their own encoding; other
// models (Llama, Mistral, Claude via a gateway...) get o200k_base, which is
// an approximation: their tokenizers differ, typically by a few percent to a
// quarter on English text.
var (
	tokenizerOnce sync.Once
	encodingsMu   sync.Mutex
	encodings     = map[string]*tiktoken.Tiktoken{}
)

// chatOverhead are the tokens a chat request adds around message texts: a
// few per message (role and separators) and a few to prime the reply, as
// OpenAI documents for its chat models.
const (
	tokensPerMessage = 3
	tokensPerReply   = 3
)

// EncodingFor names the tokenizer used to count tokens for a model.
func EncodingFor(model string) string {
	name := model
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:] // openai/gpt-4o on a gateway
	}
	if enc, ok := tiktoken.MODEL_TO_ENCODING[name]; ok {
		return enc
	}
	for prefix, enc := range tiktoken.MODEL_PREFIX_TO_ENCODING {
		if strings.HasPrefix(name, prefix) {
			return enc
		}
	}
	return tiktoken.MODEL_O200K_BASE
}

func encoding(name string) (*tiktoken.Tiktoken, error) {
	tokenizerOnce.Do(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
	encodingsMu.Lock()
	defer encodingsMu.Unlock()
	if enc, ok := encodings[name]; ok {
		return enc, nil
	}
	enc, err := tiktoken.GetEncoding(name)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", name, err)
	}
	encodings[name] = enc
	return enc, nil
}

// Count counts the tokens of text with the model's tokenizer. Special
// tokens in the text are counted as the plain text they are in a prompt.
// Should the tokenizer be unavailable, a quarter of the byte length stands
// in, which is the usual rule of thumb for English.
func Count(model, text string) int {
	if text == "" {
		return 0
	}
	enc, err := encoding(EncodingFor(model))
	if err != nil {
		return (len(text) + 3) / 4
	}
	return len(enc.EncodeOrdinary(text))
}

// CountChat counts the prompt tokens of a chat request.
func CountChat(model string, messages ...string) int {
	n := tokensPerReply
	for _, m := range messages {
		n += tokensPerMessage + Count(model, m)
	}
	return n
}
