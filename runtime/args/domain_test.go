package args

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/debate-runner/runner/nodes"
	"github.com/debate-runner/runner/spec"
)

// The property, for the domains of vars and inputs (enum, minimum,
// maximum, pattern): validate accepts a declaration iff it is well formed
// (bounds in order, a pattern that compiles, items and bounds of the
// default's type) and its default is in it; and a value given by --set,
// --input or a dataset line is accepted iff it parses as the declared type
// and is in the domain, an error naming the flag otherwise. The domains
// and values are random; what is in the domain is decided here from the
// generator's own choices.

// domainCase is a random declaration with what it allows.
type domainCase struct {
	kind string // "int", "float", "text", "ints" (a list var)
	def  any
	enum []any
	min  *float64
	max  *float64
	pat  string
	// badItem: an enum item of another type than the default's.
	badItem bool
}

func genDomain(r *rand.Rand) domainCase {
	c := domainCase{kind: []string{"int", "float", "text", "ints"}[r.IntN(4)]}
	num := func() float64 { return float64(r.IntN(11) - 5) }
	switch c.kind {
	case "int", "ints":
		c.def = r.IntN(11) - 5
	case "float":
		c.def = []float64{0.5, -1.5, 2, 4.25}[r.IntN(4)]
	case "text":
		c.def = []string{"a", "fast", "slow", "", "x1"}[r.IntN(5)]
	}
	if c.kind == "ints" {
		c.def = []any{c.def, r.IntN(11) - 5}
	}
	if r.IntN(3) == 0 {
		for i := 0; i < 1+r.IntN(4); i++ {
			switch c.kind {
			case "int", "ints":
				c.enum = append(c.enum, r.IntN(11)-5)
			case "float":
				c.enum = append(c.enum, []float64{0.5, -1.5, 2, 3}[r.IntN(4)])
			case "text":
				c.enum = append(c.enum, []string{"a", "fast", "slow", "b"}[r.IntN(4)])
			}
		}
		if r.IntN(8) == 0 {
			c.badItem = true
			c.enum = append(c.enum, map[bool]any{true: "zz", false: 7}[c.kind != "text"])
		}
	}
	if c.kind != "text" {
		if r.IntN(2) == 0 {
			f := num()
			c.min = &f
		}
		if r.IntN(2) == 0 {
			f := num() + 0.5*float64(r.IntN(2))
			c.max = &f
		}
	} else if r.IntN(2) == 0 {
		c.pat = []string{"^[a-z]+$", "a", "^(fast|slow)$", "[", "^$|x", `\d`}[r.IntN(6)]
	}
	return c
}

// allows decides, from the generator's choices, whether v is allowed.
func (c domainCase) allows(v any) bool {
	if list, ok := v.([]any); ok {
		for _, x := range list {
			if !c.allows(x) {
				return false
			}
		}
		return true
	}
	if c.enum != nil {
		found := false
		for _, e := range c.enum {
			if fmt.Sprint(e) == fmt.Sprint(v) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	var f float64
	switch x := v.(type) {
	case int:
		f = float64(x)
	case float64:
		f = x
	}
	if c.min != nil && f < *c.min || c.max != nil && f > *c.max {
		return false
	}
	if c.pat != "" {
		return regexp.MustCompile(c.pat).MatchString(v.(string))
	}
	return true
}

// wellFormed: validate must accept the declaration (given its default is
// allowed).
func (c domainCase) wellFormed() bool {
	if c.badItem || c.min != nil && c.max != nil && *c.min > *c.max {
		return false
	}
	_, err := regexp.Compile(c.pat)
	return err == nil
}

func yamlOf(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64) + map[bool]string{true: ".0", false: ""}[x == float64(int(x))]
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = yamlOf(p)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}

func (c domainCase) declaration() string {
	var b strings.Builder
	fmt.Fprintf(&b, "{default: %s", yamlOf(c.def))
	if c.enum != nil {
		fmt.Fprintf(&b, ", enum: %s", yamlOf(c.enum))
	}
	if c.min != nil {
		fmt.Fprintf(&b, ", minimum: %s", yamlOf(*c.min))
	}
	if c.max != nil {
		fmt.Fprintf(&b, ", maximum: %s", yamlOf(*c.max))
	}
	if c.pat != "" {
		fmt.Fprintf(&b, ", pattern: %s", strconv.Quote(c.pat))
	}
	return b.String() + "}"
}

// rawValue is a value as a flag gives it, and what it parses to (nil: it
// does not parse as the declared type).
func (c domainCase) rawValue(r *rand.Rand) (string, any) {
	switch c.kind {
	case "int":
		if r.IntN(10) == 0 {
			return "x", nil
		}
		n := r.IntN(15) - 7
		return strconv.Itoa(n), n
	case "float":
		f := []float64{0.5, -1.5, 2, 3, 4.25, -6, 9}[r.IntN(7)]
		return strconv.FormatFloat(f, 'f', -1, 64), f
	case "ints":
		a, b := r.IntN(15)-7, r.IntN(15)-7
		return fmt.Sprintf("%d,%d", a, b), []any{a, b}
	}
	s := []string{"a", "fast", "slow", "", "x1", "b", "FAST", "9"}[r.IntN(8)]
	return s, s
}

func checkDomainCase(t *testing.T, dir string, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed^0xd1b54a32d192ed03))
	c := genDomain(r)
	input := c.kind != "ints" && r.IntN(2) == 0
	var data string
	if input {
		data = "version: 1\nname: d\ninputs:\n  v: " + strings.Replace(c.declaration(), "{", "{description: d, ", 1) + "\n"
	} else {
		data = "version: 1\nname: d\nvars:\n  v: " + c.declaration() + "\n"
	}
	data += "agents: {a: {}}\ntemplates: {define: {t: hi}}\nnodes: {n: {kind: ask, agents: [a], template: t}}\nflow: [n]\n"
	plan, diags := spec.Compile(filepath.Join(dir, "d.yaml"), []byte(data), nodes.Registry())
	wantOK := c.wellFormed() && c.allows(c.def)
	if (plan != nil) != wantOK {
		t.Fatalf("seed %d: %s\nwant accepted %v, got:\n%s", seed, data, wantOK, diags.Error())
	}
	if plan == nil {
		if !strings.Contains(diags.Error(), ":4:") {
			t.Fatalf("seed %d: refused without naming the declaration's line:\n%s", seed, diags.Error())
		}
		return
	}
	for i := 0; i < 8; i++ {
		raw, v := c.rawValue(r)
		want := v != nil && c.allows(v)
		var err error
		var flag string
		switch {
		case input && r.IntN(2) == 0:
			_, err = Inputs(plan, []string{"v=" + raw}, nil)
			flag = "--input v: "
		case input:
			// a dataset line's value, as JSON decodes it
			var val any = raw
			if f, ok := v.(float64); ok {
				val = f
			} else if n, ok := v.(int); ok {
				val = float64(n)
			}
			if v == nil {
				continue // a dataset value of another type is typed by other code
			}
			_, err = Inputs(plan, nil, map[string]any{"v": val})
			flag = "input v: "
		default:
			_, err = ResolveVars(plan, []string{"v=" + raw})
			flag = "--set v: "
		}
		if (err == nil) != want {
			t.Fatalf("seed %d: %s\nvalue %q: want accepted %v, got %v", seed, c.declaration(), raw, want, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), flag) {
			t.Fatalf("seed %d: value %q: the error does not name the flag %q: %v", seed, raw, flag, err)
		}
	}
}

// TestDomainProperty checks the property over generated declarations.
func TestDomainProperty(t *testing.T) {
	dir := t.TempDir()
	for i := uint64(0); i < 100; i++ {
		checkDomainCase(t, dir, i*2654435761+11)
	}
}

// FuzzDomain checks it for any seed.
func FuzzDomain(f *testing.F) {
	for _, s := range []uint64{1, 2, 3} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, seed uint64) { checkDomainCase(t, dir, seed) })
}
