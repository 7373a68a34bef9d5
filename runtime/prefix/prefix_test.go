package prefix

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes/kit"
)

// exactShared is the number of characters two requests share from their
// start, counted character by character over the whole requests: what
// Shared counts from what a recent request keeps.
func exactShared(a, b []kit.ChatMessage) (n int, long bool) {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i].Role != b[i].Role {
			return n, false
		}
		n += len(a[i].Role)
		if a[i].Content == b[i].Content && a[i].Name == b[i].Name && len(a[i].ToolCalls) == 0 && len(b[i].ToolCalls) == 0 {
			n += len(a[i].Content)
			continue
		}
		x, y := a[i].Content, b[i].Content
		j := 0
		for j < len(x) && j < len(y) && x[j] == y[j] {
			j++
		}
		return n + j, j >= Exact && j < len(x)
	}
	return n, false
}

// TestSharedPrefixFromHashes: compared through what Request keeps,
// requests share exactly the characters they share, except where the
// earlier request's message goes on after a common start of Exact
// bytes or more: then fewer, by less than Block.
func TestSharedPrefixFromHashes(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 3))
	text := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte("ab"[rng.IntN(2)])
		}
		return b.String()
	}
	// mutate changes one character of s, appends to it or cuts it.
	mutate := func(s string) string {
		switch rng.IntN(4) {
		case 0:
			return s
		case 1:
			return s + text(1+rng.IntN(100))
		case 2:
			if s != "" {
				return s[:rng.IntN(len(s))]
			}
			return "x"
		default:
			if s == "" {
				return "x"
			}
			i := rng.IntN(len(s))
			return s[:i] + "z" + s[i+1:]
		}
	}
	long, exact := 0, 0
	for range 3000 {
		var a []kit.ChatMessage
		for range 1 + rng.IntN(4) {
			a = append(a, kit.ChatMessage{Role: []string{"system", "user", "assistant"}[rng.IntN(3)], Content: text([]int{0, 31, 32, 33, 500, 511, 512, 513, 2000}[rng.IntN(9)])})
		}
		b := append([]kit.ChatMessage(nil), a...)
		i := rng.IntN(len(b))
		b[i].Content = mutate(b[i].Content)
		switch rng.IntN(6) {
		case 0:
			b = b[:i+1]
		case 1:
			b[i].Name = "speaker"
		case 2:
			b[i].Role = "tool"
		}
		want, isLong := exactShared(a, b)
		next := Sign("g", b)
		next.raw = b
		got := Shared(Sign("g", a), next)
		if isLong {
			long++
			if got > want || got <= want-Block {
				t.Fatalf("a long common start of %d characters counted as %d", want, got)
			}
			continue
		}
		exact++
		if got != want {
			t.Fatalf("requests sharing %d characters counted as sharing %d\n%+v\n%+v", want, got, a, b)
		}
	}
	if long == 0 || exact == 0 {
		t.Fatalf("%d long and %d exact cases: the test no longer covers both", long, exact)
	}
}
