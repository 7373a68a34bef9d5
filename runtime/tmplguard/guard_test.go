package tmplguard

import (
	"errors"
	"strings"
	"testing"
	"text/template"
)

func parseSet(t *testing.T, src map[string]string) *template.Template {
	t.Helper()
	set := template.New("").Option("missingkey=error")
	for name, text := range src {
		template.Must(set.New(name).Parse(text))
	}
	return set
}

func render(set *template.Template, name string, data any) (string, error) {
	var b strings.Builder
	err := set.ExecuteTemplate(&b, name, data)
	return b.String(), err
}

type data struct {
	Own   *struct{ Output any }
	Vars  map[string]any
	Items []int
	Name  string
}

func TestPrintsWhatItPrintedBefore(t *testing.T) {
	src := map[string]string{
		"p": `{{.Name}} {{range $i, $x := .Items}}{{$i}}={{$x}} {{end}}{{with $v := .Vars.k}}{{$v}}{{end}}{{printf "%d-%s" 3 "x"}} {{template "q" .}}`,
		"q": `{{if .Vars.k}}[{{.Vars.k}}]{{else}}none{{end}} {{len .Items}} {{.Own.Output}}`,
	}
	d := data{Own: &struct{ Output any }{Output: map[string]any{"a": 1}}, Vars: map[string]any{"k": "v"}, Items: []int{4, 5}, Name: "ann"}
	want, err := render(parseSet(t, src), "p", d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := render(Guard(parseSet(t, src)), "p", d)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("guarded set printed %q, unguarded %q", got, want)
	}
}

func TestRefusesNoValue(t *testing.T) {
	for name, tc := range map[string]struct {
		text   string
		d      data
		action string
	}{
		"nil output":      {"a {{.Own.Output}} b", data{Own: &struct{ Output any }{}}, "{{.Own.Output}}"},
		"nil in map":      {"line\n  {{.Vars.k}}", data{Vars: map[string]any{"k": nil}}, "{{.Vars.k}}"},
		"index missing":   {`{{index .Vars "zz"}}`, data{Vars: map[string]any{}}, `{{index .Vars "zz"}}`},
		"inside a range":  {`{{range .Items}}{{$.Vars.k}}{{end}}`, data{Items: []int{1}, Vars: map[string]any{"k": nil}}, "{{$.Vars.k}}"},
		"inside if-else":  {`{{if .Name}}x{{else}}{{.Own.Output}}{{end}}`, data{Own: &struct{ Output any }{}}, "{{.Own.Output}}"},
		"piped to a func": {`{{.Vars.k | print}}`, data{Vars: map[string]any{"k": nil}}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			set := Guard(parseSet(t, map[string]string{"p": tc.text}))
			out, err := render(set, "p", tc.d)
			if tc.action == "" {
				// print(nil) gives "<nil>", not "<no value>": not the guard's business.
				if err != nil || strings.Contains(out, "<no value>") {
					t.Fatalf("got %q, %v", out, err)
				}
				return
			}
			var m *MissingError
			if !errors.As(err, &m) {
				t.Fatalf("rendered %q, err %v; want a MissingError", out, err)
			}
			if m.Action != tc.action || !strings.HasPrefix(m.Where, "p:") {
				t.Fatalf("error names %q at %q; want %q", m.Action, m.Where, tc.action)
			}
			if !IsGuardError(err) {
				t.Fatal("IsGuardError is false")
			}
		})
	}
}

func TestErrorNamesLineAndColumn(t *testing.T) {
	set := Guard(parseSet(t, map[string]string{"p": "one\ntwo {{.Own.Output}}"}))
	_, err := render(set, "p", data{Own: &struct{ Output any }{}})
	var m *MissingError
	if !errors.As(err, &m) || m.Where != "p:2:6" {
		t.Fatalf("err %v (where %q); want p:2:6", err, m.Where)
	}
}

func TestPrintfRefusesFormatsThatDoNotFit(t *testing.T) {
	set := Guard(parseSet(t, map[string]string{
		"bad":     `{{printf "%d" .Name}}`,
		"missing": `{{printf "%s and %s" .Name}}`,
		"ok":      `{{printf "%s has %d%%" .Name 3}}`,
		"data":    `{{printf "%s" .Name}}`,
	}))
	for _, name := range []string{"bad", "missing"} {
		_, err := render(set, name, data{Name: "x"})
		var f *FormatError
		if !errors.As(err, &f) {
			t.Fatalf("%s: err %v; want a FormatError", name, err)
		}
	}
	if out, err := render(set, "ok", data{Name: "x"}); err != nil || out != "x has 3%" {
		t.Fatalf("ok: %q %v", out, err)
	}
	// A mark that came with the data is the data's.
	if out, err := render(set, "data", data{Name: "%!d(string=x)"}); err != nil || out != "%!d(string=x)" {
		t.Fatalf("data: %q %v", out, err)
	}
}

func TestLeavesTheOriginalSetAlone(t *testing.T) {
	orig := parseSet(t, map[string]string{"p": "{{.Own.Output}}"})
	_ = Guard(orig)
	out, err := render(orig, "p", data{Own: &struct{ Output any }{}})
	if err != nil || out != "<no value>" {
		t.Fatalf("original set changed: %q %v", out, err)
	}
}
