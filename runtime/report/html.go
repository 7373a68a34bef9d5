package report

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"

	"github.com/debate-runner/runner/runtime/result"
	"github.com/debate-runner/runner/spec"
)

// HTML renders report.md as report.html: one page with its style inline and
// no script, whose charts (the Mermaid blocks of report.md) are drawn as
// inline SVG, so that it opens anywhere, offline, and prints.
func HTML(title, markdown string) ([]byte, error) {
	var body bytes.Buffer
	if err := page().Convert([]byte(markdown), &body); err != nil {
		return nil, fmt.Errorf("report.html: %w", err)
	}
	var b bytes.Buffer
	b.WriteString(pageHead(title))
	b.Write(body.Bytes())
	b.WriteString(pageFoot)
	return b.Bytes(), nil
}

// pageHead is report.html up to its body's content.
func pageHead(title string) string {
	return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n" +
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n" +
		fmt.Sprintf("<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n", html.EscapeString(title), pageStyle)
}

// pageFoot ends report.html.
const pageFoot = "</main>\n</body>\n</html>\n"

// Write writes report.md to md and report.html (titled title) to page, the
// same bytes as Markdown and HTML make, but a piece at a time: the report
// is cut where a block ends (before a message, a rejected reply, a
// section), each piece of about 16 KB passed through clean (the run's
// redaction of secrets; nil leaves it alone), written to report.md,
// rendered and written, cleaned again, to report.html, so that neither
// file is ever whole in memory, nor the parse of the page's Markdown. The
// pieces share one set of heading ids, so ids repeated across pieces are
// numbered as in one document. A secret that runs across two pieces (it
// would hold the blank line and heading or bold name a cut is made
// before) would not be redacted. A piece's parse holds several times its
// text (pieces of 64 KB raised a 1,000-message run's peak memory by about
// a megabyte over pieces of 16 KB); smaller pieces than that only add
// calls.
func Write(md, out io.Writer, title string, plan *spec.Plan, m result.Manifest, res *result.Result, clean func(string) string) error {
	return write(md, out, title, plan, m, res, clean, 16<<10)
}

// write is Write with pieces of at least flushAt bytes (0: one piece per
// cut, as the tests take them).
func write(md, out io.Writer, title string, plan *spec.Plan, m result.Manifest, res *result.Result, clean func(string) string, flushAt int) error {
	if clean == nil {
		clean = func(s string) string { return s }
	}
	_, err := io.WriteString(out, clean(pageHead(title)))
	ids := parser.NewContext().IDs()
	var body bytes.Buffer
	d := newDoc(plan)
	d.flushAt = flushAt
	d.flush = func(piece string) {
		if err != nil {
			return
		}
		piece = clean(piece)
		if _, err = io.WriteString(md, piece); err != nil {
			return
		}
		body.Reset()
		if err = page().Convert([]byte(piece), &body, parser.WithContext(parser.NewContext(parser.WithIDs(ids)))); err != nil {
			err = fmt.Errorf("report.html: %w", err)
			return
		}
		_, err = io.WriteString(out, clean(body.String()))
	}
	d.render(plan, m, res)
	d.flushAt = 0
	d.cut()
	if err != nil {
		return err
	}
	_, err = io.WriteString(out, clean(pageFoot))
	return err
}

// page renders report.html: tables and strikethrough of GFM (its linkify
// would scan every text for addresses, which costs more than the rest of
// the rendering), heading ids to link to, the charts drawn. It is made when
// first used, not when a process that writes no report starts.
var page = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(
		goldmark.WithExtensions(extension.Table, extension.Strikethrough),
		goldmark.WithParserOptions(parser.WithAutoHeadingID()),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(chartRenderer{}, 100))),
	)
})

const pageStyle = `
:root { color-scheme: light; --ink: #1f2430; --muted: #5b6475; --line: #dde1e8; --accent: #3559b7; --soft: #f5f7fb; }
body { margin: 0; background: #fff; color: var(--ink); font: 15px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 980px; margin: 0 auto; padding: 24px 28px 64px; }
h1 { font-size: 1.9em; margin: .2em 0 .4em; }
h2 { font-size: 1.45em; margin-top: 2em; padding-bottom: .25em; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.2em; margin-top: 1.6em; }
h4, h5, h6 { font-size: 1.02em; margin-top: 1.3em; }
h6 { color: var(--muted); }
p, ul, ol, table, pre, blockquote { margin: .6em 0; }
a { color: var(--accent); }
code { font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: var(--soft); padding: .1em .3em; border-radius: 4px; }
pre { background: var(--soft); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; overflow-x: auto; }
pre code { background: none; padding: 0; white-space: pre-wrap; }
blockquote { border-left: 4px solid var(--accent); background: #eef2fb; margin-left: 0; padding: 6px 12px; }
table { border-collapse: collapse; display: block; overflow-x: auto; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--soft); }
hr { border: 0; border-top: 1px solid var(--line); }
figure.chart { margin: 12px 0 20px; }
figure.chart figcaption { font-weight: 600; margin-bottom: 4px; }
svg text { font: 12px system-ui, sans-serif; fill: var(--ink); }
@media print { main { max-width: none; } pre { white-space: pre-wrap; } }
`

// chartRenderer draws the Mermaid charts report.md embeds; any other code
// block is left to the default renderer.
type chartRenderer struct{}

func (chartRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindFencedCodeBlock, renderCodeBlock)
}

func renderCodeBlock(w util.BufWriter, source []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	cb := n.(*ast.FencedCodeBlock)
	var text strings.Builder
	for i := 0; i < cb.Lines().Len(); i++ {
		seg := cb.Lines().At(i)
		text.Write(seg.Value(source))
	}
	lang := ""
	if cb.Info != nil {
		lang = string(cb.Language(source))
	}
	if lang == "mermaid" {
		if svg, ok := ChartSVG(text.String()); ok {
			_, _ = w.WriteString(svg)
			return ast.WalkSkipChildren, nil
		}
	}
	_, _ = w.WriteString("<pre><code")
	if lang != "" {
		_, _ = w.WriteString(` class="language-` + html.EscapeString(lang) + `"`)
	}
	_, _ = w.WriteString(">" + html.EscapeString(text.String()) + "</code></pre>\n")
	return ast.WalkSkipChildren, nil
}

var (
	pieTitle  = lazyRegexp(`^pie title (.*)$`)
	pieSlice  = lazyRegexp(`^\s*"((?:[^"\\]|\\.)*)"\s*:\s*([0-9.]+)\s*$`)
	xyTitle   = lazyRegexp(`^\s*title "((?:[^"\\]|\\.)*)"\s*$`)
	xyXAxis   = lazyRegexp(`^\s*x-axis "[^"]*" \[(.*)\]\s*$`)
	xyLine    = lazyRegexp(`^\s*line \[(.*)\]\s*$`)
	chartHues = []string{"#3559b7", "#2f9e73", "#e0a526", "#d4572a", "#8c4fc4", "#1f9bb8", "#b8436b", "#6d7a8c"}
)

// ChartSVG draws a Mermaid chart of the kinds report.md writes (a pie of
// verdicts, a line of confidence) as SVG; false for any other chart.
func ChartSVG(src string) (string, bool) {
	lines := strings.Split(strings.TrimSpace(src), "\n")
	if len(lines) == 0 {
		return "", false
	}
	if m := pieTitle().FindStringSubmatch(lines[0]); m != nil {
		var labels []string
		var values []float64
		for _, l := range lines[1:] {
			s := pieSlice().FindStringSubmatch(l)
			if s == nil {
				return "", false
			}
			v, err := strconv.ParseFloat(s[2], 64)
			if err != nil {
				return "", false
			}
			label, err := strconv.Unquote(`"` + s[1] + `"`)
			if err != nil {
				label = s[1]
			}
			labels, values = append(labels, label), append(values, v)
		}
		return BarsSVG(m[1], labels, values), true
	}
	if strings.TrimSpace(lines[0]) == "xychart-beta" {
		var title string
		var xs []string
		var ys []float64
		for _, l := range lines[1:] {
			switch {
			case xyTitle().MatchString(l):
				title, _ = strconv.Unquote(`"` + xyTitle().FindStringSubmatch(l)[1] + `"`)
			case xyXAxis().MatchString(l):
				for _, x := range strings.Split(xyXAxis().FindStringSubmatch(l)[1], ",") {
					xs = append(xs, strings.TrimSpace(x))
				}
			case xyLine().MatchString(l):
				for _, y := range strings.Split(xyLine().FindStringSubmatch(l)[1], ",") {
					v, err := strconv.ParseFloat(strings.TrimSpace(y), 64)
					if err != nil {
						return "", false
					}
					ys = append(ys, v)
				}
			}
		}
		if len(xs) != len(ys) || len(xs) == 0 {
			return "", false
		}
		return LineSVG(title, xs, ys), true
	}
	return "", false
}

// BarsSVG draws one horizontal bar per label, with its value.
func BarsSVG(title string, labels []string, values []float64) string {
	const labelW, barW, rowH = 190, 420, 26
	total := 0.0
	maxV := 0.0
	for _, v := range values {
		total += v
		maxV = max(maxV, v)
	}
	if maxV == 0 {
		maxV = 1
	}
	h := rowH*len(labels) + 8
	var b strings.Builder
	fmt.Fprintf(&b, "<figure class=\"chart\"><figcaption>%s</figcaption>\n", html.EscapeString(title))
	fmt.Fprintf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\">\n", labelW+barW+90, h, labelW+barW+90, h, html.EscapeString(title))
	for i, l := range labels {
		y := i*rowH + 4
		w := int(float64(barW) * values[i] / maxV)
		pct := 0.0
		if total > 0 {
			pct = 100 * values[i] / total
		}
		fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>", labelW-8, y+16, html.EscapeString(l))
		fmt.Fprintf(&b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"3\" fill=\"%s\"/>", labelW, y+3, max(w, 2), rowH-8, chartHues[i%len(chartHues)])
		fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\">%g (%.0f%%)</text>\n", labelW+max(w, 2)+6, y+16, values[i], pct)
	}
	b.WriteString("</svg></figure>\n")
	return b.String()
}

// LineSVG draws values of 0-100 over labelled points.
func LineSVG(title string, xs []string, ys []float64) string {
	const left, top, w, h = 44, 12, 560, 200
	width, height := left+w+20, top+h+40
	var b strings.Builder
	fmt.Fprintf(&b, "<figure class=\"chart\"><figcaption>%s</figcaption>\n", html.EscapeString(title))
	fmt.Fprintf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\">\n", width, height, width, height, html.EscapeString(title))
	for _, g := range []int{0, 25, 50, 75, 100} {
		y := top + h - h*g/100
		fmt.Fprintf(&b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#dde1e8\"/><text x=\"%d\" y=\"%d\" text-anchor=\"end\">%d</text>\n", left, y, left+w, y, left-6, y+4, g)
	}
	step := float64(w)
	if len(xs) > 1 {
		step = float64(w) / float64(len(xs)-1)
	}
	var pts []string
	for i, x := range xs {
		px := float64(left) + step*float64(i)
		if len(xs) == 1 {
			px = float64(left + w/2)
		}
		py := float64(top+h) - float64(h)*min(max(ys[i], 0), 100)/100
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", px, py))
		fmt.Fprintf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#3559b7\"/><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>", px, py, px, py-8, ys[i])
		fmt.Fprintf(&b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", px, top+h+18, html.EscapeString(x))
	}
	fmt.Fprintf(&b, "<polyline points=\"%s\" fill=\"none\" stroke=\"#3559b7\" stroke-width=\"2\"/>\n", strings.Join(pts, " "))
	fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">round</text>\n", left+w/2, top+h+34)
	b.WriteString("</svg></figure>\n")
	return b.String()
}

// fragment renders Markdown that is not a whole report (a message): GFM,
// raw HTML left out, dangerous links dropped, code blocks as code, and
// line breaks kept, as a reader of a conversation expects.
var fragment = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(gmhtml.WithHardWraps()))
})

// Fragment renders Markdown made safe by Block or Inline to HTML as
// report.html does, keeping line breaks, for pages that show parts of a
// run.
func Fragment(markdown string) (string, error) {
	var b bytes.Buffer
	if err := fragment().Convert([]byte(markdown), &b); err != nil {
		return "", err
	}
	return b.String(), nil
}
