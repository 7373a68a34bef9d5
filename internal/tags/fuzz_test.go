package tags

import (
	"strings"
	"testing"
)

// FuzzParse checks the invariants that callers rely on for any input: no
// panic, offsets inside the input, fields ordered and disjoint, values taken
// from inside their element, linear work, and values that re-parse safely.
// The second argument is a comma-separated name filter ("" for none).
func FuzzParse(f *testing.F) {
	seeds := []struct{ in, names string }{
		{"<confidence>80</confidence><reason>ok</reason>", ""},
		{`<PrivateThoughts speaker="x y">t</PrivateThoughts><Content>a<b <i>c</i> <foo></Content>`, "PrivateThoughts,Content"},
		{"<Verdict>GOOD<VerdictReasoning>r</VerdictReasoning><Withdrawn>false</Withdr", "Verdict,VerdictReasoning,Withdrawn"},
		{"```xml\n<a>x</a>\n```", ""},
		{"```", ""},
		{"``````", "a"},
		{"<a<a<a x=\"<a '>", ""},
		{"<a>1<b>2</a>3</b></c><d/>", ""},
		{"<A k=v K='w' z>v</a >", "a"},
		{"<a>x<a>y</a>", "A"},
		{"</", ""},
		{"<a x=", ""},
		{"\x00<\xff>\xfe</\xff>", ""},
		{realisticMessage(), strings.Join(scaffold, ",")},
	}
	for _, s := range seeds {
		f.Add(s.in, s.names)
	}
	f.Fuzz(func(t *testing.T, in, names string) {
		var filter []string
		if names != "" {
			filter = strings.Split(names, ",")
		}
		r, steps := parse(in, filter)
		if limit := maxStepsPerByte*len(in) + 64; steps > limit {
			t.Errorf("%d steps for %d bytes, limit %d", steps, len(in), limit)
		}
		if len(r.Text) > len(in) {
			t.Errorf("text longer than input: %d > %d", len(r.Text), len(in))
		}
		prevEnd := 0
		for i, fl := range r.Fields {
			if fl.Start < prevEnd || fl.End <= fl.Start || fl.End > len(in) {
				t.Fatalf("field %d %q: offsets [%d,%d) out of order or bounds (prev end %d, len %d)",
					i, fl.Name, fl.Start, fl.End, prevEnd, len(in))
			}
			prevEnd = fl.End
			el := in[fl.Start:fl.End]
			if fl.Name == "" || !strings.HasPrefix(el, "<"+fl.Name) {
				t.Errorf("field %d: element %q does not start with <%s", i, el, fl.Name)
			}
			if !strings.Contains(el, fl.Value) {
				t.Errorf("field %d: value %q not inside element %q", i, fl.Value, el)
			}
			if strings.TrimSpace(fl.Value) != fl.Value {
				t.Errorf("field %d: value %q not trimmed", i, fl.Value)
			}
			if filter != nil && !nameIn(fl.Name, filter) {
				t.Errorf("field %d: name %q not in filter %q", i, fl.Name, filter)
			}
			for k := range fl.Attrs {
				if k != strings.ToLower(k) {
					t.Errorf("field %d: attribute key %q not lower-cased", i, k)
				}
			}
			Parse(fl.Value, filter...)
			Parse(fl.Value)
		}
		_, _ = ParseBool(in)
		m := r.Map()
		for _, fl := range r.Fields {
			if g, ok := r.Get(fl.Name); !ok || m[strings.ToLower(fl.Name)] != g.Value {
				t.Errorf("Get/Map disagree for %q", fl.Name)
			}
		}
	})
}

func nameIn(name string, filter []string) bool {
	for _, n := range filter {
		if strings.EqualFold(strings.TrimSpace(n), name) {
			return true
		}
	}
	return false
}
