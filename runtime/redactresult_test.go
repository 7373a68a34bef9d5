package runtime

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/debate-runner/runner/runtime/journal"
	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec/value"
)

// FuzzRedactResult: redacting a run's result piece by piece (the result
// less its messages, then each message, redacted whole only when a piece
// holds a secret) leaves the result redactValue leaves, for results with a
// secret nowhere, in a message's content, its output, an output of the run
// or a warning, written plainly or JSON-escaped.
func FuzzRedactResult(f *testing.F) {
	f.Add("a reply", uint64(0))
	f.Add("x sk-redact-SECRET-77 y", uint64(1))
	f.Add("quote \" and \\ and \n", uint64(2))
	f.Add("sk-redact-\u0053ECRET-77", uint64(3))
	const secret = "sk-redact-SECRET-77"
	red := journal.NewRedactor(secret)
	f.Fuzz(func(t *testing.T, text string, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, 11))
		texts := []string{text, "plain", secret, "<" + secret + ">", text + secret}
		pick := func() string { return texts[rng.IntN(len(texts))] }
		res := result.Result{RunID: "r", Spec: "s", Status: result.StatusCompleted,
			Outputs: map[string]any{"o": pick()}, OutputOrder: []string{"o"}, Warnings: []string{pick()}}
		for i := range 1 + rng.IntN(5) {
			m := value.Message{ID: string(rune('a' + i)), Node: "n", From: "a", Content: pick()}
			switch rng.IntN(3) {
			case 0:
				m.Output = m.Content
			case 1:
				m.Output = map[string]any{"k": pick()}
			}
			res.Messages = append(res.Messages, m)
		}
		whole, pieces := res, res
		whole.Messages = append([]value.Message(nil), res.Messages...)
		pieces.Messages = append([]value.Message(nil), res.Messages...)
		if err := redactValue(red, &whole); err != nil {
			t.Fatal(err)
		}
		if err := redactResult(red, &pieces); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(whole, pieces) {
			a, _ := json.Marshal(whole)
			b, _ := json.Marshal(pieces)
			t.Errorf("redacted whole:\n%s\npiece by piece:\n%s", a, b)
		}
	})
}
