package paired

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/debate-runner/runner/runtime/sweep"
)

// A matrix sweep (--matrix) runs each dataset line once per combination of
// its axes' values: a cell. A paired comparison pairs one run per line on
// each side, so it takes one cell of a matrix sweep, never the runs of
// several mixed together.

// ParseCell reads a cell as the --cell flag gives it: NAME=VALUE pairs
// separated by commas, e.g. "rounds=2" or "model=m1,rounds=2".
func ParseCell(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, part := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: give NAME=VALUE pairs separated by commas, e.g. rounds=2", s)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%q names %s twice", s, name)
		}
		out[name] = value
	}
	return out, nil
}

// CellName is a cell as the flag writes it, its names in order.
func CellName(cell map[string]string) string {
	names := make([]string, 0, len(cell))
	for n := range cell {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + cell[n]
	}
	return strings.Join(parts, ",")
}

// Cells lists the cells of a sweep, in the order of its runs; one empty
// cell for a sweep without a matrix.
func Cells(s *sweep.Summary) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range s.Runs {
		name := CellName(r.Vars)
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		out = []string{""}
	}
	return out
}

// cellOf is the one cell of a sweep's runs ("" without a matrix, or with
// runs of several cells, which byItem refuses).
func cellOf(s *sweep.Summary) string {
	if len(s.Matrix) == 0 {
		return ""
	}
	if c := Cells(s); len(c) == 1 {
		return c[0]
	}
	return ""
}

// SelectCell is the sweep with only the runs of one cell: the runs whose
// matrix values are those of cell. A sweep with a single cell is itself
// when cell is nil. A sweep of several cells without one chosen, or a
// cell naming an axis the sweep lacks or a value it did not run, is an
// error that lists the sweep's cells.
func SelectCell(s *sweep.Summary, cell map[string]string) (*sweep.Summary, error) {
	cells := Cells(s)
	list := func() string {
		var named []string
		for _, c := range cells {
			named = append(named, "--cell "+c)
		}
		return strings.Join(named, ", ")
	}
	if cell == nil {
		if len(cells) > 1 {
			return nil, fmt.Errorf("%s is a matrix sweep of %d cells, and a paired comparison takes one run per dataset line from each side: choose its cell with %s", s.Dir, len(cells), list())
		}
		return s, nil
	}
	if len(s.Matrix) == 0 {
		return nil, fmt.Errorf("%s has no matrix, so no cell to choose: give --cell for the matrix sweep alone (one --cell stands for every matrix sweep; two are A's and B's)", s.Dir)
	}
	out := *s
	out.Runs = nil
	for _, r := range s.Runs {
		if maps.Equal(r.Vars, cell) {
			out.Runs = append(out.Runs, r)
		}
	}
	if len(out.Runs) == 0 {
		return nil, fmt.Errorf("%s has no cell %s: its cells are %s", s.Dir, CellName(cell), list())
	}
	out.Accuracy = nil
	for _, c := range s.ByCombination {
		if maps.Equal(c.Vars, cell) {
			out.Accuracy = c.Accuracy
		}
	}
	return &out, nil
}
