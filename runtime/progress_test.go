package runtime

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/debate-runner/runner/runtime/journal"
)

// TestPlainProgress: plain progress prints a line per node start, end,
// failure and retry, counting tokens from model responses; other events,
// however large, print nothing.
func TestPlainProgress(t *testing.T) {
	tests := []struct {
		name   string
		events []journal.Event
		want   string
	}{
		{
			name: "node with calls",
			events: []journal.Event{
				{Type: "node_started", Key: "answer/round=1", Data: json.RawMessage(`{"kind":"ask","node":"answer","scope":"round=1"}`)},
				{Type: "model_request", Key: "answer/round=1/a", Data: json.RawMessage(`{"messages":[{"role":"user","chars":3}],"node":"answer"}`)},
				{Type: "model_response", Key: "answer/round=1/a", Data: json.RawMessage(`{"content":"a\nb","prompt_tokens":100,"completion_tokens":50}`)},
				{Type: "model_response", Key: "answer/round=1/b", Data: json.RawMessage(`{"content":"c","prompt_tokens":7.9,"completion_tokens":"many"}`)},
				{Type: "message", Key: "m1", Data: json.RawMessage(`{"content":"a\nb","node":"answer"}`)},
				{Type: "node_finished", Key: "answer/round=1", Data: json.RawMessage(`{"calls":2,"messages":2,"node":"answer"}`)},
			},
			want: "[round=1] answer: started\n[round=1] answer: done (2 calls, 157 tokens so far)\n",
		},
		{
			name: "retry and failure outside loops",
			events: []journal.Event{
				{Type: "node_started", Key: "answer/-", Data: json.RawMessage(`{"kind":"ask","node":"answer","scope":"-"}`)},
				{Type: "retry", Key: "answer/-/a", Data: json.RawMessage(`{"attempt":1,"error":"status 503","status":503,"wait_ms":10}`)},
				{Type: "node_failed", Key: "answer/-", Data: json.RawMessage(`{"error":"gave up","node":"answer"}`)},
			},
			want: "· answer: started\nretrying answer/-/a (attempt 1): status 503\n· answer: failed: gave up\n",
		},
		{
			name: "payloads that are not what they should be",
			events: []journal.Event{
				{Type: "node_started", Key: "x", Data: json.RawMessage(`{"node":7,"scope":"goal=g/round=2"}`)},
				{Type: "model_response", Key: "x/a", Data: json.RawMessage(`not json`)},
				{Type: "node_finished", Key: "x"},
			},
			want: "[goal=g round=2] : started\n[goal=g round=2] : done (<nil> calls, 0 tokens so far)\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			observe := NewProgress(&out, ProgressPlain)
			for i := range tt.events {
				observe(Notice{Event: &tt.events[i]})
			}
			if out.String() != tt.want {
				t.Errorf("progress printed\n%q\nwant\n%q", out.String(), tt.want)
			}
		})
	}
}
