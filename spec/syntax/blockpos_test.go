package syntax

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// genBlock writes a YAML mapping whose key v holds a random block scalar:
// literal or folded, any chomping, indented 2 to 8 past its key (itself
// indented 0 to 4, under a parent key), its lines of words, with empty
// lines, more-indented lines and trailing spaces among them.
func genBlock(rnd *rand.Rand) string {
	words := []string{"len(x)", "+", "a.b", "\"s t\"", "1", "nosuch", "&&", "(", ")", "?", ":", "[1, 2]"}
	keyIndent := rnd.Intn(3) * 2
	indent := keyIndent + 2 + rnd.Intn(7)
	var b strings.Builder
	if keyIndent > 0 {
		b.WriteString("parent:\n")
	}
	ind := []string{"|", ">"}[rnd.Intn(2)] + []string{"", "-", "+"}[rnd.Intn(3)]
	fmt.Fprintf(&b, "%sv: %s\n", strings.Repeat(" ", keyIndent), ind)
	for i := 0; i < rnd.Intn(2); i++ {
		b.WriteString("\n")
	}
	lines := 1 + rnd.Intn(5)
	for l := 0; l < lines; l++ {
		// the first line sets the block's indentation
		switch c := rnd.Intn(6); {
		case c == 0 && l > 0:
			b.WriteString(strings.Repeat(" ", rnd.Intn(indent+1)) + "\n")
			continue
		case c == 1 && l > 0:
			b.WriteString(strings.Repeat(" ", indent+1+rnd.Intn(3)))
		default:
			b.WriteString(strings.Repeat(" ", indent))
		}
		n := 1 + rnd.Intn(4)
		for w := 0; w < n; w++ {
			if w > 0 {
				b.WriteString(strings.Repeat(" ", 1+rnd.Intn(2)))
			}
			b.WriteString(words[rnd.Intn(len(words))])
		}
		if rnd.Intn(4) == 0 {
			b.WriteString("  ")
		}
		b.WriteString("\n")
	}
	b.WriteString("after: 1\n")
	return b.String()
}

// TestBlockOffsetPosHoldsEachCharacter: over random block scalars, every
// character of the scalar's text that is not space is placed by
// BlockOffsetPos on the same character of the file.
func TestBlockOffsetPosHoldsEachCharacter(t *testing.T) {
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewSource(seed))
	placed := 0
	for i := 0; i < 1000; i++ {
		src := genBlock(rnd)
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		m := doc.Content[0]
		if strings.HasPrefix(src, "parent:") {
			m = m.Content[1]
		}
		var v *yaml.Node
		for k := 0; k+1 < len(m.Content); k += 2 {
			if m.Content[k].Value == "v" {
				v = m.Content[k+1]
			}
		}
		if v == nil || v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
			t.Fatalf("no block scalar v in\n%s", src)
		}
		lines := strings.Split(src, "\n")
		for off := 0; off < len(v.Value); off++ {
			ch := v.Value[off]
			if ch == ' ' || ch == '\n' {
				continue
			}
			p, ok := BlockOffsetPos(lines, NodePos(v), v.Value, off)
			if !ok || p.Line < 1 || p.Line > len(lines) || p.Col < 1 || p.Col > len(lines[p.Line-1]) || lines[p.Line-1][p.Col-1] != ch {
				t.Fatalf("offset %d (%q) of %q placed at %v (ok %v) in\n%s", off, ch, v.Value, p, ok, src)
			}
			placed++
		}
	}
	t.Logf("%d characters placed", placed)
}
