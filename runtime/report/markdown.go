package report

import (
	"regexp"
	"strings"
	"sync"
)

// Contributions are Markdown written by models and people. Put into a report
// as they are, some of their text vanishes when the report is rendered:
// tag-like text (<Verdict>) is taken for HTML, a line such as "[a]: b" for a
// link definition, "&amp;" for an entity; a "#" line becomes a heading of
// the report's own, and an unclosed code fence swallows the rest of the
// report. Block and Inline escape exactly those, and keep what renders
// faithfully (emphasis, lists, tables, links, code) as Markdown.

var (
	atxHeading  = lazyRegexp(`^ {0,3}(#{1,6})(?:[ \t]+|$)(.*)$`)
	fenceOpen   = lazyRegexp("^( {0,3})(`{3,}|~{3,})(.*)$")
	setextLine  = lazyRegexp(`^ {0,3}(=+|-+)[ \t]*$`)
	linkDef     = lazyRegexp(`^( {0,3})\[`)
	listItem    = lazyRegexp(`^ {0,3}(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)`)
	entity      = lazyRegexp(`^&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{0,31});`)
	closingATX  = lazyRegexp(`[ \t]+#+[ \t]*$`)
	quotePrefix = lazyRegexp(`^(?: {0,3}> ?)+`)
	delimRow    = lazyRegexp(`^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$`)
)

// Block makes a contribution safe to place in a report under a heading of
// level base (1-6): headings keep their relative levels below base (the
// contribution's highest becomes base+1, none deeper than 6), code blocks
// are kept byte for byte (an unclosed fence is closed), and text that a
// renderer would swallow is escaped.
func Block(s string, base int) string {
	lines := strings.Split(strings.ReplaceAll(strings.TrimSpace(s), "\r\n", "\n"), "\n")
	top := topHeading(lines)
	out := make([]string, 0, len(lines)+2)
	var fence string // the open fence's marker, "" outside code
	prevBlank := true
	paraStart := -1 // index in out of a paragraph's only line, else -1
	inList := false
	tableCols := 0 // columns of the table being written, 0 outside tables
	for _, l := range lines {
		if fence != "" {
			out = append(out, l)
			if closesFence(l, fence) {
				fence = ""
				prevBlank = false
			}
			continue
		}
		blank := strings.TrimSpace(l) == ""
		if blank {
			tableCols = 0
		}
		switch {
		case blank:
			out = append(out, "")
			prevBlank, paraStart = true, -1
			continue
		case tableCols > 0:
			out = append(out, escapeLine(tableRow(l, tableCols)))
			continue
		case !prevBlank && len(out) > 0 && strings.Contains(l, "|") && strings.Contains(out[len(out)-1], "|") && delimRow().MatchString(l):
			// A GFM table starts: its rows are kept to its columns.
			tableCols = len(cellPipes(l)) + 1
			out = append(out, l)
			paraStart = -1
			continue
		case fenceOpen().MatchString(l) && validFence(l):
			m := fenceOpen().FindStringSubmatch(l)
			fence = m[2]
			if info := strings.Fields(m[3]); len(info) > 1 {
				// Renderers keep only the first word of an info string
				// (the language): show all of it above the code.
				out = append(out, escapeLine(strings.Join(info, " ")), "")
				l = m[1] + m[2] + info[0]
			}
			out = append(out, l)
			paraStart = -1
			continue
		case prevBlank && !inList && indentOf(l) >= 4:
			// An indented code block: literal text, kept as it is.
			out = append(out, l)
			paraStart = -1
			continue
		}
		if m := atxHeading().FindStringSubmatch(l); m != nil {
			out = append(out, heading(base, len(m[1])-top+1, closingATX().ReplaceAllString(m[2], "")))
			prevBlank, paraStart, inList = false, -1, false
			continue
		}
		if q := quotePrefix().FindString(l); q != "" {
			// A heading inside a quote is nested like the others.
			if m := atxHeading().FindStringSubmatch(l[len(q):]); m != nil {
				out = append(out, q+heading(base, len(m[1])-top+1, closingATX().ReplaceAllString(m[2], "")))
				prevBlank, paraStart = false, -1
				continue
			}
		}
		if m := setextLine().FindStringSubmatch(l); m != nil && !prevBlank {
			if paraStart == len(out)-1 && paraStart >= 0 {
				// A one-line paragraph underlined: a heading, nested
				// like the others.
				level := 1
				if m[1][0] == '-' {
					level = 2
				}
				out[paraStart] = heading(base, level-top+1, strings.TrimSpace(out[paraStart]))
				prevBlank, paraStart = false, -1
				continue
			}
			// Anything else would turn the lines above into a heading of
			// the report's own level: make the underline plain text or a
			// rule instead.
			out = append(out, "", escapeLine(l))
			prevBlank, paraStart = false, -1
			continue
		}
		if listItem().MatchString(l) {
			inList = true
		} else if indentOf(l) == 0 && prevBlank {
			inList = false
		}
		if prevBlank && !inList && !strings.HasPrefix(strings.TrimSpace(l), ">") && !strings.HasPrefix(strings.TrimSpace(l), "|") {
			paraStart = len(out)
		} else {
			paraStart = -1
		}
		out = append(out, escapeLine(l))
		prevBlank = false
	}
	if fence != "" {
		out = append(out, fence)
	}
	return strings.Join(out, "\n")
}

// Inline makes text safe on one line of a report (a table cell, a verdict's
// reasons, a name): white space collapsed, pipes escaped, and what Block
// escapes.
func Inline(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = escapeLine(s)
	// A leading marker would start a list or heading only at a line's
	// start, which inline text never is; pipes end table cells.
	return escapePipes(s)
}

// escapePipes escapes | outside code spans and inside them alike: tables
// split cells at every unescaped pipe.
func escapePipes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			b.WriteByte(s[i])
			b.WriteByte(s[i+1])
			i++
			continue
		}
		if s[i] == '|' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// tableRow keeps a table row's words in GFM, which splits cells at every
// unescaped pipe, code spans included, and drops cells beyond the table's
// columns: pipes inside code spans are escaped, and so are the pipes that
// would make more cells than the table has (their text joins the last
// cell).
func tableRow(l string, cols int) string {
	var b strings.Builder
	for i := 0; i < len(l); i++ {
		switch c := l[i]; {
		case c == '\\' && i+1 < len(l):
			b.WriteString(l[i : i+2])
			i++
		case c == '`':
			n := run(l, i, '`')
			end := closingRun(l, i+n, n)
			if end < 0 {
				b.WriteString(l[i : i+n])
				i += n - 1
				continue
			}
			b.WriteString(escapePipes(l[i : end+n]))
			i = end + n - 1
		default:
			b.WriteByte(c)
		}
	}
	row := b.String()
	pipes := cellPipes(row)
	if len(pipes) <= cols-1 {
		return row
	}
	b.Reset()
	last := 0
	for _, p := range pipes[cols-1:] {
		b.WriteString(row[last:p])
		b.WriteString(`\|`)
		last = p + 1
	}
	b.WriteString(row[last:])
	return b.String()
}

// cellPipes are the offsets of the unescaped pipes outside code spans that
// separate a row's cells (not a leading or trailing one).
func cellPipes(row string) []int {
	var pipes []int
	for i := 0; i < len(row); i++ {
		switch row[i] {
		case '\\':
			i++
		case '`':
			n := run(row, i, '`')
			if end := closingRun(row, i+n, n); end >= 0 {
				i = end + n - 1
			} else {
				i += n - 1
			}
		case '|':
			pipes = append(pipes, i)
		}
	}
	t := strings.TrimSpace(row)
	if len(pipes) > 0 && strings.HasPrefix(t, "|") && pipes[0] == strings.Index(row, "|") {
		pipes = pipes[1:]
	}
	if len(pipes) > 0 && strings.HasSuffix(t, "|") && pipes[len(pipes)-1] == strings.LastIndex(row, "|") && !strings.HasSuffix(t, `\|`) {
		pipes = pipes[:len(pipes)-1]
	}
	return pipes
}

// heading writes a heading of level base+rel, no deeper than 6.
func heading(base, rel int, text string) string {
	level := min(base+max(rel, 1), 6)
	return strings.Repeat("#", level) + " " + escapeLine(strings.TrimSpace(text))
}

// topHeading is the level of a contribution's highest heading (outside code).
func topHeading(lines []string) int {
	top := 7
	fence := ""
	prev := ""
	for _, l := range lines {
		if fence != "" {
			if closesFence(l, fence) {
				fence = ""
			}
			continue
		}
		if m := fenceOpen().FindStringSubmatch(l); m != nil && validFence(l) {
			fence = m[2]
			continue
		}
		if m := atxHeading().FindStringSubmatch(strings.TrimPrefix(l, quotePrefix().FindString(l))); m != nil {
			top = min(top, len(m[1]))
		} else if m := setextLine().FindStringSubmatch(l); m != nil && strings.TrimSpace(prev) != "" {
			if m[1][0] == '=' {
				top = min(top, 1)
			} else {
				top = min(top, 2)
			}
		}
		prev = l
	}
	if top == 7 {
		return 1
	}
	return top
}

func validFence(l string) bool {
	m := fenceOpen().FindStringSubmatch(l)
	// A backtick fence's info string may not hold backticks.
	return m != nil && !(m[2][0] == '`' && strings.Contains(m[3], "`"))
}

func closesFence(l, fence string) bool {
	t := strings.TrimSpace(l)
	if indentOf(l) > 3 || len(t) < len(fence) || t[0] != fence[0] {
		return false
	}
	return strings.Trim(t, fence[:1]) == ""
}

func indentOf(l string) int {
	n := 0
	for _, c := range l {
		switch c {
		case ' ':
			n++
		case '\t':
			n += 4 - n%4
		default:
			return n
		}
	}
	return n
}

// escapeLine escapes, outside code spans, what a renderer would swallow:
// "<" (HTML tags, comments, autolinks), "&" of an entity, "![" (an image,
// which would also make a self-contained report fetch from the network)
// and a leading "[" that could define a link. Backslash escapes the text
// already has are kept.
func escapeLine(l string) string {
	if !strings.ContainsAny(l, "<&![`\\") {
		return l
	}
	var b strings.Builder
	b.Grow(len(l) + 8)
	if m := linkDef().FindStringSubmatchIndex(l); m != nil && strings.Contains(l, "]:") {
		b.WriteString(l[:m[3]])
		b.WriteString(`\[`)
		l = l[m[1]:]
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch c {
		case '\\':
			if i+1 < len(l) && isPunct(l[i+1]) {
				b.WriteByte(c)
				b.WriteByte(l[i+1])
				i++
				continue
			}
		case '`':
			n := run(l, i, '`')
			if end := closingRun(l, i+n, n); end >= 0 {
				b.WriteString(l[i : end+n])
				i = end + n - 1
				continue
			}
			b.WriteString(l[i : i+n])
			i += n - 1
			continue
		case '<':
			b.WriteString(`\<`)
			continue
		case '&':
			if entity().MatchString(l[i:]) {
				b.WriteString(`\&`)
				continue
			}
		case '!':
			if i+1 < len(l) && l[i+1] == '[' {
				b.WriteString(`!\[`)
				i++
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// run is the length of the run of c starting at i.
func run(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}

// closingRun finds the next run of exactly n backticks from i, or -1.
func closingRun(s string, i, n int) int {
	for i < len(s) {
		if s[i] != '`' {
			i++
			continue
		}
		m := run(s, i, '`')
		if m == n {
			return i
		}
		i += m
	}
	return -1
}

func isPunct(c byte) bool {
	return strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) >= 0
}

// lazyRegexp compiles expr when first used, so that a process that writes
// no report (runner --help, validate) does not compile the report's
// expressions as it starts.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
