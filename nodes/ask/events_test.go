package ask

import (
	"encoding/json"
	"testing"
)

// TestOutputEventEncoding: the output event payloads encode as the one-key
// maps the journal held before, whatever the output.
func TestOutputEventEncoding(t *testing.T) {
	tests := []struct {
		name string
		got  any
		want any
	}{
		{name: "text", got: outputEvent{Output: "a <b> & c"}, want: map[string]any{"output": "a <b> & c"}},
		{name: "object", got: outputEvent{Output: map[string]any{"z": 1.5, "a": []any{"x", nil}}}, want: map[string]any{"output": map[string]any{"z": 1.5, "a": []any{"x", nil}}}},
		{name: "nil", got: outputEvent{}, want: map[string]any{"output": nil}},
		{name: "reply", got: replyOutputEvent{OutputIsReply: true}, want: map[string]any{"output_is_reply": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.got)
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(tt.want)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("encoded as %s, want %s", got, want)
			}
		})
	}
}
