package syntax

import "strings"

// BlockOffsetPos is the position in a file (its lines) of the character at
// byte offset of value, the text of a block scalar (`|` or `>`, with any
// chomping) whose indicator is at header. The text is matched against the
// block's lines character by character: a line break of the text, or a
// space a folded block made of one, is a line's end, and lines the text
// drops (folded empty lines, trailing ones) are stepped over. ok is false
// when the lines do not hold the text there (a source other than the
// spec's, say).
func BlockOffsetPos(lines []string, header Pos, value string, offset int) (Pos, bool) {
	if header.Line < 1 || header.Line >= len(lines) || offset < 0 || offset > len(value) {
		return header, false
	}
	// The block's lines: those after the header down to the first one
	// indented less than its first non-empty line, which is indented past
	// the header's line.
	indent := -1
	first := header.Line // index of the line after the header
	end := first
	for ; end < len(lines); end++ {
		l := lines[end]
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " "))
		if indent < 0 {
			h := lines[header.Line-1]
			if n <= len(h)-len(strings.TrimLeft(h, " ")) {
				break // not indented past the header's line: no content
			}
			indent = n
			continue
		}
		if n < indent {
			break
		}
	}
	if indent < 0 {
		return header, false
	}
	content := func(i int) string {
		l := lines[i]
		if len(l) >= indent {
			return l[indent:]
		}
		return ""
	}
	li, ci := first, 0
	for j := 0; j < offset; j++ {
		ch := value[j]
		for {
			if li >= end {
				return header, false
			}
			line := content(li)
			if ci < len(line) && line[ci] == ch {
				ci++
				break
			}
			if ci >= len(line) {
				li, ci = li+1, 0
				if ch == '\n' || ch == ' ' {
					break // the line's break
				}
				continue // a line the text dropped
			}
			return header, false
		}
	}
	// The character at offset: the rest of the line may be empty (it
	// starts on a later line).
	for li < end && ci >= len(content(li)) && offset < len(value) && value[offset] != '\n' {
		li, ci = li+1, 0
	}
	if li >= end {
		return header, false
	}
	return Pos{Line: li + 1, Col: indent + ci + 1}, true
}
