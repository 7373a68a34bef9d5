package spec

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"

	"github.com/debate-runner/runner/spec/syntax"
)

// Domain is the set of values a var or an input may take, in JSON
// Schema's words: one of Enum, a number within Minimum and Maximum, text
// Pattern matches somewhere. A list var's domain is its items'. A nil
// Domain takes every value.
type Domain struct {
	Enum     []any    `json:"enum,omitempty"`
	Minimum  *float64 `json:"minimum,omitempty"`
	Maximum  *float64 `json:"maximum,omitempty"`
	Pattern  string   `json:"pattern,omitempty"`
	re       *regexp.Regexp
	hasItems bool
}

// Check says why v is not in the domain, nil when it is.
func (d *Domain) Check(v any) error {
	if d == nil {
		return nil
	}
	if list, ok := v.([]any); ok && d.hasItems {
		for i, item := range list {
			if err := d.checkOne(item); err != nil {
				return fmt.Errorf("item %d: %w", i+1, err)
			}
		}
		return nil
	}
	return d.checkOne(v)
}

func (d *Domain) checkOne(v any) error {
	if len(d.Enum) > 0 {
		found := false
		for _, e := range d.Enum {
			if domainEqual(e, v) {
				found = true
				break
			}
		}
		if !found {
			words := make([]string, len(d.Enum))
			for i, e := range d.Enum {
				words[i] = domainWords(e)
			}
			hint := ""
			if s, ok := v.(string); ok {
				hint = syntax.DidYouMean(s, words)
			}
			return fmt.Errorf("%s is not one of %s%s", domainWords(v), strings.Join(words, ", "), hint)
		}
	}
	if d.Minimum != nil || d.Maximum != nil {
		f, ok := domainNumber(v)
		if !ok {
			return fmt.Errorf("%s is not a number", domainWords(v))
		}
		if d.Minimum != nil && f < *d.Minimum {
			return fmt.Errorf("%s is below the minimum, %s", domainWords(v), domainWords(*d.Minimum))
		}
		if d.Maximum != nil && f > *d.Maximum {
			return fmt.Errorf("%s is above the maximum, %s", domainWords(v), domainWords(*d.Maximum))
		}
	}
	if d.re != nil {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s is not text", domainWords(v))
		}
		if !d.re.MatchString(s) {
			return fmt.Errorf("%s does not match the pattern %s", domainWords(v), d.Pattern)
		}
	}
	return nil
}

// domainNumber is v as a number, when it is one.
func domainNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, !math.IsNaN(x)
	}
	return 0, false
}

// domainEqual compares a value with an enum item: numbers by value (1
// equals 1.0), anything else as it is.
func domainEqual(a, b any) bool {
	fa, na := domainNumber(a)
	fb, nb := domainNumber(b)
	if na && nb {
		return fa == fb
	}
	return reflect.DeepEqual(a, b)
}

// domainWords writes a value as a flag or spec would.
func domainWords(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return fmt.Sprintf("%d", int64(x))
		}
	}
	return fmt.Sprint(v)
}

// compileDomain checks a declared domain against the type of its var's
// or input's default (def; typeOK says whether it is known) and returns
// it, nil when none is declared or it is refused. what names the var or
// input for diagnostics; at is where it is declared.
func (c *compiler) compileDomain(d syntax.Domain, def any, what string, at syntax.Pos) *Domain {
	if !d.HasDomain() {
		return nil
	}
	out := &Domain{}
	ok := true
	item := def
	if list, isList := def.([]any); isList {
		out.hasItems = true
		item = elemOfList(list)
	}
	_, number := domainNumber(item)
	_, text := item.(string)
	if d.Enum.Set {
		for i, e := range d.Enum.V {
			e = normalizeNumber(e)
			if item != nil && !sameKind(item, e) {
				c.r.Errorf(d.Enum.Pos, "%s: enum item %d (%s) is not %s like the default", what, i+1, domainWords(e), domainKindWords(item))
				ok = false
			}
			out.Enum = append(out.Enum, e)
		}
	}
	for _, b := range []struct {
		v   syntax.Value[float64]
		dst **float64
		kw  string
	}{{d.Minimum, &out.Minimum, "minimum"}, {d.Maximum, &out.Maximum, "maximum"}} {
		if !b.v.Set {
			continue
		}
		if !number {
			c.r.Errorf(b.v.Pos, "%s: %s bounds numbers, but the default is %s (give a number default)", what, b.kw, domainKindWords(item))
			ok = false
			continue
		}
		f := b.v.V
		*b.dst = &f
	}
	if out.Minimum != nil && out.Maximum != nil && *out.Minimum > *out.Maximum {
		c.r.Errorf(d.Maximum.Pos, "%s: the maximum, %s, is below the minimum, %s: no value is accepted", what, domainWords(*out.Maximum), domainWords(*out.Minimum))
		ok = false
	}
	if d.Pattern.Set {
		if !text {
			c.r.Errorf(d.Pattern.Pos, "%s: pattern matches text, but the default is %s", what, domainKindWords(item))
			ok = false
		} else if re, err := compileRegex(d.Pattern.V); err != nil {
			c.r.Errorf(d.Pattern.Pos, "%s: %s", what, err)
			ok = false
		} else {
			out.Pattern, out.re = d.Pattern.V, re
		}
	}
	if !ok {
		return nil
	}
	return out
}

// elemOfList is a list's first item whose type the others share, nil when
// they differ (or there is none).
func elemOfList(list []any) any {
	var item any
	for i, v := range list {
		v = normalizeNumber(v)
		if i == 0 {
			item = v
			continue
		}
		if !sameKind(item, v) {
			return nil
		}
	}
	return item
}

// sameKind says whether two values are both numbers, both text, both
// booleans (or of one other type).
func sameKind(a, b any) bool {
	_, na := domainNumber(a)
	_, nb := domainNumber(b)
	if na || nb {
		return na && nb
	}
	return reflect.TypeOf(a) == reflect.TypeOf(b)
}

func domainKindWords(v any) string {
	switch v.(type) {
	case nil:
		return "of no known type"
	case string:
		return "text"
	case bool:
		return "a boolean"
	case int, int64, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprintf("a %T", v)
}
