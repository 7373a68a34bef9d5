package lsp

import (
	"unicode/utf16"
	"unicode/utf8"

	"github.com/debate-runner/runner/spec/syntax"
)

// Position is an LSP position: a 0-based line and a column in UTF-16
// code units, lines broken at \n, \r\n and \r.
type Position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// Range is an LSP range, end exclusive.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// text is a document's bytes with the starts of its lines as an editor
// counts them.
type text struct {
	src    string
	starts []int
}

func newText(src string) *text {
	t := &text{src: src, starts: []int{0}}
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '\r':
			if i+1 < len(src) && src[i+1] == '\n' {
				i++
			}
			t.starts = append(t.starts, i+1)
		case '\n':
			t.starts = append(t.starts, i+1)
		}
	}
	return t
}

// lineEnd is the offset of the end of line l, before its line break.
func (t *text) lineEnd(l int) int {
	if l+1 >= len(t.starts) {
		return len(t.src)
	}
	e := t.starts[l+1]
	if e > 0 && t.src[e-1] == '\n' {
		e--
	}
	if e > t.starts[l] && t.src[e-1] == '\r' {
		e--
	}
	return e
}

// offset is the byte offset of p, clamped to the document and to the end
// of p's line; a position inside a surrogate pair is the pair's start.
func (t *text) offset(p Position) int {
	if p.Line < 0 {
		return 0
	}
	if p.Line >= len(t.starts) {
		return len(t.src)
	}
	off, end, units := t.starts[p.Line], t.lineEnd(p.Line), 0
	for off < end {
		r, size := utf8.DecodeRuneInString(t.src[off:end])
		n := utf16.RuneLen(r)
		if n < 0 {
			n = 1
		}
		if units+n > p.Character {
			break
		}
		units += n
		off += size
	}
	return off
}

// position is the LSP position of a byte offset.
func (t *text) position(off int) Position {
	off = max(0, min(off, len(t.src)))
	lo, hi := 0, len(t.starts)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if t.starts[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	units := 0
	for _, r := range t.src[t.starts[lo]:min(off, t.lineEnd(lo))] {
		n := utf16.RuneLen(r)
		if n < 0 {
			n = 1
		}
		units += n
	}
	return Position{Line: lo, Character: units}
}

// specLineStarts are the starts of lines as the spec's diagnostics count
// them (spec/syntax: YAML's line breaks, NEL and the Unicode separators
// included).
func specLineStarts(src string) []int {
	starts := []int{0}
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRuneInString(src[i:])
		switch {
		case r == '\r' && i+1 < len(src) && src[i+1] == '\n':
			i += 2
		case r == '\r' || r == '\n' || r == 0x85 || r == 0x2028 || r == 0x2029:
			i += size
		default:
			i += size
			continue
		}
		starts = append(starts, i)
	}
	return starts
}

// specOffset is the byte offset of a diagnostic's line and column
// (1-based, columns in characters), clamped to the end of its line.
func specOffset(src string, starts []int, p syntax.Pos) int {
	if p.Line <= 0 {
		return 0
	}
	if p.Line > len(starts) {
		return len(src)
	}
	off := starts[p.Line-1]
	end := len(src)
	if p.Line < len(starts) {
		end = starts[p.Line]
	}
	for col := 1; col < p.Col && off < end; col++ {
		r, size := utf8.DecodeRuneInString(src[off:end])
		if r == '\n' || r == '\r' || r == 0x85 || r == 0x2028 || r == 0x2029 {
			break
		}
		off += size
	}
	return off
}

// tokenEnd is where the word starting at off ends: a quoted string
// through its closing quote, else a run of name characters; at least one
// character when off is not at a line's end.
func tokenEnd(src string, off int) int {
	if off >= len(src) {
		return off
	}
	if q := src[off]; q == '"' || q == '\'' {
		for i := off + 1; i < len(src); i++ {
			if src[i] == '\n' || src[i] == '\r' {
				return i
			}
			if src[i] == '\\' && q == '"' {
				i++
				continue
			}
			if src[i] == q {
				return i + 1
			}
		}
		return len(src)
	}
	// A name's dots end it: nodes.X.output underlines X.
	i := off
	for i < len(src) && isNameByte(src[i]) && (src[i] != '.' || i == off) {
		i++
	}
	if i == off && src[off] != '\n' && src[off] != '\r' {
		_, size := utf8.DecodeRuneInString(src[off:])
		i += size
	}
	return i
}

func isNameByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || c == '/' || c == '@' ||
		'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
