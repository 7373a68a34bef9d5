package gemini

import (
	"strings"
	"testing"
)

// A user message of text and image parts goes as Gemini's text, inline
// data (the bytes) and file data (a URL) parts.
func TestImagePartsBecomeInlineData(t *testing.T) {
	body := `{"model":"gemini-x","messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4AAQ"}},{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}`
	out, err := Translate([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`{"text":"look"}`, `{"inlineData":{"mimeType":"image/jpeg","data":"/9j/4AAQ"}}`, `{"fileData":{"fileUri":"https://example.com/a.png"}}`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("request %s lacks %s", out, want)
		}
	}
}
