// Package tags is a tolerant parser for the XML-like tags that language models
// write into their replies, such as
//
//	<Verdict>GOOD_FIT</Verdict>
//	<PrivateThoughts speaker="chef julia martinez">...</PrivateThoughts>
//
// Model output is not XML: tag names change case, closing tags go missing when a
// reply is truncated, prose contains bare "<" signs, and a free-text element may
// hold arbitrary markup. Parse therefore never fails; it recovers what it can and
// treats everything else as text. It runs in time linear in the input so that a
// hostile or runaway reply cannot stall a debate.
package tags

import (
	"errors"
	"fmt"
	"strings"
)

// Field is one top-level element found by Parse.
type Field struct {
	// Name is the tag name as written in the input.
	Name string
	// Value is the inner text, trimmed of surrounding whitespace. Markup inside
	// the element is kept verbatim.
	Value string
	// Attrs holds the attributes of the opening tag with lower-cased keys, or nil
	// if there are none. When a key repeats, the first value wins.
	Attrs map[string]string
	// Start and End are the byte offsets of the whole element in the input
	// given to Parse, s[Start:End].
	Start, End int
	// Unclosed reports that no closing tag was found, so the element was ended
	// at the next recognised opening tag or at the end of the input.
	Unclosed bool
}

// Result is the outcome of Parse.
type Result struct {
	// Fields are the top-level elements in input order. Elements nested inside
	// another recognised element are not listed; they stay in its Value.
	Fields []Field
	// Text is the input with every top-level element removed and the remainder
	// trimmed of surrounding whitespace: the untagged prose of the reply.
	Text string
}

// Get returns the first field whose name equals name, ignoring case.
func (r Result) Get(name string) (Field, bool) {
	for _, f := range r.Fields {
		if strings.EqualFold(f.Name, name) {
			return f, true
		}
	}
	return Field{}, false
}

// All returns every field whose name equals name, ignoring case, in input
// order, or nil if there is none.
func (r Result) All(name string) []Field {
	var out []Field
	for _, f := range r.Fields {
		if strings.EqualFold(f.Name, name) {
			out = append(out, f)
		}
	}
	return out
}

// Map returns the value of the first occurrence of each field, keyed by the
// lower-cased field name. Later repeats of a name are ignored, matching Get.
func (r Result) Map() map[string]string {
	m := make(map[string]string, len(r.Fields))
	for _, f := range r.Fields {
		k := strings.ToLower(f.Name)
		if _, seen := m[k]; !seen {
			m[k] = f.Value
		}
	}
	return m
}

// ErrNotBool is wrapped by ParseBool when a value is not a recognised boolean.
var ErrNotBool = errors.New("not a boolean (want true/false, yes/no or 1/0)")

// ParseBool interprets a tag value such as the content of <Withdrawn>. It
// accepts true/false, yes/no and 1/0, ignoring case and surrounding whitespace.
func ParseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "yes", "1":
		return true, nil
	case "false", "no", "0":
		return false, nil
	}
	return false, fmt.Errorf("tags: parse bool %q: %w", v, ErrNotBool)
}

// Parse finds the top-level <Name ...>...</Name> elements of s.
//
// Closing tags match their opening tag case-insensitively; a self-closing tag
// (<Name/>) is an element with an empty value. If names is non-empty, only tags
// with those names (compared case-insensitively) are elements and every other
// tag is plain text, which lets a free-text element such as Content hold
// arbitrary markup. If names is empty, every well-formed tag is an element.
//
// Misnested tags are resolved the way HTML parsers do: a closing tag closes the
// innermost open element of the same name, implicitly ending anything opened
// inside it, and a closing tag with no open element of its name is text. An
// element whose closing tag is missing extends to the start of the next
// recognised opening tag or to the end of the input and is marked Unclosed; if
// the input was cut off partway through the closing tag, that fragment is
// dropped from the value.
//
// A Markdown code fence around the whole reply (``` or ```xml) is removed
// before parsing; offsets in the result still refer to s.
func Parse(s string, names ...string) Result {
	r, _ := parse(s, names)
	return r
}

// tokenKind distinguishes the three shapes of tag the lexer recognises.
type tokenKind uint8

const (
	openTag tokenKind = iota
	closeTag
	selfClosingTag
)

// token is one recognised tag. Attributes are kept as a byte range and only
// decoded for top-level elements, which keeps lexing allocation-free.
type token struct {
	kind               tokenKind
	start, end         int // the whole tag, s[start:end]
	nameStart, nameEnd int
	attrStart, attrEnd int
	id                 int // interned lower-case name
	match              int // for an open tag: index of its closing tag, or -1
}

// parser holds the state of one Parse call. steps counts elementary
// operations so tests can check that the work stays linear in the input.
type parser struct {
	s      string
	filter []string       // lower-cased names; nil means every name counts
	ids    map[string]int // interned names when there is no filter
	toks   []token
	steps  int
}

// parse is Parse plus the number of elementary steps it took.
func parse(s string, names []string) (Result, int) {
	p := &parser{s: s}
	if len(names) > 0 {
		p.filter = make([]string, len(names))
		for i, n := range names {
			p.filter[i] = strings.ToLower(strings.TrimSpace(n))
		}
	} else {
		p.ids = make(map[string]int)
	}
	lo, hi := p.unfence()
	p.lex(lo, hi)
	p.match()
	return p.collect(lo, hi), p.steps
}

// unfence returns the range of s inside a Markdown code fence that wraps the
// whole input, or the whitespace-trimmed range of s if there is none.
func (p *parser) unfence() (lo, hi int) {
	s := p.s
	lo, hi = 0, len(s)
	for lo < hi && isSpace(s[lo]) {
		lo++
		p.steps++
	}
	for hi > lo && isSpace(s[hi-1]) {
		hi--
		p.steps++
	}
	if !strings.HasPrefix(s[lo:hi], "```") {
		return lo, hi
	}
	i := lo + 3
	// The info string (```xml) is dropped together with the rest of its line,
	// but only when that line holds nothing else: "```<a>x</a>```" keeps its tag.
	j := i
	for j < hi && isInfoByte(s[j]) {
		j++
		p.steps++
	}
	k := j
	for k < hi && s[k] != '\n' && isSpace(s[k]) {
		k++
		p.steps++
	}
	if k == hi || s[k] == '\n' {
		i = k
	}
	if hi-3 >= i && strings.HasSuffix(s[i:hi], "```") {
		hi -= 3
	}
	return i, hi
}

func isInfoByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '-' || c == '+' || c == '.'
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isNameStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

func isNameByte(c byte) bool {
	return isNameStart(c) || c >= '0' && c <= '9' || c == '-' || c == '.' || c == ':'
}

// lex records every recognised tag in s[lo:hi]. A tag candidate that meets
// another '<' before its closing '>' is abandoned, and scanning resumes at that
// '<'; so each byte is examined by at most one candidate and lexing is linear
// even for inputs such as "<a<a<a..." or unterminated attribute quotes.
func (p *parser) lex(lo, hi int) {
	s := p.s
	i := lo
	for i < hi {
		p.steps++
		if s[i] != '<' {
			next := strings.IndexByte(s[i:hi], '<')
			if next < 0 {
				p.steps += hi - i
				return
			}
			p.steps += next
			i += next
			continue
		}
		t, ok := p.lexTag(i, hi)
		if !ok {
			i++
			continue
		}
		if t.id = p.intern(s[t.nameStart:t.nameEnd]); t.id >= 0 {
			t.match = -1
			p.toks = append(p.toks, t)
		}
		i = t.end
	}
}

// lexTag tries to read a tag starting at s[i] == '<'. It never reads past the
// next '<', which is what bounds the total lexing work.
func (p *parser) lexTag(i, hi int) (token, bool) {
	s := p.s
	t := token{start: i, kind: openTag}
	j := i + 1
	if j < hi && s[j] == '/' {
		t.kind = closeTag
		j++
	}
	if j >= hi || !isNameStart(s[j]) {
		return t, false
	}
	t.nameStart = j
	for j < hi && isNameByte(s[j]) {
		j++
		p.steps++
	}
	t.nameEnd = j
	t.attrStart, t.attrEnd = j, j
	if t.kind == closeTag {
		for j < hi && isSpace(s[j]) {
			j++
			p.steps++
		}
		if j < hi && s[j] == '>' {
			t.end = j + 1
			return t, true
		}
		return t, false
	}
	// An opening tag's name must be followed by a separator; "<a=" or "<3" in
	// prose are not tags.
	if j < hi && !isSpace(s[j]) && s[j] != '>' && s[j] != '/' {
		return t, false
	}
	// Quotes only delimit a value right after '=', so an apostrophe in a
	// sloppy tag such as <Note it's late> does not swallow the closing '>'.
	var quote, prev byte
	for ; j < hi; j++ {
		p.steps++
		c := s[j]
		switch {
		case c == '<':
			return t, false
		case quote != 0:
			if c == quote {
				quote = 0
			}
			continue
		case (c == '"' || c == '\'') && prev == '=':
			quote = c
		case c == '>':
			t.attrEnd = j
			t.end = j + 1
			return t, true
		case c == '/' && j+1 < hi && s[j+1] == '>':
			t.kind = selfClosingTag
			t.attrEnd = j
			t.end = j + 2
			return t, true
		}
		if !isSpace(c) {
			prev = c
		}
	}
	return t, false
}

// intern maps a tag name to a small integer shared by all spellings of the
// name, or -1 if the name is not one the caller asked for.
func (p *parser) intern(name string) int {
	if p.filter != nil {
		for k, f := range p.filter {
			p.steps++
			if strings.EqualFold(name, f) {
				return k
			}
		}
		return -1
	}
	key := strings.ToLower(name)
	id, ok := p.ids[key]
	if !ok {
		id = len(p.ids)
		p.ids[key] = id
	}
	return id
}

// match pairs closing tags with opening tags. A closing tag closes the
// innermost open element with its name and implicitly ends everything opened
// after that one. Each name keeps its own stack of open elements, so finding
// the target is O(1) and every element is pushed and popped at most once.
func (p *parser) match() {
	nNames := len(p.filter)
	if p.filter == nil {
		nNames = len(p.ids)
	}
	byName := make([][]int, nNames) // open token indexes per name id
	var open []int                  // all open token indexes, innermost last
	for i := range p.toks {
		p.steps++
		t := &p.toks[i]
		switch t.kind {
		case openTag:
			open = append(open, i)
			byName[t.id] = append(byName[t.id], i)
		case closeTag:
			same := byName[t.id]
			if len(same) == 0 {
				continue // stray closing tag: plain text
			}
			target := same[len(same)-1]
			for {
				p.steps++
				top := open[len(open)-1]
				open = open[:len(open)-1]
				id := p.toks[top].id
				byName[id] = byName[id][:len(byName[id])-1]
				if top == target {
					break
				}
			}
			p.toks[target].match = i
		}
	}
}

// collect walks the tokens at top level and builds the result for s[lo:hi].
func (p *parser) collect(lo, hi int) Result {
	s := p.s
	var r Result
	var text strings.Builder
	textFrom := lo
	for i := 0; i < len(p.toks); {
		p.steps++
		t := p.toks[i]
		if t.kind == closeTag {
			// A closing tag seen at top level closes nothing here: text.
			i++
			continue
		}
		f := Field{
			Name:  s[t.nameStart:t.nameEnd],
			Attrs: p.attrs(t.attrStart, t.attrEnd),
			Start: t.start,
		}
		next := i + 1
		switch {
		case t.kind == selfClosingTag:
			f.End = t.end
		case t.match >= 0:
			c := p.toks[t.match]
			f.Value = strings.TrimSpace(s[t.end:c.start])
			f.End = c.end
			next = t.match + 1
		default:
			f.Unclosed = true
			f.End = hi
			for next < len(p.toks) && p.toks[next].kind == closeTag {
				p.steps++
				next++
			}
			if next < len(p.toks) {
				f.End = p.toks[next].start
			}
			f.Value = strings.TrimSpace(dropPartialClose(s[t.end:f.End], f.Name))
		}
		p.steps += f.End - f.Start // trimming and copying text are linear too
		text.WriteString(s[textFrom:f.Start])
		textFrom = f.End
		r.Fields = append(r.Fields, f)
		i = next
	}
	text.WriteString(s[textFrom:hi])
	r.Text = strings.TrimSpace(text.String())
	return r
}

// dropPartialClose removes a fragment of the element's own closing tag from
// the end of v, as left behind when a reply is cut off mid-tag
// ("<Withdrawn>false</Withdr").
func dropPartialClose(v, name string) string {
	v = strings.TrimRight(v, " \t\r\n\f\v")
	// Try the longest proper prefix of "</name>" first: "</", "</n", ... up to
	// "</name" (a complete closing tag would have matched).
	for n := min(len(name)+2, len(v)); n > 0; n-- {
		tail := v[len(v)-n:]
		if tail[0] == '<' && (n == 1 || tail[1] == '/' && strings.EqualFold(tail[2:], name[:n-2])) {
			return v[:len(v)-n]
		}
	}
	return v
}

// attrs decodes the attribute list s[lo:hi] of an opening tag. It accepts
// name="v", name='v', name=v and bare name (value ""), and skips anything it
// cannot read rather than failing, since the tag itself was already accepted.
func (p *parser) attrs(lo, hi int) map[string]string {
	s := p.s
	var m map[string]string
	i := lo
	for i < hi {
		p.steps++
		if isSpace(s[i]) || s[i] == '=' || s[i] == '"' || s[i] == '\'' || s[i] == '/' {
			i++
			continue
		}
		k := i
		for i < hi && !isSpace(s[i]) && s[i] != '=' && s[i] != '"' && s[i] != '\'' {
			i++
			p.steps++
		}
		key := strings.ToLower(s[k:i])
		j := i
		for j < hi && isSpace(s[j]) {
			j++
			p.steps++
		}
		val := ""
		if j < hi && s[j] == '=' {
			j++
			for j < hi && isSpace(s[j]) {
				j++
				p.steps++
			}
			switch {
			case j < hi && (s[j] == '"' || s[j] == '\''):
				q := s[j]
				end := strings.IndexByte(s[j+1:hi], q)
				if end < 0 {
					end = hi - j - 1 // unterminated: take the rest
				}
				p.steps += end
				val = s[j+1 : j+1+end]
				j = min(j+end+2, hi)
			default:
				v := j
				for j < hi && !isSpace(s[j]) {
					j++
					p.steps++
				}
				val = s[v:j]
			}
			i = j
		}
		if m == nil {
			m = make(map[string]string)
		}
		if _, dup := m[key]; !dup {
			m[key] = val
		}
	}
	return m
}
