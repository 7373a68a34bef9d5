package syntax

import (
	"fmt"
	"sort"
	"strings"
)

// Severity says whether a diagnostic stops a spec from running.
type Severity int

const (
	// Error diagnostics make a spec invalid.
	Error Severity = iota
	// Warning diagnostics are reported but do not stop a run.
	Warning
)

func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// Pos is a position in a spec file. Line and Col are 1-based; zero means unknown.
type Pos struct {
	Line int `json:"line"`
	Col  int `json:"col"`
}

// Diagnostic is one problem found in a spec, tied to the place it is about.
type Diagnostic struct {
	File     string   `json:"file"`
	Pos      Pos      `json:"pos"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	// Snippet is the offending line followed by a caret line, empty when the
	// position is unknown.
	Snippet string `json:"snippet,omitempty"`
}

// String renders the diagnostic as FILE:LINE:COL: SEVERITY: MESSAGE.
func (d Diagnostic) String() string {
	loc := d.File
	if d.Pos.Line > 0 {
		loc = fmt.Sprintf("%s:%d:%d", d.File, d.Pos.Line, d.Pos.Col)
	}
	return fmt.Sprintf("%s: %s: %s", loc, d.Severity, d.Message)
}

// Diagnostics is an ordered list of problems.
type Diagnostics []Diagnostic

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == Error {
			return true
		}
	}
	return false
}

// Errors returns only the error diagnostics.
func (ds Diagnostics) Errors() Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if d.Severity == Error {
			out = append(out, d)
		}
	}
	return out
}

// Error makes Diagnostics usable as an error value.
func (ds Diagnostics) Error() string {
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// Format renders every diagnostic with its snippet, the way the CLI prints them.
func (ds Diagnostics) Format() string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String())
		b.WriteByte('\n')
		if d.Snippet != "" {
			b.WriteString(d.Snippet)
		}
	}
	return b.String()
}

// SortAndDedupe orders diagnostics by file and position and drops exact repeats,
// which happen when the schema and a decoder both notice the same mistake.
func (ds Diagnostics) SortAndDedupe() Diagnostics {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		return a.Pos.Col < b.Pos.Col
	})
	out := ds[:0]
	seen := map[string]bool{}
	for _, d := range ds {
		k := fmt.Sprintf("%s|%d|%d|%s", d.File, d.Pos.Line, d.Pos.Col, d.Message)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, d)
	}
	return out
}

// Source holds a file's text so diagnostics can quote it.
type Source struct {
	Name  string
	Lines []string
}

// lineBreaks are the line breaks of the YAML parser, which counts lines by
// all of them; splitting the same way keeps snippets on the reported line.
var lineBreaks = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u0085", "\n", "\u2028", "\n", "\u2029", "\n")

func NewSource(name string, data []byte) *Source {
	return &Source{Name: name, Lines: strings.Split(lineBreaks.Replace(string(data)), "\n")}
}

// Snippet returns the line at pos and a caret under the column.
func (s *Source) Snippet(pos Pos) string {
	if s == nil || pos.Line <= 0 || pos.Line > len(s.Lines) {
		return ""
	}
	// Columns count characters; a long line is cut to a window around
	// the column.
	text := []rune(strings.TrimRight(s.Lines[pos.Line-1], "\r"))
	col := max(pos.Col, 1)
	const width = 160
	prefix, suffix := "", ""
	if len(text) > width {
		start := min(max(col-1-width/2, 0), len(text)-width)
		if start > 0 {
			prefix = "..."
		}
		if start+width < len(text) {
			suffix = "..."
		}
		text = text[start : start+width]
		col -= start
	}
	gutter := fmt.Sprintf("%5d | ", pos.Line)
	pad := []rune(prefix)
	for i := range pad {
		pad[i] = ' '
	}
	for i := 0; i < col-1 && i < len(text); i++ {
		if text[i] == '\t' {
			pad = append(pad, '\t')
		} else {
			pad = append(pad, ' ')
		}
	}
	return gutter + prefix + string(text) + suffix + "\n" + strings.Repeat(" ", 6) + "| " + string(pad) + "^\n"
}

// Reporter collects diagnostics for one file.
type Reporter struct {
	Src   *Source
	Diags Diagnostics
	// claimed holds the positions the schema already reported. A later
	// error at the same place restates the same mistake (an integer where a
	// node id belongs is also an unknown node) and only adds noise.
	claimed map[Pos]bool
	// droppedErrors and droppedWarnings count the diagnostics past
	// maxDiagnostics, which are not kept: a spec with thousands of
	// mistakes gets the first of them fast.
	droppedErrors, droppedWarnings int
}

// Keep adds a diagnostic unless maxDiagnostics are kept already.
func (r *Reporter) Keep(d Diagnostic) {
	if len(r.Diags) >= maxDiagnostics {
		if d.Severity == Error {
			r.droppedErrors++
		} else {
			r.droppedWarnings++
		}
		return
	}
	r.Diags = append(r.Diags, d)
}

// DroppedSummary is a last diagnostic counting those not kept, if any.
func (r *Reporter) DroppedSummary() (Diagnostic, bool) {
	switch {
	case r.droppedErrors > 0:
		return Diagnostic{File: r.Src.Name, Severity: Error, Message: fmt.Sprintf("%d more problems not shown (%d errors); fix the ones above first", r.droppedErrors+r.droppedWarnings, r.droppedErrors)}, true
	case r.droppedWarnings > 0:
		return Diagnostic{File: r.Src.Name, Severity: Warning, Message: fmt.Sprintf("%d more warnings not shown", r.droppedWarnings)}, true
	}
	return Diagnostic{}, false
}

// maxDiagnostics bounds the diagnostics kept for one spec.
const maxDiagnostics = 1000

// ClaimReported marks every position reported so far as claimed.
func (r *Reporter) ClaimReported() {
	if r.claimed == nil {
		r.claimed = map[Pos]bool{}
	}
	for _, d := range r.Diags {
		if d.Severity == Error && d.Pos.Line > 0 {
			r.claimed[d.Pos] = true
		}
	}
}

func (r *Reporter) add(sev Severity, pos Pos, format string, args ...any) {
	if r.claimed[pos] {
		return
	}
	if len(r.Diags) >= maxDiagnostics {
		r.Keep(Diagnostic{Severity: sev})
		return
	}
	if n := len(r.Src.Lines); pos.Line > n {
		// The parser places a few errors just past the end of the text.
		pos = Pos{Line: n, Col: 1}
	}
	d := Diagnostic{
		File:     r.Src.Name,
		Pos:      pos,
		Severity: sev,
		Message:  fmt.Sprintf(format, args...),
		Snippet:  r.Src.Snippet(pos),
	}
	for _, o := range r.Diags {
		if o.Pos == d.Pos && o.Severity == d.Severity && o.Message == d.Message && o.File == d.File {
			return // the same problem, found twice
		}
	}
	r.Keep(d)
}

// Errorf reports an error at pos.
func (r *Reporter) Errorf(pos Pos, format string, args ...any) {
	r.add(Error, pos, format, args...)
}

// Warnf reports a warning at pos.
func (r *Reporter) Warnf(pos Pos, format string, args ...any) {
	r.add(Warning, pos, format, args...)
}

// suggest returns the candidate closest to name when it is close enough to be
// a likely typo, or "".
func suggest(name string, candidates []string) string {
	best, bestDist := "", 1<<30
	for _, c := range candidates {
		d := editDistance(strings.ToLower(name), strings.ToLower(c))
		if d < bestDist || (d == bestDist && c < best) {
			best, bestDist = c, d
		}
	}
	limit := 2
	if len(name) > 8 {
		limit = 3
	}
	if len(name) <= 3 {
		limit = 1
	}
	if best == "" || bestDist > limit {
		return ""
	}
	return best
}

// DidYouMean formats a suggestion as a sentence suffix: " (did you mean
// "NEAR"?)" when a candidate is a likely typo of name, else "".
func DidYouMean(name string, candidates []string) string {
	if s := suggest(name, candidates); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and swaps of two adjacent letters each cost one,
// so the common typo "recrod" is as close to "record" as "recod" is.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// rows i-2, i-1 and i of the dynamic programming table
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
