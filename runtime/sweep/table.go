package sweep

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/debate-runner/runner/runtime/result"
)

// Table is a grid of text for the Markdown and CSV views of runs, sweeps
// and comparisons.
type Table struct {
	Header []string
	Rows   [][]string
	// Whole is how many leading columns are never cut to width: ids, which
	// are no use shortened.
	Whole int
}

// Markdown renders the table as a GitHub-flavoured Markdown table. Cells
// are put on one line, pipes escaped, and cut to width runes (0: no limit),
// except those of the first Whole columns.
func (t Table) Markdown(width int) string {
	var b strings.Builder
	row := func(cells []string) {
		b.WriteString("|")
		for i := range t.Header {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			c = strings.Join(strings.Fields(c), " ")
			if width > 0 && i >= t.Whole && utf8.RuneCountInString(c) > width {
				c = string([]rune(c)[:width-1]) + "…"
			}
			b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
		}
		b.WriteString("\n")
	}
	row(t.Header)
	b.WriteString("|")
	for range t.Header {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		row(r)
	}
	return b.String()
}

// CSV renders the table as CSV with a header row, cells in full.
func (t Table) CSV() string {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(t.Header)
	for _, r := range t.Rows {
		cells := make([]string, len(t.Header))
		copy(cells, r)
		_ = w.Write(cells)
	}
	w.Flush()
	return b.String()
}

// FormatValue shows an output or input value in a table cell: strings as
// they are, other values as compact JSON.
func FormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

// FormatCost shows a cost with enough digits for small amounts; "" when no
// call was priced. A cost that comes in part from built-in list prices
// ends in "*" (see BuiltinPriceNote).
func FormatCost(u result.Usage) string {
	if u.Cost == 0 && !u.Priced {
		return ""
	}
	s := fmt.Sprintf("%.4f", u.Cost)
	if !u.Priced {
		s = "≥" + s
	}
	if u.BuiltinPrices != "" {
		s += "*"
	}
	return s
}

// BuiltinPriceNote explains the "*" of FormatCost.
func BuiltinPriceNote(date string) string {
	return "* at built-in list prices of " + date + " for models the spec gives no price; declare price: in the spec to override"
}
