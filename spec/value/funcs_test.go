package value

import (
	"strings"
	"testing"
	"text/template"
)

func TestTemplateFuncs(t *testing.T) {
	data := struct{ PromptBase }{PromptBase: PromptBase{
		Agent:  AgentView{ID: "a", Name: "Alice"},
		Agents: []AgentView{{ID: "a", Name: "Alice"}, {ID: "b", Name: "Bob"}},
		Round:  2,
		History: []*Message{
			{From: "a", Record: "answer", Round: 1, Content: "A1"},
			{From: "b", Record: "answer", Round: 1, Content: "B1", To: "a"},
			{From: "b", Record: "critique", Round: 1, Content: "B says no"},
			{From: "a", Record: "answer", Round: 2, Content: "A2"},
		},
		Item: nil,
	}}
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

// TestFilter: filter keeps the accepted messages in order, returns nil for
// none, and a result that shares the input (kept messages side by side) is
// capped so that appending to it never overwrites the input.
func TestFilter(t *testing.T) {
	ms := []*Message{
		{ID: "m1", Round: 1}, {ID: "m2", Round: 1}, {ID: "m3", Round: 2},
		{ID: "m4", Round: 2}, {ID: "m5", Round: 1},
	}
	ids := func(ms []*Message) string {
		var out []string
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		name   string
		keep   func(*Message) bool
		want   string
		shares bool // the result is a part of ms
	}{
		{name: "none", keep: func(m *Message) bool { return m.Round == 3 }, want: ""},
		{name: "side by side", keep: func(m *Message) bool { return m.Round == 2 }, want: "m3,m4", shares: true},
		{name: "all", keep: func(*Message) bool { return true }, want: "m1,m2,m3,m4,m5", shares: true},
		{name: "apart", keep: func(m *Message) bool { return m.Round == 1 }, want: "m1,m2,m5"},
		{name: "last one", keep: func(m *Message) bool { return m.ID == "m5" }, want: "m5", shares: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := filter(ms, tt.keep)
			if ids(got) != tt.want {
				t.Fatalf("filter kept %q, want %q", ids(got), tt.want)
			}
			if tt.want == "" {
				if got != nil {
					t.Fatalf("filter kept nothing but returned %#v, want nil", got)
				}
				return
			}
			if shares := &got[0] == &ms[indexOf(ms, got[0].ID)]; shares != tt.shares {
				t.Errorf("result shares the input: %v, want %v", shares, tt.shares)
			}
			if cap(got) != len(got) {
				t.Errorf("result has cap %d > len %d: appending to it could overwrite messages", cap(got), len(got))
			}
			before := ids(ms)
			_ = append(got, &Message{ID: "new"})
			if ids(ms) != before {
				t.Errorf("appending to the result changed the input: %s", ids(ms))
			}
		})
	}
}

func indexOf(ms []*Message, id string) int {
	for i, m := range ms {
		if m.ID == id {
			return i
		}
	}
	return -1
}

func TestFromJSON(t *testing.T) {
	v := fromJSON(`{"outputs": {"solution": "x"}, "n": 2}`)
	m, ok := v.(map[string]any)
	if !ok || m["n"] != 2.0 || m["outputs"].(map[string]any)["solution"] != "x" {
		t.Errorf("fromJSON = %#v", v)
	}
	if v := fromJSON("not json {"); v != nil {
		t.Errorf("fromJSON of text = %#v, want nil", v)
	}
}
