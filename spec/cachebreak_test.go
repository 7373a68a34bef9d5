package spec

import (
	"strings"
	"testing"

	"github.com/debate-runner/runner/spec/value"
)

// TestCacheBreakUses: {{cacheBreak}} marks one split point per message, so
// the checker refuses it inside a range, twice on one path through a
// template (the templates it calls included), and anywhere but alone in an
// action; one use per branch of an if is one use.
func TestCacheBreakUses(t *testing.T) {
	tests := []struct {
		name  string
		main  string
		other map[string]string
		want  string // "" for none, else the one problem
	}{
		{"alone", `{{.Inputs.question}}{{cacheBreak}} then {{.Agent.Name}}`, nil, ""},
		{"trimmed", "{{.Inputs.question}}\n{{- cacheBreak -}}\nrest", nil, ""},
		{"one per branch", `{{if .Round}}a{{cacheBreak}}{{else}}b{{cacheBreak}}{{end}}c`, nil, ""},
		{"range else runs once", `{{range .History}}x{{else}}{{cacheBreak}}{{end}}`, nil, ""},
		{"in a called template", `{{template "head" .}}rest`, map[string]string{"head": `problem{{cacheBreak}}`}, ""},
		{"twice", `a{{cacheBreak}}b{{cacheBreak}}c`, nil, `main:1:18: a second {{cacheBreak}} in one message`},
		{"after a branch that marks", `{{if .Round}}{{cacheBreak}}{{end}}x{{cacheBreak}}`, nil, `main:1:37: a second {{cacheBreak}}`},
		{"twice through a call", "{{template \"head\" .}}\n{{cacheBreak}}", map[string]string{"head": `problem{{cacheBreak}}`}, `main:2:2: a second {{cacheBreak}}`},
		{"called twice", `{{template "head" .}}{{template "head" .}}`, map[string]string{"head": `problem{{cacheBreak}}`}, `a second {{cacheBreak}}`},
		{"in a range", `{{range .History}}{{.Content}}{{cacheBreak}}{{end}}`, nil, `main:1:32: {{cacheBreak}} inside a range would split a message once per item`},
		{"in a range through a call", `{{range .History}}{{template "one" .}}{{end}}`, map[string]string{"one": `{{.Content}}{{cacheBreak}}`}, `one:1:14: {{cacheBreak}} inside a range`},
		{"piped", `{{cacheBreak | printf "%s"}}`, nil, `main:1:2: {{cacheBreak}} must stand alone as an action`},
		{"argument", `{{printf "%s" cacheBreak}}`, nil, `main:1:14: {{cacheBreak}} must stand alone`},
		{"kept", `{{$b := cacheBreak}}{{$b}}`, nil, `main:1:8: {{cacheBreak}} must stand alone`},
		{"condition", `{{if cacheBreak}}x{{end}}`, nil, `main:1:5: {{cacheBreak}} must stand alone`},
		{"nested pipeline", `{{printf "%s" (cacheBreak)}}`, nil, `{{cacheBreak}} must stand alone`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sources := map[string]string{"main": tc.main}
			for k, v := range tc.other {
				sources[k] = v
			}
			msgs := checkTemplates(t, sources)
			switch {
			case tc.want == "" && len(msgs) > 0:
				t.Errorf("unexpected problems: %q", msgs)
			case tc.want != "" && (len(msgs) != 1 || !strings.Contains(msgs[0], tc.want)):
				t.Errorf("problems %q, want one containing %q", msgs, tc.want)
			}
		})
	}
}

// TestCacheBreakMarks: the helper's mark becomes CacheBreak once sealed and
// leaves the text as it was once split; a CacheBreak the data held (an
// input, a reply) is defused, so only the helper splits a message.
func TestCacheBreakMarks(t *testing.T) {
	mark := value.TemplateFuncs()[value.CacheBreakFunc].(func() string)()
	if mark == value.CacheBreak {
		t.Fatal("the helper prints the sealed mark itself: data could forge it")
	}
	sealed := value.SealCacheBreaks("stable" + mark + " rest " + value.CacheBreak + " end")
	text, at := value.SplitCacheBreak(sealed)
	if at != len("stable") || !strings.HasPrefix(text, "stable rest ") || strings.Contains(text, value.CacheBreak) {
		t.Errorf("split %q at %d", text, at)
	}
	if text, at := value.SplitCacheBreak(value.SealCacheBreaks("no mark " + value.CacheBreak)); at != -1 || strings.Contains(text, value.CacheBreak) {
		t.Errorf("forged mark: %q split at %d", text, at)
	}
	if s := "plain text"; value.SealCacheBreaks(s) != s {
		t.Error("sealing changed a text without marks")
	}
	if text, at := value.SplitCacheBreak("a" + value.CacheBreak + "b" + value.CacheBreak + "c"); text != "abc" || at != 1 {
		t.Errorf("two marks: %q at %d, want \"abc\" at 1", text, at)
	}
}
