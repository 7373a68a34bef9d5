package chat

import (
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes/kit"
)

func TestPairsNames(t *testing.T) {
	got, err := Pairs([]any{
		map[string]any{"user": "u1", "assistant": "a1", "name": "ex ample"},
		map[string]any{"user": "u2", "assistant": "a2", "name": "both", "user_name": "asker"},
		map[string]any{"user": "u3", "assistant": "a3", "assistant_name": "solver"},
		[]any{"u4", "a4"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []kit.ChatMessage{
		{Role: "user", Content: "u1", Name: "ex_ample"}, {Role: "assistant", Content: "a1", Name: "ex_ample"},
		{Role: "user", Content: "u2", Name: "asker"}, {Role: "assistant", Content: "a2", Name: "both"},
		{Role: "user", Content: "u3"}, {Role: "assistant", Content: "a3", Name: "solver"},
		{Role: "user", Content: "u4"}, {Role: "assistant", Content: "a4"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d messages, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].Role != want[i].Role || got[i].Content != want[i].Content || got[i].Name != want[i].Name {
			t.Errorf("message %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestPairsRefuseUnknownKeys(t *testing.T) {
	for _, tc := range []struct {
		item any
		want string
	}{
		{map[string]any{"user": "u", "assistant": "a", "speaker": "x"}, `item 1 has key "speaker"`},
		{map[string]any{"user": "u", "assistant": "a", "name": 3.0}, "item 1: name must be a non-empty text"},
		{map[string]any{"user": "u", "assistant": "a", "user_name": ""}, "item 1: user_name must be a non-empty text"},
	} {
		_, err := Pairs([]any{tc.item})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Pairs(%v) error %v, want one containing %q", tc.item, err, tc.want)
		}
	}
}
