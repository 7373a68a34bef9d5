package lsp

import (
	"regexp"
	"strings"
)

// cursor is what is being written at a position of a YAML document,
// read from its text alone (so it works while the document does not
// parse): the path of keys to the mapping the cursor is in, and either a
// key being typed or the key whose value is.
type cursor struct {
	path []string
	// key is the key whose value the cursor is in ("" when typing a key).
	key string
	// item is set when the cursor is at an element of a list (- x or [x]).
	item bool
	// word is the part of the name typed so far, and start its offset.
	word  string
	start int
}

// keyLine matches a line that starts a key: indent, an optional list
// dash, the key and what follows its colon.
var keyLine = regexp.MustCompile(`^( *)(- +)?([A-Za-z0-9_$][A-Za-z0-9_.$/-]*|"[^"]*"|'[^']*') *:(?:\s+(.*)|$)`)

// dashLine matches a list element that is not a key.
var dashLine = regexp.MustCompile(`^( *)- `)

// ancestors are the keys (and "[]" for list elements) above a line of
// indentation indent, outermost first.
func ancestors(t *text, line, indent int) []string {
	var rev []string
	threshold, afterDash := indent, false
	for l := line - 1; l >= 0 && (threshold > 0 || afterDash); l-- {
		s := t.src[t.starts[l]:t.lineEnd(l)]
		trimmed := strings.TrimLeft(s, " ")
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		ind := len(s) - len(trimmed)
		m := keyLine.FindStringSubmatch(s)
		switch {
		case m != nil && m[2] != "":
			keyInd := ind + len(m[2])
			if ind >= threshold && !(afterDash && ind == threshold) {
				continue
			}
			if keyInd < threshold {
				rev = append(rev, unquote(m[3]))
			}
			rev = append(rev, "[]")
			threshold, afterDash = ind, true
		case m != nil:
			if ind < threshold || afterDash && ind == threshold && m[4] == "" {
				rev = append(rev, unquote(m[3]))
				threshold, afterDash = ind, false
			}
		case dashLine.MatchString(s):
			if ind < threshold {
				rev = append(rev, "[]")
				threshold, afterDash = ind, true
			}
		default:
			if ind < threshold {
				threshold, afterDash = ind, false // a block scalar's text or a flow value
			}
		}
	}
	out := make([]string, len(rev))
	for i, k := range rev {
		out[len(rev)-1-i] = k
	}
	return out
}

func unquote(k string) string {
	if len(k) >= 2 && (k[0] == '"' || k[0] == '\'') {
		return k[1 : len(k)-1]
	}
	return k
}

// cursorAt reads what is written at offset off.
func cursorAt(t *text, off int) cursor {
	pos := t.position(off)
	lineStart := t.starts[pos.Line]
	before := t.src[lineStart:off]
	ws := off
	for ws > lineStart && isNameByte(t.src[ws-1]) {
		ws--
	}
	c := cursor{word: t.src[ws:off], start: ws}
	trimmed := strings.TrimLeft(before, " ")
	indent := len(before) - len(trimmed)
	if m := regexp.MustCompile(`^(- +)?[A-Za-z0-9_.$/-]*$`).FindStringSubmatch(trimmed); m != nil {
		// A key, or a list element, being typed.
		c.path = ancestors(t, pos.Line, indent+len(m[1]))
		if m[1] != "" {
			c.path = append(c.path, "[]")
			c.item = true
			if n := len(c.path); n >= 2 {
				c.key = c.path[n-2]
			}
		}
		return c
	}
	m := keyLine.FindStringSubmatchIndex(before)
	if m == nil {
		return c
	}
	dash := m[4] >= 0
	key := unquote(before[m[6]:m[7]])
	lineIndent := indent
	if dash {
		lineIndent += m[5] - m[4]
	}
	c.path = ancestors(t, pos.Line, lineIndent)
	if dash {
		c.path = append(c.path, "[]")
	}
	c.key = key
	if m[8] < 0 {
		return c
	}
	// Inside a flow collection: {k: v, k2: [a, b]}.
	val := before[m[8]:]
	type frame struct {
		open byte
		key  string
	}
	var stack []frame
	curKey, seg := key, ""
	for i := 0; i < len(val); i++ {
		switch ch := val[i]; ch {
		case '{', '[':
			stack = append(stack, frame{ch, curKey})
			seg = ""
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			seg = ""
		case ',':
			seg = ""
		case '"', '\'':
			if j := strings.IndexByte(val[i+1:], ch); j >= 0 {
				seg += val[i : i+2+j]
				i += j + 1
			} else {
				seg += val[i:]
				i = len(val)
			}
		default:
			seg += string(ch)
			if ch == ':' {
				curKey = strings.TrimSpace(strings.TrimSuffix(seg, ":"))
			}
		}
	}
	if len(stack) == 0 {
		return c
	}
	// The path to the innermost collection.
	path := append([]string{}, c.path...)
	for i, f := range stack {
		if f.open == '{' {
			path = append(path, f.key)
		} else {
			path = append(path, f.key, "[]")
		}
		_ = i
	}
	// In a list the path ends with the list's key and "[]".
	top := stack[len(stack)-1]
	if top.open == '[' {
		c.path, c.key, c.item = path[:len(path)-2], top.key, true
		return c
	}
	if !strings.Contains(seg, ":") {
		c.path, c.key = path, "" // a key of the flow mapping
		return c
	}
	c.path, c.key = path, strings.TrimSpace(seg[:strings.Index(seg, ":")])
	return c
}
