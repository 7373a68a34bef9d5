package relay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http/httptest"
	"strings"
	"testing"
)

// genText is a short text with the characters JSON escapes.
func genText(rng *rand.Rand) string {
	const alphabet = "ab \"\\\n\t<>&é{}"
	r := []rune(alphabet)
	var b strings.Builder
	for n := rng.Intn(12); n > 0; n-- {
		b.WriteRune(r[rng.Intn(len(r))])
	}
	return b.String()
}

// FuzzStream: whatever deltas a transport writes (text pieces, tool calls
// opened and their arguments in pieces), the chunks read back as an engine
// reads them (each "data:" event a JSON chunk) give the same text, the
// same calls with their arguments, the model, the finish reason and the
// usage, then [DONE]; a stream without End has no finish reason.
func FuzzStream(f *testing.F) {
	for _, seed := range []int64{1, 2, 3, 4} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewSource(seed))
		var buf bytes.Buffer
		s := &Stream{W: &buf, Model: "m-" + genText(rng)}
		var text strings.Builder
		type call struct{ id, name, args string }
		var calls []call
		for n := rng.Intn(20); n > 0; n-- {
			switch {
			case rng.Intn(3) == 0:
				c := call{id: fmt.Sprint("c", len(calls)), name: "f" + genText(rng)}
				i := len(calls)
				calls = append(calls, c)
				d := Call{Index: &i, ID: c.id, Type: "function"}
				d.Function.Name = c.name
				if err := s.Delta(&Reply{ToolCalls: []Call{d}}); err != nil {
					t.Fatal(err)
				}
			case len(calls) > 0 && rng.Intn(2) == 0:
				i := rng.Intn(len(calls))
				piece := genText(rng)
				calls[i].args += piece
				d := Call{Index: &i}
				d.Function.Arguments = piece
				if err := s.Delta(&Reply{ToolCalls: []Call{d}}); err != nil {
					t.Fatal(err)
				}
			default:
				piece := genText(rng)
				text.WriteString(piece)
				if err := s.Delta(&Reply{Content: piece}); err != nil {
					t.Fatal(err)
				}
			}
		}
		ended := rng.Intn(4) != 0
		finish := []string{"stop", "length", "tool_calls"}[rng.Intn(3)]
		var usage json.RawMessage
		if rng.Intn(2) == 0 {
			usage = json.RawMessage(fmt.Sprintf(`{"prompt_tokens":%d}`, rng.Intn(1000)))
		}
		if ended {
			if err := s.End(finish, usage); err != nil {
				t.Fatal(err)
			}
		}

		// Read it back.
		got, err := ReadChunks(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if got.Text != text.String() || len(got.Calls) != len(calls) {
			t.Fatalf("read back %q and %d calls, wrote %q and %d", got.Text, len(got.Calls), text.String(), len(calls))
		}
		for i, c := range calls {
			if g := got.Calls[i]; g.ID != c.id || g.Name != c.name || g.Arguments != c.args {
				t.Fatalf("call %d read back %+v, wrote %+v", i, g, c)
			}
		}
		if ended != got.Done || ended != got.Finished || (ended && got.Finish != finish) || ended && string(got.Usage) != string(usage) {
			t.Fatalf("ended %v: %+v (wrote finish %q, usage %s)", ended, got, finish, usage)
		}
	})
}

// TestWholeAndResponse: a whole reply reads back as the message, finish
// reason and usage it was made of, and the response a transport hands the
// engine carries the status, the content type and the body, without the
// provider's length and encoding.
func TestWholeAndResponse(t *testing.T) {
	c := Call{ID: "c1", Type: "function"}
	c.Function.Name, c.Function.Arguments = "f", Arguments(nil)
	body, err := Whole("id1", "m", &Reply{Role: "assistant", Content: "hi", ToolCalls: []Call{c}}, "tool_calls", Valid(json.RawMessage(`{"a":1}`)))
	if err != nil {
		t.Fatal(err)
	}
	var back Completion
	if err := json.Unmarshal(body, &back); err != nil {
		t.Fatal(err)
	}
	if back.ID != "id1" || back.Object != "chat.completion" || len(back.Choices) != 1 || back.Choices[0].Reply.Content != "hi" ||
		back.Choices[0].Reply.ToolCalls[0].Function.Arguments != "{}" || *back.Choices[0].FinishReason != "tool_calls" || string(back.Usage) != `{"a":1}` {
		t.Fatalf("read back %s", body)
	}
	if Valid(json.RawMessage("null")) != nil || Valid(json.RawMessage("{")) != nil {
		t.Fatal("Valid kept null or broken JSON")
	}
	hr := httptest.NewRequest("POST", "http://x/v1/chat/completions", nil)
	h := map[string][]string{"Content-Length": {"9"}, "Content-Encoding": {"gzip"}, "Retry-After": {"3"}}
	r := Response(hr, 429, h, "application/json", strings.NewReader("{}"))
	if r.StatusCode != 429 || r.Status != "429 Too Many Requests" || r.Header.Get("Content-Length") != "" || r.Header.Get("Content-Encoding") != "" ||
		r.Header.Get("Retry-After") != "3" || r.Header.Get("Content-Type") != "application/json" || r.Request != hr {
		t.Fatalf("response %+v", r)
	}
}
