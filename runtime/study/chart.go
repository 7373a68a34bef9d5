package study

import (
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ReadReport reads the report a study wrote to its directory
// (results.json): the one the table, the CSV and the chart are all made
// from.
func ReadReport(dir string) (*Report, error) {
	data, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "results.json"), err)
	}
	return &r, nil
}

// Chart geometry, in pixels.
const (
	chartLabelW = 230 // the rows' labels
	chartPanelW = 300 // each panel's plot
	chartGapW   = 60  // between the panels
	chartRowH   = 30
	chartTop    = 46 // the panels' titles and axis labels
	chartBottom = 34 // the ticks
	chartRight  = 80 // the p-values
)

// ChartSVG draws the report as two panels side by side, a row per protocol
// and model: on the left each accuracy with its 95% interval (0 to 1), on
// the right each difference from the baseline with its paired 95%
// interval, around a line at 0, and its Holm-adjusted p-value. The
// baseline's row has no difference; it is drawn as the line at 0. Every
// mark carries its numbers (data-mean, data-low, data-high), the same as
// the report's, so a test can read them back.
func (r *Report) ChartSVG() string {
	rows := len(r.Rows)
	h := chartTop + max(rows, 1)*chartRowH + chartBottom
	w := chartLabelW + 2*chartPanelW + chartGapW + chartRight
	accX := chartLabelW
	diffX := chartLabelW + chartPanelW + chartGapW
	// The difference panel spans ±span, span the largest bound rounded up
	// to a tenth (at least 0.1), so 0 is in the middle.
	span := 0.1
	for _, row := range r.Rows {
		if d := row.Difference; d != nil {
			span = math.Max(span, math.Max(math.Abs(d.Low), math.Abs(d.High)))
		}
	}
	span = math.Ceil(span*10-1e-9) / 10
	ax := func(v float64) float64 { return float64(accX) + clamp01(v)*chartPanelW }
	dx := func(v float64) float64 {
		return float64(diffX) + (math.Max(-span, math.Min(span, v))+span)/(2*span)*chartPanelW
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="study-chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="study %s: accuracy and difference from %s">`, w, h, w, h, esc(r.Name), esc(r.Baseline))
	b.WriteString(chartStyle)
	plotTop, plotBottom := chartTop, chartTop+rows*chartRowH
	fmt.Fprintf(&b, `<text class="title" x="%d" y="16">accuracy (95%% CI)</text>`, accX)
	fmt.Fprintf(&b, `<text class="title" x="%d" y="16">Δ vs %s (95%% paired CI), p Holm-adjusted</text>`, diffX, esc(r.Baseline))
	// Grids and ticks.
	for i := 0; i <= 4; i++ {
		v := float64(i) / 4
		x := ax(v)
		fmt.Fprintf(&b, `<line class="grid" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`, x, plotTop, x, plotBottom)
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>`, x, plotBottom+16, trimFloat(v))
	}
	for i := -2; i <= 2; i++ {
		v := span * float64(i) / 2
		x := dx(v)
		class := "grid"
		if i == 0 {
			class = "zero"
		}
		fmt.Fprintf(&b, `<line class="%s" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`, class, x, plotTop, x, plotBottom)
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>`, x, plotBottom+16, signed(v))
	}
	for i, row := range r.Rows {
		y := float64(chartTop + i*chartRowH + chartRowH/2)
		label := row.Protocol + " · " + row.Model
		class := "row"
		if row.Baseline {
			class += " baseline"
		}
		fmt.Fprintf(&b, `<g class="%s" data-protocol="%s" data-model="%s">`, class, esc(row.Protocol), esc(row.Model))
		fmt.Fprintf(&b, `<title>%s</title>`, esc(label))
		fmt.Fprintf(&b, `<text class="label" x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`, chartLabelW-12, y, esc(cutLabel(label, 32)))
		if a := row.Accuracy; a != nil {
			fmt.Fprintf(&b, `<g class="mark accuracy" data-mean="%s" data-low="%s" data-high="%s"><title>accuracy %.3f (95%% CI %.3f–%.3f), n=%d</title>`, num(a.Mean), num(a.Low), num(a.High), a.Mean, a.Low, a.High, row.N)
			whisker(&b, ax(a.Low), ax(a.High), ax(a.Mean), y)
			fmt.Fprintf(&b, `<text class="value" x="%.1f" y="%.1f" text-anchor="middle">%.3f</text></g>`, ax(a.Mean), y-8, a.Mean)
		} else {
			fmt.Fprintf(&b, `<text class="none" x="%d" y="%.1f" dominant-baseline="middle">no accuracy</text>`, accX+4, y)
		}
		switch d := row.Difference; {
		case row.Baseline:
			fmt.Fprintf(&b, `<text class="none" x="%.1f" y="%.1f" dominant-baseline="middle">baseline</text>`, dx(0)+6, y)
		case d != nil:
			fmt.Fprintf(&b, `<g class="mark difference" data-mean="%s" data-low="%s" data-high="%s"`, num(d.Estimate), num(d.Low), num(d.High))
			if row.PHolm != nil {
				fmt.Fprintf(&b, ` data-p-holm="%s"`, num(*row.PHolm))
			}
			fmt.Fprintf(&b, `><title>Δ %+.3f (95%% CI %+.3f to %+.3f) over %d pairs, p (Holm) %s</title>`, d.Estimate, d.Low, d.High, row.Pairs, pCell(row.PHolm))
			whisker(&b, dx(d.Low), dx(d.High), dx(d.Estimate), y)
			fmt.Fprintf(&b, `<text class="value" x="%.1f" y="%.1f" text-anchor="middle">%+.3f</text>`, dx(d.Estimate), y-8, d.Estimate)
			if row.PHolm != nil {
				fmt.Fprintf(&b, `<text class="p" x="%d" y="%.1f" dominant-baseline="middle">p %s</text>`, diffX+chartPanelW+6, y, pCell(row.PHolm))
			}
			b.WriteString(`</g>`)
		default:
			fmt.Fprintf(&b, `<text class="none" x="%d" y="%.1f" dominant-baseline="middle">no paired items</text>`, diffX+4, y)
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// chartStyle keeps the drawing readable on its own (saved, or opened from
// the page) as well as in the view.
const chartStyle = `<style>
.study-chart text{font:12px system-ui,-apple-system,"Segoe UI",sans-serif;fill:#1f2430}
.study-chart .title{font-weight:600}
.study-chart .tick{fill:#6b7280;font-size:11px}
.study-chart .grid{stroke:#e3e6ec;stroke-width:1}
.study-chart .zero{stroke:#6b7280;stroke-width:1.5}
.study-chart .ci,.study-chart .cap{stroke:#3157c4;stroke-width:2}
.study-chart .est{fill:#3157c4}
.study-chart .baseline .ci,.study-chart .baseline .cap{stroke:#8a93a3}
.study-chart .baseline .est{fill:#8a93a3}
.study-chart .baseline .label{font-style:italic}
.study-chart .value{font-size:11px;fill:#374151}
.study-chart .p{fill:#6b7280;font-size:11px}
.study-chart .none{fill:#9aa1ad;font-size:11px;font-style:italic}
</style>`

// whisker draws an interval from x1 to x2 with its estimate at m.
func whisker(b *strings.Builder, x1, x2, m, y float64) {
	fmt.Fprintf(b, `<line class="ci" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x1, y, x2, y)
	fmt.Fprintf(b, `<line class="cap" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x1, y-5, x1, y+5)
	fmt.Fprintf(b, `<line class="cap" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x2, y-5, x2, y+5)
	fmt.Fprintf(b, `<circle class="est" cx="%.1f" cy="%.1f" r="4.5"/>`, m, y)
}

func clamp01(v float64) float64 { return math.Max(0, math.Min(1, v)) }

func esc(s string) string { return html.EscapeString(s) }

// num is a number as the CSV writes it, so the chart's data attributes
// compare equal to it.
func num(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

func trimFloat(v float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}

func signed(v float64) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%+.2f", v)
}

func cutLabel(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
