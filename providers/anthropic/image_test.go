package anthropic

import (
	"encoding/json"
	"strings"
	"testing"
)

// A user message of text and image parts goes as the Messages API's text
// and image blocks, the bytes as a base64 source and a URL as a URL one.
func TestImagePartsBecomeImageBlocks(t *testing.T) {
	body := `{"model":"claude-x","messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},{"type":"image_url","image_url":{"url":"https://example.com/a.png"}},{"type":"text","text":"and say"}]}]}`
	p, _, err := Translate([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(p.Messages)
	for _, want := range []string{`{"text":"look","type":"text"}`, `"source":{"data":"iVBORw0KGgo=","media_type":"image/png","type":"base64"}`, `"source":{"url":"https://example.com/a.png","type":"url"}`, `"text":"and say"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("messages %s lack %s", out, want)
		}
	}
}
