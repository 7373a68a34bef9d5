package result

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/debate-runner/runner/spec/value"
)

// FuzzWriteJSON: result.json written a message at a time is the bytes of
// the whole result marshalled, cleaned and indented, for results with any
// texts in their messages and outputs (a message's output its own content
// or not, none, or a list), no message at all, and a secret cleaned.
func FuzzWriteJSON(f *testing.F) {
	f.Add("a reply", "<b>&amp; \"quoted\"\n\tline \\ end", uint64(1))
	f.Add("", "", uint64(0))
	f.Add("sk-json-SECRET-42 in text", "  padded  ", uint64(5))
	f.Add("\u2028\u00e9\U0001F600", "\x7f{\"messages\": []}", uint64(9))
	const secret = "sk-json-SECRET-42"
	clean := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(secret), []byte("[Redacted]")) }
	f.Fuzz(func(t *testing.T, a, b string, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, 3))
		texts := []string{a, b, secret, a + b}
		r := Result{RunID: "run-" + a, Spec: b, Status: StatusCompleted, Outputs: map[string]any{"out": texts[rng.IntN(4)]},
			OutputOrder: []string{"out"}, Warnings: []string{texts[rng.IntN(4)]}, DurationMS: int64(rng.IntN(1000))}
		for i := range rng.IntN(6) {
			m := value.Message{ID: strings.Repeat("m", i+1), Node: "n", From: "a", Content: texts[rng.IntN(4)], Round: rng.IntN(3)}
			switch rng.IntN(4) {
			case 0:
				m.Output = strings.TrimSpace(m.Content)
			case 1:
				m.Output = texts[rng.IntN(4)]
			case 2:
				m.Output = []any{texts[rng.IntN(4)], float64(i)}
			}
			r.Messages = append(r.Messages, m)
		}
		for _, c := range []func([]byte) []byte{nil, clean} {
			data, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if c != nil {
				data = c(data)
			}
			var want bytes.Buffer
			if err := json.Indent(&want, data, "", "  "); err != nil {
				t.Fatal(err)
			}
			want.WriteByte('\n')
			var got bytes.Buffer
			if err := r.WriteJSON(&got, c); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("written a message at a time:\n%s\nwhole:\n%s", got.String(), want.String())
			}
		}
	})
}
