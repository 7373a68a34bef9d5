package tokens

import "testing"

func TestCount(t *testing.T) {
	if n := Count("gpt-4o", "hello world"); n != 2 {
		t.Errorf("Count(hello world) = %d, want 2", n)
	}
	if n := Count("gpt-4o", ""); n != 0 {
		t.Errorf("Count of nothing = %d", n)
	}
	// Two messages: 3 to prime the reply, 3 per message, and their texts.
	if n := CountChat("llama3.2", "hello world", "hello world"); n != 3+2*(3+2) {
		t.Errorf("CountChat = %d, want 13", n)
	}
	for model, want := range map[string]string{"gpt-4o": "o200k_base", "gpt-4": "cl100k_base", "openai/gpt-4o-mini": "o200k_base", "llama3.2": "o200k_base"} {
		if got := EncodingFor(model); got != want {
			t.Errorf("EncodingFor(%s) = %s, want %s", model, got, want)
		}
	}
}
