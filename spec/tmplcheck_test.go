package spec

import (
	"reflect"
	"strings"
	"testing"
	"text/template"

	"github.com/debate-runner/runner/spec/value"
)

// checkTemplates parses the named sources into one set, the way the
// compiler does, and checks "main" against PromptData.
func checkTemplates(t *testing.T, sources map[string]string) []string {
	t.Helper()
	set := template.New("").Funcs(value.TemplateFuncs()).Option("missingkey=error")
	for name, src := range sources {
		if _, err := set.New(name).Parse(src); err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
	}
	c := &templateChecker{set: set, funcs: value.TemplateFuncs(), domains: map[string][]string{
		"inputs": {"question", "context"},
		"vars":   {"rounds"},
		"nodes":  {"answer", "evaluate"},
	}}
	msgs, _ := c.check("main", reflect.TypeOf(PromptData{}))
	return msgs
}

// Problems read NAME:LINE:COL as text/template's ErrorContext gives them,
// with columns counted from 0; the compiler adds one when it reports them.
func TestTemplateChecker(t *testing.T) {
	tests := []struct {
		name  string
		main  string
		other map[string]string // further templates in the set
		want  string            // "" for none, else the one problem reported
	}{
		// fields of the data and of its structs
		{"agent field", `{{.Agent.Name}} {{.Agent.Persona.Title}}`, nil, ""},
		{"agent typo", `{{.Agent.Nmae}}`, nil, `main:1:8: .Agent (AgentView) has no field "Nmae" (did you mean "Name"?)`},
		{"root typo", `{{.Rund}}`, nil, `main:1:2: the prompt data has no field "Rund" (did you mean "Round"?)`},
		{"deep typo", `{{.Agent.Persona.Titel}}`, nil, `has no field "Titel" (did you mean "Title"?)`},
		{"field of int", `{{.Round.Count}}`, nil, `main:1:8: cannot read field "Count": .Round is a whole number, not a struct`},
		{"any and extra", `{{.Item.whatever}} {{.Extra.anything.deeper}} {{.Loop.round}}`, nil, ""},
		{"second line", "line one\n  {{.Agent.Rol}}", nil, `main:2:10: .Agent (AgentView) has no field "Rol" (did you mean "Role"?)`},

		// keyed maps: inputs, vars, nodes
		{"input", `{{.Inputs.question}} {{.Vars.rounds}} {{.Nodes.answer.Output}}`, nil, ""},
		{"input typo", `{{.Inputs.qestion}}`, nil, `no input named "qestion" (did you mean "question"?)`},
		{"var typo", `{{.Vars.round}}`, nil, `no var named "round" (did you mean "rounds"?)`},
		{"node typo", `{{.Nodes.anwser.Text}}`, nil, `no node named "anwser" (did you mean "answer"?)`},
		{"node result typo", `{{.Nodes.answer.Outptu}}`, nil, `NodeResult has no field "Outptu" (did you mean "Output"?)`},
		{"index with a variable key is dynamic", `{{$k := "anything"}}{{index .Inputs $k}}`, nil, ""},
		{"index with a declared key", `{{index .Inputs "question"}}`, nil, ""},
		{"index with an undeclared key", `{{index .Inputs "qestion"}}`, nil, `index: no input named "qestion" (did you mean "question"?) (a missing key renders as <no value>)`},

		// range, with, variables and $
		{"range element", `{{range .History}}{{.From}}: {{.Content}}{{end}}`, nil, ""},
		{"range element typo", `{{range .History}}{{.Form}}{{end}}`, nil, `Message has no field "Form" (did you mean "From"?)`},
		{"range else keeps dot", `{{range .History}}{{.From}}{{else}}{{.Agent.Name}}{{end}}`, nil, ""},
		{"range vars", `{{range $i, $m := .History}}{{$i}} {{$m.Content}}{{end}}`, nil, ""},
		{"range var typo", `{{range $i, $m := .History}}{{$m.Contnt}}{{end}}`, nil, `Message has no field "Contnt" (did you mean "Content"?)`},
		{"range one var", `{{range $m := .Agents}}{{$m.Role}}{{end}}`, nil, ""},
		{"range map", `{{range $k, $v := .Nodes}}{{$k}} {{$v.Calls}}{{end}}`, nil, ""},
		{"range map typo", `{{range $k, $v := .Nodes}}{{$v.Call}}{{end}}`, nil, `NodeResult has no field "Call" (did you mean "Calls"?)`},
		{"dollar in range", `{{range .History}}{{$.Agent.Name}}{{end}}`, nil, ""},
		{"dollar typo", `{{range .History}}{{$.Agent.Nam}}{{end}}`, nil, `.Agent (AgentView) has no field "Nam" (did you mean "Name"?)`},
		{"with", `{{with .Target}}{{.From}}{{end}}`, nil, ""},
		{"with typo", `{{with .Target}}{{.Agent}}{{end}}`, nil, `main:1:18: .Target (Message) has no field "Agent"`},
		{"with else keeps dot", `{{with .Summary}}{{.}}{{else}}{{.Agent.Name}}{{end}}`, nil, ""},
		{"with var", `{{with $p := .Agent.Persona}}{{$p.Title}}{{end}}`, nil, ""},
		{"with var typo", `{{with $p := .Agent.Persona}}{{$p.Titel}}{{end}}`, nil, `has no field "Titel" (did you mean "Title"?)`},
		{"if keeps dot", `{{if .Round}}{{.Agent.Name}}{{end}}`, nil, ""},
		{"variable", `{{$a := .Agent}}{{$a.Role}}`, nil, ""},
		{"variable typo", `{{$a := .Agent}}{{$a.Rol}}`, nil, `has no field "Rol" (did you mean "Role"?)`},
		{"variable scope ends", `{{range .History}}{{$m := .}}{{end}}{{$m := .Agent}}{{$m.Name}}`, nil, ""},

		// funcs returning typed values
		{"typed slice func", `{{range byRecord "answer" .History}}{{.Content}}{{end}}`, nil, ""},
		{"typed slice func typo", `{{range byRecord "answer" .History}}{{.Body}}{{end}}`, nil, `Message has no field "Body"`},
		{"piped funcs", `{{range .History | byRecord "answer" | latest}}{{.From}}{{end}}`, nil, ""},
		{"nested funcs", `{{range latest (notFrom .Agent.ID .History)}}{{agentName $.Agents .From}}{{end}}`, nil, ""},
		{"typed struct func", `{{(last .History).Content}}`, nil, ""},
		{"typed struct func typo", `{{(last .History).Text}}`, nil, `Message has no field "Text"`},
		{"with typed func", `{{with last .Inbox}}{{.Verdict}}{{end}}`, nil, ""},
		{"string func", `{{(upper .Agent.Name).Foo}}`, nil, `cannot read field "Foo": the value is text, not a struct`},
		{"builtin len", `{{len .History}} {{printf "%d" .Round}}`, nil, ""},
		{"untyped func result", `{{(default "x" .Item).anything}}`, nil, ""},

		// {{template}} calls
		{"template call", `{{template "rules" .}}`, map[string]string{"rules": `{{.Agent.Name}}`}, ""},
		{"template call typo inside", `{{template "rules" .}}`, map[string]string{"rules": `{{.Agent.Nme}}`}, `rules:1:8: .Agent (AgentView) has no field "Nme" (did you mean "Name"?)`},
		{"template call with other dot", `{{template "who" .Agent}}`, map[string]string{"who": `{{.Name}} {{.Role}}`}, ""},
		{"template call other dot typo", `{{template "who" .Agent}}`, map[string]string{"who": `{{.Round}}`}, `who:1:2: .Agent (AgentView) has no field "Round"`},
		{"template call in range", `{{range .History}}{{template "msg" .}}{{end}}`, map[string]string{"msg": `{{.From}}: {{.Content}}`}, ""},
		{"unknown template", `{{template "rulez" .}}`, map[string]string{"rules": `x`}, `main:1:11: template "rulez" is not defined (did you mean "rules"?)`},
		// The data does not change from call to call, so a template that
		// calls itself renders forever (or until the stack overflows).
		{"recursive template", `{{template "loop" .}}`, map[string]string{"loop": `{{if .Round}}{{template "loop" .}}{{end}}`}, `loop:1:24: templates call each other in a cycle (loop -> loop): rendering would never end`},
		{"define block", `{{define "part"}}{{.Agent.Name}}{{end}}{{template "part" .}}`, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sources := map[string]string{"main": tc.main}
			for k, v := range tc.other {
				sources[k] = v
			}
			errs := checkTemplates(t, sources)
			if tc.want == "" {
				if len(errs) > 0 {
					t.Errorf("unexpected problems: %q", errs)
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("got %d problems %q, want one containing %q", len(errs), errs, tc.want)
			}
			if !strings.Contains(errs[0], tc.want) {
				t.Errorf("got %q, want it to contain %q", errs[0], tc.want)
			}
		})
	}
}

func TestTemplateErrorLine(t *testing.T) {
	tests := []struct {
		in        string
		name      string
		line, col int
		rest      string
	}{
		{"template: t/ask:3: unexpected EOF", "t/ask", 3, 0, "unexpected EOF"},
		{"template: t/ask:2:14: no field", "t/ask", 2, 14, "no field"},
		{`template: lib/x:1: function "nope" not defined`, "lib/x", 1, 0, `function "nope" not defined`},
		{"template: broken", "", 0, 0, "broken"},
		{"template: a:b: c", "", 0, 0, "a:b: c"},
	}
	for _, tc := range tests {
		name, line, col, rest := templateErrorLine(tc.in)
		if name != tc.name || line != tc.line || col != tc.col || rest != tc.rest {
			t.Errorf("templateErrorLine(%q) = %q, %d, %d, %q; want %q, %d, %d, %q", tc.in, name, line, col, rest, tc.name, tc.line, tc.col, tc.rest)
		}
	}
}
