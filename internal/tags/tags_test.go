package tags

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// scaffold is the set of element names a chain-of-debate message uses.
var scaffold = []string{
	"PrivateThoughts", "PrivatePredictions", "SpeakingTo", "Whisper",
	"Content", "Verdict", "VerdictReasoning", "Withdrawn",
}

// f is shorthand for an expected field; offsets are checked separately.
func f(name, value string) Field { return Field{Name: name, Value: value} }

func unclosed(name, value string) Field {
	return Field{Name: name, Value: value, Unclosed: true}
}

func withAttrs(fl Field, kv ...string) Field {
	fl.Attrs = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		fl.Attrs[kv[i]] = kv[i+1]
	}
	return fl
}

func TestParse(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		names []string
		want  []Field
		text  string
	}{
		{
			name: "empty",
			in:   "",
		},
		{
			name: "plain text only",
			in:   "  just prose, 3 < 4 and a<b  ",
			text: "just prose, 3 < 4 and a<b",
		},
		{
			name: "tags output format",
			in:   "<confidence>80</confidence><reason>solid evidence</reason>",
			want: []Field{f("confidence", "80"), f("reason", "solid evidence")},
		},
		{
			name: "value trimmed, prose kept as text",
			in:   "Intro line.\n<Verdict>\n  GOOD_FIT \n</Verdict>\nClosing line.",
			want: []Field{f("Verdict", "GOOD_FIT")},
			text: "Intro line.\n\nClosing line.",
		},
		{
			name: "attributes with both quote styles, bare and unquoted",
			in:   `<PrivateThoughts Speaker="chef julia martinez" mood='calm' draft n=3>I think</PrivateThoughts>`,
			want: []Field{withAttrs(f("PrivateThoughts", "I think"),
				"speaker", "chef julia martinez", "mood", "calm", "draft", "", "n", "3")},
		},
		{
			name: "quoted attribute may contain > and /",
			in:   `<Note by="a > b / c">x</Note>`,
			want: []Field{withAttrs(f("Note", "x"), "by", "a > b / c")},
		},
		{
			name: "repeated attribute keeps first",
			in:   `<a k="1" K="2">x</a>`,
			want: []Field{withAttrs(f("a", "x"), "k", "1")},
		},
		{
			name: "apostrophe in a sloppy tag does not open a quote",
			in:   `<Note it's late>x</Note>`,
			want: []Field{withAttrs(f("Note", "x"), "it", "", "s", "", "late", "")},
		},
		{
			name: "closing tag matched case-insensitively",
			in:   "<VERDICT>poor_fit</verdict ><withdrawn>TRUE</WithDrawn>",
			want: []Field{f("VERDICT", "poor_fit"), f("withdrawn", "TRUE")},
		},
		{
			name:  "name filter is case-insensitive",
			in:    "<verdict>GOOD_FIT</verdict><Other>x</Other>",
			names: []string{" Verdict "},
			want:  []Field{f("verdict", "GOOD_FIT")},
			text:  "<Other>x</Other>",
		},
		{
			name:  "content holds arbitrary markup when names are given",
			in:    "<SpeakingTo>Marcus</SpeakingTo>\n<Content>See <b>this</b>, 1 < 2, a<b and an unclosed <foo> tag.</Content>\n<Verdict>GOOD_FIT</Verdict>",
			names: scaffold,
			want: []Field{
				f("SpeakingTo", "Marcus"),
				f("Content", "See <b>this</b>, 1 < 2, a<b and an unclosed <foo> tag."),
				f("Verdict", "GOOD_FIT"),
			},
		},
		{
			name: "without names nested markup stays in the value",
			in:   "<Content>See <b>this</b> and <foo> there</Content><Verdict>X</Verdict>",
			want: []Field{f("Content", "See <b>this</b> and <foo> there"), f("Verdict", "X")},
		},
		{
			name:  "recognised tag quoted inside content stays inside",
			in:    "<Content>Remember to use <Verdict> tags.</Content>\n<Verdict>ADEQUATE</Verdict>",
			names: scaffold,
			want:  []Field{f("Content", "Remember to use <Verdict> tags."), f("Verdict", "ADEQUATE")},
		},
		{
			name: "nested element of same name",
			in:   "<a>1<a>2</a>3</a>tail",
			want: []Field{f("a", "1<a>2</a>3")},
			text: "tail",
		},
		{
			name: "closing tag implicitly ends elements opened inside",
			in:   "<a>1<b>2</a>3</b>",
			want: []Field{f("a", "1<b>2")},
			text: "3</b>",
		},
		{
			name: "stray closing tags are text",
			in:   "</x>lead<a>v</b></a></a>",
			want: []Field{f("a", "v</b>")},
			text: "</x>lead</a>",
		},
		{
			name:  "missing closing tag ends at next recognised opening tag",
			in:    "<Verdict>GOOD_FIT\n<VerdictReasoning>Because</VerdictReasoning>\n<Withdrawn>false</Withdrawn>",
			names: scaffold,
			want: []Field{
				unclosed("Verdict", "GOOD_FIT"),
				f("VerdictReasoning", "Because"),
				f("Withdrawn", "false"),
			},
		},
		{
			name:  "missing closing tag skips unrecognised tags",
			in:    "<Content>text <b>bold</b> more\n<Verdict>X</Verdict>",
			names: scaffold,
			want:  []Field{unclosed("Content", "text <b>bold</b> more"), f("Verdict", "X")},
		},
		{
			name: "missing closing tag runs to end of input",
			in:   "<Verdict>A</Verdict>\n<VerdictReasoning>cut off mid sent",
			want: []Field{f("Verdict", "A"), unclosed("VerdictReasoning", "cut off mid sent")},
		},
		{
			name: "truncated closing tag fragment dropped",
			in:   "<Withdrawn>false</Withdr",
			want: []Field{unclosed("Withdrawn", "false")},
		},
		{
			name: "truncated after lone <",
			in:   "<Withdrawn>true <",
			want: []Field{unclosed("Withdrawn", "true")},
		},
		{
			name: "fragment of another tag is kept",
			in:   "<Withdrawn>false</Verd",
			want: []Field{unclosed("Withdrawn", "false</Verd")},
		},
		{
			name: "unclosed then closed same name",
			in:   "<a>x<a>y</a>",
			want: []Field{unclosed("a", "x"), f("a", "y")},
		},
		{
			name: "self-closing tag is an empty element",
			in:   "<Withdrawn/> and <Whisper flag='y' />",
			want: []Field{f("Withdrawn", ""), withAttrs(f("Whisper", ""), "flag", "y")},
			text: "and",
		},
		{
			name: "repeated tags all reported",
			in:   "<Verdict>A</Verdict><Verdict>B</Verdict>",
			want: []Field{f("Verdict", "A"), f("Verdict", "B")},
		},
		{
			name: "not tags",
			in:   "<3 <= x <-> <a=b> < a> <!-- c --> <![CDATA[x]]> <?xml?> <a\"",
			text: "<3 <= x <-> <a=b> < a> <!-- c --> <![CDATA[x]]> <?xml?> <a\"",
		},
		{
			name: "tag interrupted by < is abandoned",
			in:   "<a x=\"<b>y</b>",
			want: []Field{f("b", "y")},
			text: "<a x=\"",
		},
		{
			name: "xml fence stripped",
			in:   "```xml\n<Verdict>GOOD_FIT</Verdict>\n<Withdrawn>true</Withdrawn>\n```\n",
			want: []Field{f("Verdict", "GOOD_FIT"), f("Withdrawn", "true")},
		},
		{
			name: "bare fence stripped, prose kept",
			in:   "\n```\nHello\n<Verdict>X</Verdict>\n```",
			want: []Field{f("Verdict", "X")},
			text: "Hello",
		},
		{
			name: "fence on one line with content",
			in:   "```<a>x</a>```",
			want: []Field{f("a", "x")},
		},
		{
			name: "unterminated fence still stripped",
			in:   "```xml\n<a>x</a>",
			want: []Field{f("a", "x")},
		},
		{
			name: "inner fence is not surrounding",
			in:   "<Content>```go\nx := 1\n```</Content>",
			want: []Field{f("Content", "```go\nx := 1\n```")},
		},
		{
			name:  "empty names entries match nothing",
			in:    "<a>x</a>",
			names: []string{""},
			text:  "<a>x</a>",
		},
		{
			name: "non-ASCII text around tags",
			in:   "Mamma mia — <Verdict>AMATRICIANA</Verdict> sì",
			want: []Field{f("Verdict", "AMATRICIANA")},
			text: "Mamma mia —  sì",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Parse(tc.in, tc.names...)
			got := make([]Field, len(r.Fields))
			for i, fl := range r.Fields {
				checkOffsets(t, tc.in, fl)
				fl.Start, fl.End = 0, 0
				got[i] = fl
			}
			if len(got) == 0 {
				got = nil // compare "no fields" regardless of how it is spelled
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("fields:\n got %#v\nwant %#v", got, tc.want)
			}
			if r.Text != tc.text {
				t.Errorf("text: got %q, want %q", r.Text, tc.text)
			}
		})
	}
}

// checkOffsets verifies that a field's offsets delimit an element that starts
// with its opening tag and contains its value.
func checkOffsets(t *testing.T, in string, fl Field) {
	t.Helper()
	if fl.Start < 0 || fl.End > len(in) || fl.Start >= fl.End {
		t.Fatalf("field %q: bad offsets [%d,%d) for input of %d bytes", fl.Name, fl.Start, fl.End, len(in))
	}
	el := in[fl.Start:fl.End]
	if !strings.HasPrefix(el, "<"+fl.Name) {
		t.Errorf("field %q: element %q does not start with its tag", fl.Name, el)
	}
	if !strings.Contains(el, fl.Value) {
		t.Errorf("field %q: value %q not inside element %q", fl.Name, fl.Value, el)
	}
}

func TestParseOffsets(t *testing.T) {
	in := "```xml\nlead <A k=v>one</a> mid <B>two\n```"
	r := Parse(in)
	if len(r.Fields) != 2 {
		t.Fatalf("got %d fields, want 2: %+v", len(r.Fields), r.Fields)
	}
	if got, want := in[r.Fields[0].Start:r.Fields[0].End], "<A k=v>one</a>"; got != want {
		t.Errorf("first element %q, want %q", got, want)
	}
	// An unclosed element at the end stops before the closing fence.
	if got, want := in[r.Fields[1].Start:r.Fields[1].End], "<B>two\n"; got != want {
		t.Errorf("second element %q, want %q", got, want)
	}
	if r.Text != "lead  mid" {
		t.Errorf("text %q", r.Text)
	}
}

func TestResultAccessors(t *testing.T) {
	r := Parse("<Verdict>A</Verdict><reason>r1</reason><VERDICT>B</VERDICT><Reason>r2</Reason>")
	if fl, ok := r.Get("verdict"); !ok || fl.Value != "A" {
		t.Errorf("Get(verdict) = %+v, %v; want A", fl, ok)
	}
	if _, ok := r.Get("missing"); ok {
		t.Error("Get(missing) reported a field")
	}
	var vals []string
	for _, fl := range r.All("Verdict") {
		vals = append(vals, fl.Value)
	}
	if !reflect.DeepEqual(vals, []string{"A", "B"}) {
		t.Errorf("All(Verdict) values = %q", vals)
	}
	if got := r.All("nope"); got != nil {
		t.Errorf("All(nope) = %+v, want nil", got)
	}
	want := map[string]string{"verdict": "A", "reason": "r1"}
	if got := r.Map(); !reflect.DeepEqual(got, want) {
		t.Errorf("Map() = %v, want %v", got, want)
	}
	if got := (Result{}).Map(); len(got) != 0 {
		t.Errorf("empty Map() = %v", got)
	}
}

func TestParseBool(t *testing.T) {
	tests := []struct {
		in      string
		want    bool
		wantErr bool
	}{
		{"true", true, false},
		{" TRUE\n", true, false},
		{"Yes", true, false},
		{"1", true, false},
		{"false", false, false},
		{"No", false, false},
		{"\t0 ", false, false},
		{"", false, true},
		{"maybe", false, true},
		{"true.", false, true},
		{"2", false, true},
		{"t", false, true},
	}
	for _, tc := range tests {
		got, err := ParseBool(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseBool(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrNotBool) {
				t.Errorf("ParseBool(%q) error %v does not wrap ErrNotBool", tc.in, err)
			}
			if !strings.Contains(err.Error(), tc.in) {
				t.Errorf("ParseBool(%q) error %q does not name the value", tc.in, err)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("ParseBool(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// maxStepsPerByte bounds the work per input byte. The parser examines each
// byte a small constant number of times (lex, trim, text copy, attributes),
// so a quadratic path would exceed this by orders of magnitude on 1 MB.
const maxStepsPerByte = 12

func TestParseLinear(t *testing.T) {
	// 64 KB keeps a quadratic regression quick to fail (a few seconds) while
	// still being far above the 12 steps/byte bound if it happens.
	const size = 1 << 16
	rep := func(unit string) string { return strings.Repeat(unit, size/len(unit)) }
	half := func(a, b string) string { return rep(a)[:size/2] + rep(b)[:size/2] }
	inputs := []struct {
		name  string
		in    string
		names []string
	}{
		{"lt runs", rep("<a<a"), nil},
		{"lt only", rep("<"), nil},
		{"unclosed opens", rep("<a>"), nil},
		{"unclosed opens filtered", rep("<Content>"), scaffold},
		{"unterminated tags", rep("<a b "), nil},
		{"unterminated quotes", rep(`<a x="`), nil},
		{"unterminated single quotes", rep(`<a x='y `), nil},
		{"stray closes", rep("</a>"), nil},
		{"deep nesting then wrong closes", half("<a>", "</b>"), nil},
		{"deep nesting then matching closes", half("<a>", "</a>"), nil},
		{"deep mixed names closed by outer", "<z>" + rep("<a><b>") + "</z>", nil},
		{"many distinct names", manyNames(size), nil},
		{"long attributes", rep(`<a ` + strings.Repeat(`k="v" `, 50) + `>`), nil},
		{"fence with unclosed", "```xml\n" + rep("<Verdict>x") + "\n```", scaffold},
		{"partial close tails", rep("<Withdrawn>x</Withdr\n"), scaffold},
	}
	for _, tc := range inputs {
		t.Run(tc.name, func(t *testing.T) {
			_, steps := parse(tc.in, tc.names)
			t.Logf("%.2f steps/byte", float64(steps)/float64(len(tc.in)))
			if limit := maxStepsPerByte*len(tc.in) + 64; steps > limit {
				t.Errorf("%d steps for %d bytes (%.1f/byte), limit %d", steps, len(tc.in),
					float64(steps)/float64(len(tc.in)), limit)
			}
		})
	}
}

func manyNames(size int) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		b.WriteString("<n")
		b.WriteString(strings.Repeat("x", i%97))
		b.WriteString(">")
	}
	return b.String()
}

// TestStepCounterCounts guards the linearity test itself: if the counter
// stopped counting, every bound would pass trivially.
func TestStepCounterCounts(t *testing.T) {
	small := strings.Repeat("<a>x", 1000)
	_, s1 := parse(small, nil)
	_, s2 := parse(small+small, nil)
	if s1 < len(small) {
		t.Fatalf("only %d steps for %d bytes: counter not counting", s1, len(small))
	}
	if s2 < 2*s1-16 || s2 > 2*s1+16 {
		t.Errorf("doubling the input took %d steps vs %d: not proportional", s2, s1)
	}
}

func TestParsePathologicalResults(t *testing.T) {
	n := 100000
	r := Parse(strings.Repeat("<a>", n))
	if len(r.Fields) != n {
		t.Fatalf("got %d fields, want %d", len(r.Fields), n)
	}
	for i, fl := range r.Fields {
		if !fl.Unclosed || fl.Value != "" || fl.Start != 3*i || fl.End != 3*i+3 {
			t.Fatalf("field %d = %+v", i, fl)
		}
	}
	r = Parse(strings.Repeat("<a>", n) + strings.Repeat("</a>", n))
	if len(r.Fields) != 1 || r.Fields[0].Unclosed || r.Text != "" {
		t.Fatalf("deep nesting: %d fields, text %q", len(r.Fields), r.Text)
	}
}

// realisticMessage builds a chain-of-debate reply of about 5 KB.
func realisticMessage() string {
	para := "From a research perspective the candidate's record is uneven: strong systems work, " +
		"a handful of workshop papers, and a habit of shipping tools that others adopt. " +
		"I would weigh the 3 < 5 year gap in publications against the scale of the deployments, " +
		"and ask whether code like `if a<b { return }` reflects care or haste.\n\n"
	var b strings.Builder
	b.WriteString(`<PrivateThoughts speaker="dr. ada lindqvist">`)
	b.WriteString(strings.Repeat("I should press on evaluation rigour before conceding. ", 12))
	b.WriteString("</PrivateThoughts>\n\n<SpeakingTo>Marcus</SpeakingTo>\n<Whisper>false</Whisper>\n<Content>\n")
	for b.Len() < 4500 {
		b.WriteString(para)
		b.WriteString("Key points:\n- <b>impact</b> is real\n- rigour is <i>thin</i>\n- an unclosed <note> here\n\n")
	}
	b.WriteString("</Content>\n<Verdict>ADEQUATE</Verdict>\n<VerdictReasoning>")
	b.WriteString(strings.Repeat("Strong engineering, limited research depth. ", 8))
	b.WriteString("</VerdictReasoning>\n<Withdrawn>false</Withdrawn>\n")
	return b.String()
}

func TestRealisticMessage(t *testing.T) {
	msg := realisticMessage()
	r := Parse(msg, scaffold...)
	got := make([]string, len(r.Fields))
	for i, fl := range r.Fields {
		got[i] = fl.Name
	}
	want := []string{"PrivateThoughts", "SpeakingTo", "Whisper", "Content", "Verdict", "VerdictReasoning", "Withdrawn"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fields %q, want %q", got, want)
	}
	m := r.Map()
	if m["verdict"] != "ADEQUATE" || m["speakingto"] != "Marcus" {
		t.Errorf("map %v", m)
	}
	if c, _ := r.Get("content"); !strings.Contains(c.Value, "unclosed <note> here") {
		t.Errorf("content lost its markup")
	}
	if w, _ := r.Get("Withdrawn"); w.Value != "false" {
		t.Errorf("withdrawn = %q", w.Value)
	}
	if pt, _ := r.Get("privatethoughts"); pt.Attrs["speaker"] != "dr. ada lindqvist" {
		t.Errorf("speaker attr = %v", pt.Attrs)
	}
}

func BenchmarkParse(b *testing.B) {
	msg := realisticMessage()
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		Parse(msg, scaffold...)
	}
}

func BenchmarkParsePathological(b *testing.B) {
	inputs := map[string]string{
		"lt-runs-1MB":        strings.Repeat("<a<a", 1<<18),
		"unclosed-opens-1MB": strings.Repeat("<a>", 1<<20/3),
		"unterminated-quote": strings.Repeat(`<a x="`, 1<<20/6),
	}
	for name, in := range inputs {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				Parse(in)
			}
		})
	}
}
