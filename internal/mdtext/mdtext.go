// Package mdtext renders Markdown with a standard renderer (goldmark, as
// CommonMark and as GitHub Flavored Markdown) and reads back the text a
// reader sees, so that tests can check that a report keeps every word of
// what it quotes.
package mdtext

import (
	"bytes"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/debate-runner/runner/runtime/result"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// Flavors are the renderers a report is checked with.
var Flavors = map[string]goldmark.Markdown{
	"commonmark": goldmark.New(),
	"gfm":        goldmark.New(goldmark.WithExtensions(extension.GFM)),
}

var (
	tagRE   = regexp.MustCompile(`(?s)<!--.*?-->|<(/?)([a-zA-Z][a-zA-Z0-9]*)([^>]*)>`)
	hrefRE  = regexp.MustCompile(`\bhref="([^"]*)"`)
	startRE = regexp.MustCompile(`\bstart="([0-9]+)"`)
	langRE  = regexp.MustCompile(`\bclass="language-([^"]*)"`)
	// listMarker is one marker at a line's start: quote, bullet, number.
	listMarker = regexp.MustCompile(`^(?:[ \t]+|>|[-+*](?:[ \t]|$)|([0-9]{1,9})[.)](?:[ \t]|$))`)
)

// Render converts Markdown to HTML with the given flavor.
func Render(flavor string, md []byte) (string, error) {
	var b bytes.Buffer
	if err := Flavors[flavor].Convert(md, &b); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Text is what a reader of the HTML sees: the text between tags, with
// entities resolved; raw HTML the renderer dropped (an HTML comment) and
// tags are not text. Some text is shown by markup rather than as text, and
// is marked (between \x01 and \x02) as text a quote may skip: a code
// block's language (its fence's first word), an ordered list's numbers,
// and a link's destination (after the link's text, when it differs).
func Text(page string) string {
	var b strings.Builder
	var hrefs []string
	var linkStart []int
	var counters []int // per open list: the next number, -1 for bullets
	last := 0
	for _, m := range tagRE.FindAllStringSubmatchIndex(page, -1) {
		b.WriteString(html.UnescapeString(page[last:m[0]]))
		last = m[1]
		if m[4] < 0 {
			b.WriteByte(' ') // a comment
			continue
		}
		name := strings.ToLower(page[m[4]:m[5]])
		closing := m[3] > m[2]
		switch {
		case name == "ol" && !closing:
			n := 1
			if st := startRE.FindStringSubmatch(page[m[6]:m[7]]); st != nil {
				n, _ = strconv.Atoi(st[1])
			}
			counters = append(counters, n)
		case name == "ul" && !closing:
			counters = append(counters, -1)
		case (name == "ol" || name == "ul") && closing && len(counters) > 0:
			counters = counters[:len(counters)-1]
		case name == "li" && !closing && len(counters) > 0 && counters[len(counters)-1] >= 0:
			// An ordered list's numbers are shown.
			fmt.Fprintf(&b, "\n\x01%d\x02. ", counters[len(counters)-1])
			counters[len(counters)-1]++
		}
		if name == "code" && !closing {
			// A fence's info string is kept as the code's language.
			if l := langRE.FindStringSubmatch(page[m[6]:m[7]]); l != nil {
				b.WriteString(" \x01" + html.UnescapeString(l[1]) + "\x02 ")
			}
		}
		if name == "a" && !closing {
			href := ""
			if h := hrefRE.FindStringSubmatch(page[m[6]:m[7]]); h != nil {
				href = html.UnescapeString(h[1])
			}
			hrefs = append(hrefs, href)
			linkStart = append(linkStart, b.Len())
		}
		if name == "a" && closing && len(hrefs) > 0 {
			href, start := hrefs[len(hrefs)-1], linkStart[len(linkStart)-1]
			hrefs, linkStart = hrefs[:len(hrefs)-1], linkStart[:len(linkStart)-1]
			if strings.TrimSpace(b.String()[start:]) != href {
				b.WriteString(" \x01" + href + "\x02 ")
			}
		}
		if blockTag[name] {
			b.WriteByte('\n')
		}
	}
	b.WriteString(html.UnescapeString(page[last:]))
	return b.String()
}

var blockTag = map[string]bool{"p": true, "br": true, "li": true, "td": true, "th": true, "tr": true, "pre": true,
	"h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true, "blockquote": true, "hr": true, "div": true}

// Words splits text into words: runs of letters and digits.
func Words(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// Quote is a text the report must show, with a name for messages.
type Quote struct {
	Name string
	Text string
}

// Missing checks that each quote is shown whole on the page, in order: the
// letters and digits of its text appear one after the other in the page's
// text, where only a link's destination (shown after its text) may come
// between them, and ordered lists' numbers are matched loosely (a
// renderer counts them itself). It returns a description of every quote that is not shown
// whole.
func Missing(pageText string, quotes []Quote) []string {
	stream, skip := chars(pageText)
	var problems []string
	pos := 0
	for _, q := range quotes {
		want, optional := chars(markListNumbers(q.Text))
		first := 0 // the first character that must be shown
		for first < len(want) && optional[first] {
			first++
		}
		if first == len(want) {
			continue
		}
		best, end := -1, 0
		for s := pos; s < len(stream); s++ {
			if stream[s] != want[first] && !(first > 0 && stream[s] == want[0]) && !skip[s] {
				continue
			}
			n, e := match(stream, skip, want, optional, s)
			if n == len(want) {
				best, end = n, e
				break
			}
			best = max(best, n)
		}
		if best < len(want) {
			problems = append(problems, fmt.Sprintf("%s: not shown whole; the page has it up to %q, then not %q", q.Name, tail(want[:max(best, 0)], 40), string(want[max(best, 0):min(max(best, 0)+40, len(want))])))
			continue
		}
		pos = end
	}
	return problems
}

// markListNumbers marks the numbers that may start ordered lists, at the
// start of a line after any quote and list markers, as optional: the page
// shows a list's own count instead ("1. 1. 1." shows as 1, 2, 3).
func markListNumbers(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		var b strings.Builder
		for {
			m := listMarker.FindStringSubmatchIndex(l)
			if m == nil {
				break
			}
			if m[2] >= 0 {
				b.WriteString("\x01" + l[m[2]:m[3]] + "\x02" + l[m[3]:m[1]])
			} else {
				b.WriteString(l[:m[1]])
			}
			l = l[m[1]:]
		}
		lines[i] = b.String() + l
	}
	return strings.Join(lines, "\n")
}

// match matches want against stream from s on, skipping only what may be
// skipped, and returns how much of want matched and where it ended. Where
// a skippable character also matches, both ways are tried.
func match(stream []rune, skip []bool, want []rune, optional []bool, s int) (int, int) {
	type state struct{ i, j int }
	failed := map[state]bool{}
	best := 0
	var walk func(i, j int) (int, bool)
	walk = func(i, j int) (int, bool) {
		for {
			best = max(best, j)
			if j == len(want) {
				return i, true
			}
			if i == len(stream) {
				for j < len(want) && optional[j] {
					j++
				}
				return i, j == len(want)
			}
			if (skip[i] || optional[j]) && failed[state{i, j}] {
				return 0, false
			}
			if stream[i] == want[j] && (skip[i] || optional[j]) {
				if end, ok := walk(i+1, j+1); ok {
					return end, true
				}
			} else if stream[i] == want[j] {
				i, j = i+1, j+1
				continue
			}
			switch {
			case skip[i]:
				if end, ok := walk(i+1, j); ok {
					return end, true
				}
			}
			if optional[j] {
				if end, ok := walk(i, j+1); ok {
					return end, true
				}
			}
			failed[state{i, j}] = true
			return 0, false
		}
	}
	if end, ok := walk(s, 0); ok {
		return len(want), end
	}
	return best, 0
}

func tail(r []rune, n int) string {
	if len(r) > n {
		r = r[len(r)-n:]
	}
	return string(r)
}

// chars is the letters and digits of a text, marking those of link
// destinations (between \x01 and \x02) as skippable.
func chars(text string) ([]rune, []bool) {
	var out []rune
	var skip []bool
	in := false
	for _, r := range text {
		switch {
		case r == '\x01':
			in = true
		case r == '\x02':
			in = false
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			out = append(out, r)
			skip = append(skip, in)
		}
	}
	return out, skip
}

// ReportStats describe a report CheckReport read.
type ReportStats struct {
	MarkdownBytes, HTMLBytes int
	Messages, Words          int
}

// CheckReport reads report.md and report.html of a run directory and checks
// that, rendered as CommonMark and as GFM (report.md) and as it is
// (report.html), every word of every public message and rejected reply of
// res is shown, in order, and that no private message (thoughts, history
// summaries) is.
func CheckReport(t testing.TB, dir string, res *result.Result) ReportStats {
	t.Helper()
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	st := ReportStats{MarkdownBytes: len(md), HTMLBytes: len(page)}
	var public, rejected, private []Quote
	for _, m := range res.Messages {
		q := Quote{Name: fmt.Sprintf("message %s (%s of node %s, goal %q, round %d, turn %d)", m.ID, m.From, m.Node, m.Goal, m.Round, m.Turn), Text: m.Content}
		if m.Private {
			if len(Words(m.Content)) >= 8 {
				private = append(private, q)
			}
			continue
		}
		public = append(public, q)
		st.Messages++
		st.Words += len(Words(m.Content))
	}
	for _, r := range res.Rejections {
		rejected = append(rejected, Quote{Name: "rejected reply " + r.Key, Text: r.Content})
		st.Words += len(Words(r.Content))
	}
	texts := map[string]string{"report.html": Text(string(page))}
	for flavor := range Flavors {
		html, err := Render(flavor, md)
		if err != nil {
			t.Fatal(err)
		}
		texts["report.md as "+flavor] = Text(html)
	}
	for name, text := range texts {
		for _, p := range Missing(text, public) {
			t.Errorf("%s: %s", name, p)
		}
		for _, p := range Missing(text, rejected) {
			t.Errorf("%s: %s", name, p)
		}
		for _, q := range private {
			if Missing(text, []Quote{q}) == nil {
				t.Errorf("%s shows the private %s", name, q.Name)
			}
		}
	}
	return st
}
