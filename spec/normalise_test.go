package spec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// answerValue is a number as a generator knows it: its value and the
// surface forms a model may write it in.
type answerValue struct {
	value float64
	forms []string
}

// withThousands writes the digits of a whole number with a comma every
// three digits.
func withThousands(digits string) string {
	var b strings.Builder
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// randomAnswer draws a number (whole, decimal or a fraction) and the forms
// it may take in a reply.
func randomAnswer(r *rand.Rand) answerValue {
	neg := r.IntN(3) == 0
	minus := func() string {
		if !neg {
			return ""
		}
		return []string{"-", "−"}[r.IntN(2)]
	}
	if r.IntN(4) == 0 { // a fraction P/Q in lowest terms is not needed: its value decides
		p, q := 1+r.IntN(999), 2+r.IntN(98)
		v := float64(p) / float64(q)
		if neg {
			v = -v
		}
		m := minus()
		return answerValue{v, []string{
			fmt.Sprintf("%s%d/%d", m, p, q),
			fmt.Sprintf("%s%d / %d", m, p, q),
			fmt.Sprintf(`%s\frac{%d}{%d}`, m, p, q),
			fmt.Sprintf(`\boxed{%s\dfrac{%d}{%d}}`, m, p, q),
			fmt.Sprintf(`so x = %s\tfrac{ %d }{ %d }`, m, p, q),
			fmt.Sprintf(`After 12 steps: \boxed{%s\frac{%d}{%d}} and 3 more`, m, p, q),
		}}
	}
	whole := strconv.Itoa(r.IntN([]int{10, 1000, 1000000, 1 << 40}[r.IntN(4)]))
	frac := ""
	if r.IntN(2) == 0 {
		frac = strconv.Itoa(r.IntN(1000))
		frac = strings.Repeat("0", r.IntN(2)) + frac
		frac = strings.TrimRight(frac, "0")
	}
	canon := whole
	if frac != "" {
		canon += "." + frac
	}
	v, _ := strconv.ParseFloat(canon, 64)
	if neg && v != 0 {
		v = -v
	} else {
		neg = false
	}
	m := minus()
	dec := ""
	if frac != "" {
		dec = "." + frac
	}
	zeros := strings.Repeat("0", r.IntN(3))
	forms := []string{
		m + whole + dec,
		m + zeros + whole + dec,
		m + withThousands(whole) + dec,
		m + whole + dec + ".",
		`\boxed{` + m + whole + dec + `}`,
		`\boxed{\text{` + m + whole + dec + `}}`,
		`\text{` + m + whole + dec + `}`,
		"x = " + m + whole + dec,
		"The answer is " + m + withThousands(whole) + dec + ".",
		"Step 1: 17 + 25 = 42.\nStep 2: 3 * 7 = 21.\n#### " + m + withThousands(whole) + dec,
		m + "$" + withThousands(whole) + dec,
		m + whole + dec + " apples",
		strconv.FormatFloat(v, 'g', -1, 64),
		strconv.FormatFloat(v, 'e', -1, 64),
	}
	if frac == "" {
		forms = append(forms, m+whole+"."+strings.Repeat("0", 1+r.IntN(2)))
	} else {
		forms = append(forms, m+whole+dec+strings.Repeat("0", 1+r.IntN(2)))
	}
	if !neg {
		forms = append(forms, "+"+whole+dec, "+"+zeros+whole+dec)
	}
	return answerValue{v, forms}
}

// TestNumberNormalisesEverySurfaceForm draws numbers and writes each in
// every form a reply may give it: each form reads as the number, so equal
// numbers normalise equal, distinct numbers stay distinct, and number() of
// what number() gave is the same (idempotent), also once printed.
func TestNumberNormalisesEverySurfaceForm(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 4))
	seen := map[float64]string{}
	for i := 0; i < 200; i++ {
		a := randomAnswer(r)
		for _, form := range a.forms {
			got, ok := AnswerNumber(form).(float64)
			if !ok || got != a.value {
				t.Fatalf("number(%q) = %v, want %v", form, AnswerNumber(form), a.value)
			}
			if again := AnswerNumber(got); again != got {
				t.Fatalf("number(number(%q)) = %v, not %v", form, again, got)
			}
			if printed := AnswerNumber(strconv.FormatFloat(got, 'g', -1, 64)); printed != got {
				t.Fatalf("number of %v printed = %v", got, printed)
			}
		}
		// Distinct numbers stay distinct: a value already seen came from
		// the same number (the same text, or an equal fraction).
		if prev, ok := seen[a.value]; ok && prev != a.forms[0] {
			pv, _ := AnswerNumber(prev).(float64)
			if pv != a.value {
				t.Fatalf("%q and %q normalise alike but differ", prev, a.forms[0])
			}
		}
		seen[a.value] = a.forms[0]
	}
}

// FuzzAnswerNumber: number() never panics, and what it reads out of any
// text reads back the same, alone, printed, or boxed.
func FuzzAnswerNumber(f *testing.F) {
	for _, s := range []string{"The answer is 1,234.", `\boxed{-\frac{1}{2}}`, "#### 72", "1e309", "3/0", "+.5e-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := AnswerNumber(s)
		if v == nil {
			return
		}
		n, ok := v.(float64)
		if !ok || math.IsNaN(n) || math.IsInf(n, 0) {
			t.Fatalf("number(%q) = %#v, not a finite number", s, v)
		}
		printed := strconv.FormatFloat(n, 'g', -1, 64)
		for _, form := range []string{printed, `\boxed{` + printed + `}`, "#### " + printed} {
			if got := AnswerNumber(form); got != n {
				t.Fatalf("number(%q) = %v, then number(%q) = %v", s, n, form, got)
			}
		}
		if got := AnswerNumber(n); got != n {
			t.Fatalf("number(number(%q)) = %v, not %v", s, got, n)
		}
	})
}

// TestNormaliserTable checks every row of the table of answer forms in
// docs/experiments.md against the normaliser it names.
func TestNormaliserTable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "experiments.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(number|choice|yesno)` \\| `([^`]*)`[^|]* \\| (?:`([^`]*)`|nil) \\|$")
	rows := row.FindAllStringSubmatch(string(data), -1)
	if len(rows) < 30 {
		t.Fatalf("found %d rows of the normaliser table in docs/experiments.md", len(rows))
	}
	fns := map[string]func(any) any{"number": AnswerNumber, "choice": AnswerChoice, "yesno": AnswerYesNo}
	for _, m := range rows {
		got := fns[m[1]](m[2])
		var want any
		if m[3] != "" {
			want = m[3]
			if m[1] == "number" {
				f, err := strconv.ParseFloat(m[3], 64)
				if err != nil {
					t.Fatalf("row %q: %v", m[0], err)
				}
				want = f
			}
		}
		if got != want {
			t.Errorf("%s(%q) = %v, the table says %v", m[1], m[2], got, want)
		}
	}
}
