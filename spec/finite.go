package spec

import (
	"fmt"
	"math"
	"strconv"

	"github.com/debate-runner/runner/spec/syntax"
)

// NonFinite finds a NaN or an infinity in a value an expression gave
// (JSON, and so the journal and result.json, cannot hold either): the path
// to the first one found (".a", "[2]", "" for the value itself) and the
// number. Mappings are searched in sorted key order so the answer does not
// vary between runs.
func NonFinite(v any) (path string, f float64, found bool) {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", x, true
		}
	case float32:
		if g := float64(x); math.IsNaN(g) || math.IsInf(g, 0) {
			return "", g, true
		}
	case []any:
		for i, e := range x {
			if p, g, ok := NonFinite(e); ok {
				return "[" + strconv.Itoa(i) + "]" + p, g, true
			}
		}
	case []float64:
		for i, g := range x {
			if math.IsNaN(g) || math.IsInf(g, 0) {
				return "[" + strconv.Itoa(i) + "]", g, true
			}
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if p, g, ok := NonFinite(x[k]); ok {
				return "." + k + p, g, true
			}
		}
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = e
		}
		return NonFinite(m)
	}
	return "", 0, false
}

// NonFiniteError is an expression whose value is, or holds, a NaN or an
// infinity: a division by zero in floating point, the mean of nothing.
type NonFiniteError struct {
	// File is the spec file; the runtime fills it in when the error comes
	// from a node kind, which does not know it.
	File   string
	Pos    syntax.Pos
	What   string // e.g. `output "ratio"`, `node "c": value`
	Source string
	Path   string // where in the value, "" for the value itself
	Value  float64
}

func (e *NonFiniteError) Error() string {
	loc := fmt.Sprintf("%d:%d", e.Pos.Line, e.Pos.Col)
	if e.File != "" {
		loc = e.File + ":" + loc
	}
	name := "NaN"
	switch {
	case math.IsInf(e.Value, 1):
		name = "+Inf"
	case math.IsInf(e.Value, -1):
		name = "-Inf"
	}
	at := ""
	if e.Path != "" {
		at = " at " + e.Path
	}
	src := ""
	if e.Source != "" {
		src = " (" + e.Source + ")"
	}
	return fmt.Sprintf("%s: %s%s gave %s%s, which JSON cannot hold (a division by zero?); guard it, e.g. `d == 0 ? 0 : n / d`",
		loc, e.What, src, name, at)
}

// CheckFinite returns a *NonFiniteError when the value p gave holds a NaN
// or an infinity, else nil.
func CheckFinite(p *Program, what string, v any) error {
	path, f, ok := NonFinite(v)
	if !ok {
		return nil
	}
	e := &NonFiniteError{What: what, Path: path, Value: f}
	if p != nil {
		e.Pos, e.Source = p.Pos, p.Source
	}
	return e
}
