package lsp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzBases are the specs the fuzz target edits: small examples, so that
// an input that keeps one valid costs little to walk.
var fuzzBases = []string{
	"../../examples/reasoning-debate/spec.yaml",
	"../../examples/protocols/single-agent/spec.yaml",
	"../../examples/protocols/poll-jury/spec.yaml",
	"../../examples/design-debate/spec.yaml",
}

// Random edits to example specs, sent as an editor sends them
// (incremental changes at UTF-16 positions): the server never fails,
// answers every request, and its diagnostics for the edited text are
// runner validate's for the same bytes, at the same places.
func FuzzEditsAnswerAsValidate(f *testing.F) {
	var bases []string
	for _, p := range fuzzBases {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		bases = append(bases, string(data))
	}
	f.Add(uint8(0), []byte("\x00\x10\x00\x05typo"))
	f.Add(uint8(1), []byte("\x01\x40\x00\x09"))
	f.Add(uint8(2), []byte("\x02\x00\x30"))
	f.Add(uint8(3), []byte("\x00\x90\x01\x02{{.Inputs.questoin}}\x01\x20\x00\x03"))
	f.Fuzz(func(t *testing.T, which uint8, ops []byte) {
		src := bases[int(which)%len(bases)]
		dir := t.TempDir()
		path := filepath.Join(dir, "spec.yaml")
		uri := fileURI(path)
		c := newClient(t, 0)
		c.open(uri, src, 1)
		got := c.waitDiags(uri, 1)
		version := 1
		for len(ops) >= 3 && version < 12 {
			op, at16 := ops[0]%3, int(ops[1])<<8|int(ops[2])
			ops = ops[3:]
			off := runeStart(src, at16%(len(src)+1))
			var r Range
			var text string
			switch op {
			case 0: // insert the bytes that follow, up to a zero
				n := len(ops)
				if i := strings.IndexByte(string(ops), 0); i >= 0 {
					n = i
				}
				text = strings.ToValidUTF8(string(ops[:n]), "")
				ops = ops[min(n+1, len(ops)):]
				r = Range{atPos(src, off), atPos(src, off)}
			case 1: // delete up to the next byte's count
				n := 0
				if len(ops) > 0 {
					n, ops = int(ops[0]), ops[1:]
				}
				end := runeStart(src, min(off+n, len(src)))
				r = Range{atPos(src, off), atPos(src, end)}
				src = src[:off] + src[end:]
			case 2: // truncate
				r = Range{atPos(src, off), atPos(src, len(src))}
				src = src[:off]
			}
			if op == 0 {
				src = src[:off] + text + src[off:]
			}
			version++
			c.change(uri, version, r, text)
		}
		if version > 1 {
			got = c.waitDiags(uri, version)
		}
		// Every request is answered, wherever it is asked.
		for _, off := range []int{0, len(src) / 3, len(src) / 2, len(src)} {
			p := atPos(src, runeStart(src, off))
			for _, m := range []string{"textDocument/completion", "textDocument/hover", "textDocument/definition", "textDocument/documentSymbol"} {
				if resp := c.call(m, docPos(uri, p)); resp.Error != nil {
					t.Fatalf("%s at %+v: %v", m, p, resp.Error)
				}
			}
			resp := c.call("textDocument/references", map[string]any{"textDocument": map[string]any{"uri": uri}, "position": p, "context": map[string]any{"includeDeclaration": true}})
			if resp.Error != nil {
				t.Fatalf("references: %v", resp.Error)
			}
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		sameAsValidate(t, path, []byte(src), got)
	})
}

// runeStart moves off back to the start of the character it is in.
func runeStart(s string, off int) int {
	for off > 0 && off < len(s) && !utf8.RuneStart(s[off]) {
		off--
	}
	return off
}

func atPos(src string, off int) Position { return at(src, off) }
