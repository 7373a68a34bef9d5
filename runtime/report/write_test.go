package report

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec/value"
)

// FuzzWriteInPieces: report.md and report.html written a piece at a time,
// cut before every message, rejected reply and section, are the bytes
// Markdown and HTML make of the whole, for runs whose messages hold
// whatever a model writes (the contributions of FuzzBlock, and random
// mixes of their lines), with repeated headings (their ids numbered
// across pieces) and a secret redacted.
func FuzzWriteInPieces(f *testing.F) {
	var texts []string
	for _, name := range slices.Sorted(maps.Keys(contributions)) {
		texts = append(texts, contributions[name])
	}
	for i, c := range texts {
		f.Add(c, texts[(i+1)%len(texts)], uint64(i))
	}
	f.Add("# Same\n\n- a\n  ```\n  code", "# Same\n\n> quote\n# Same", uint64(99))
	plan, m, base := golden(f)
	const secret = "sk-fuzz-SECRET-0123"
	clean := func(s string) string { return strings.ReplaceAll(s, secret, "[Redacted]") }
	f.Fuzz(func(t *testing.T, a, b string, seed uint64) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) || strings.ContainsAny(a+b, "\x00\r") {
			return
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		texts := []string{a, b, a + "\n\n" + b, "plain " + secret + " text", strings.Join(mix(rng, a, b), "\n")}
		res := *base
		res.Messages = nil
		res.Rejections = nil
		for i := range 3 + rng.IntN(12) {
			msg := value.Message{ID: "m" + string(rune('a'+i)), Node: "panel", From: []string{"ana", "bo", "judge"}[rng.IntN(3)],
				Content: texts[rng.IntN(len(texts))], Round: rng.IntN(3), Private: rng.IntN(5) == 0}
			if rng.IntN(3) == 0 {
				msg.Goal = "choose"
			}
			if rng.IntN(4) == 0 {
				msg.Verdict, msg.Reasoning = "YES", texts[rng.IntN(len(texts))]
			}
			res.Messages = append(res.Messages, msg)
		}
		for range rng.IntN(3) {
			res.Rejections = append(res.Rejections, result.Rejection{Node: "panel", Agent: "bo", Attempt: 1, Reasons: "no verdict", Content: texts[rng.IntN(len(texts))]})
		}
		wholeMD := Markdown(plan, m, &res)
		wholePage, err := HTML("golden "+secret, clean(wholeMD))
		if err != nil {
			t.Fatal(err)
		}
		var md, page bytes.Buffer
		if err := write(&md, &page, "golden "+secret, plan, m, &res, clean, 0); err != nil {
			t.Fatal(err)
		}
		if got, want := md.String(), clean(wholeMD); got != want {
			t.Errorf("report.md in pieces differs from whole:\n%s", firstDiff(got, want))
		}
		if got, want := page.String(), clean(string(wholePage)); got != want {
			t.Errorf("report.html in pieces differs from whole:\n%s", firstDiff(got, want))
		}
	})
}

// mix is the lines of a and b shuffled together.
func mix(rng *rand.Rand, a, b string) []string {
	lines := append(strings.Split(a, "\n"), strings.Split(b, "\n")...)
	rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	return lines
}

// firstDiff shows where got and want first differ.
func firstDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-200)
	return "got:  ..." + got[from:min(len(got), i+200)] + "\nwant: ..." + want[from:min(len(want), i+200)]
}
