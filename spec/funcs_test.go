package spec

import (
	"strings"
	"testing"
	"text/template"
)

func TestTemplateFuncs(t *testing.T) {
	data := PromptData{
		Agent:  AgentView{ID: "a", Name: "Alice"},
		Agents: []AgentView{{ID: "a", Name: "Alice"}, {ID: "b", Name: "Bob"}},
		Round:  2,
		History: []Message{
			{From: "a", Record: "answer", Round: 1, Content: "A1"},
			{From: "b", Record: "answer", Round: 1, Content: "B1", To: "a"},
			{From: "b", Record: "critique", Round: 1, Content: "B says no"},
			{From: "a", Record: "answer", Round: 2, Content: "A2"},
		},
		Item: nil,
	}
	tests := []struct{ src, want string }{
		{`{{upper "ab"}} {{lower "AB"}} [{{trim "  x "}}]`, "AB ab [x]"},
		{`{{join ", " (split "," "x,y,z")}}`, "x, y, z"},
		{`{{contains "ell" "hello"}} {{hasPrefix "he" "hello"}} {{replace "l" "L" "hello"}}`, "true true heLLo"},
		{`{{indent 2 "a\n\nb"}}`, "  a\n\n  b"},
		{`{{truncate 3 "héllo"}}|{{truncate 10 "short"}}|{{truncate -1 "all"}}`, "hél...|short|all"},
		{`{{toJSON .Agent.Persona}}`, "{}"},
		{`{{default "none" .Item}} {{default "none" ""}} {{default 5 0}} {{default "x" "set"}}`, "none none 5 set"},
		{`{{add 2 3}} {{sub 2 3}}`, "5 -1"},
		{`{{range byRecord "answer" .History}}{{.Content}} {{end}}`, "A1 B1 A2 "},
		{`{{range byFrom "b" .History}}{{.Content}} {{end}}`, "B1 B says no "},
		{`{{range notFrom .Agent.ID .History}}{{.Content}} {{end}}`, "B1 B says no "},
		{`{{range byTo "a" .History}}{{.Content}}{{end}}`, "B1"},
		{`{{range inRound 2 .History}}{{.Content}}{{end}}`, "A2"},
		{`{{range latest (byRecord "answer" .History)}}{{.From}}={{.Content}} {{end}}`, "a=A2 b=B1 "},
		{`{{(last .History).Content}}|{{(last .Inbox).Content}}`, "A2|"},
		{`{{count .History}} {{count (byRecord "nothing" .History)}}`, "4 0"},
		{`{{agentName .Agents "b"}} {{agentName .Agents "zed"}}`, "Bob zed"},
		{`{{range .History | byRecord "answer" | inRound 1}}{{.Content}}{{end}}`, "A1B1"},
	}
	for _, tc := range tests {
		tmpl, err := template.New("t").Funcs(TemplateFuncs()).Parse(tc.src)
		if err != nil {
			t.Errorf("%s: %v", tc.src, err)
			continue
		}
		var b strings.Builder
		if err := tmpl.Execute(&b, data); err != nil {
			t.Errorf("%s: %v", tc.src, err)
			continue
		}
		if b.String() != tc.want {
			t.Errorf("%s = %q, want %q", tc.src, b.String(), tc.want)
		}
	}
}
