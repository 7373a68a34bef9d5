package value

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/template"
)

// TemplateFuncs are the helpers every prompt template may call.
func TemplateFuncs() template.FuncMap {
	return template.FuncMap{
		"upper":     strings.ToUpper,
		"lower":     strings.ToLower,
		"trim":      strings.TrimSpace,
		"join":      func(sep string, items []string) string { return strings.Join(items, sep) },
		"split":     func(sep, s string) []string { return strings.Split(s, sep) },
		"contains":  func(sub, s string) bool { return strings.Contains(s, sub) },
		"hasPrefix": func(prefix, s string) bool { return strings.HasPrefix(s, prefix) },
		"replace":   func(old, new, s string) string { return strings.ReplaceAll(s, old, new) },
		"indent":    indent,
		"truncate":  truncate,
		"toJSON":    toJSON,
		"fromJSON":  fromJSON,
		"default":   defaultValue,
		"add":       func(a, b int) int { return a + b },
		"sub":       func(a, b int) int { return a - b },
		"byRecord":  ByRecord,
		"byFrom":    ByFrom,
		"byAuthors": ByAuthors,
		"byTo":      ByTo,
		"inRound":   InRound,
		"notFrom":   NotFrom,
		"latest":    LatestPerAuthor,
		"last":      LastMessage,
		"count":     Count,
		"agentName": func(agents []AgentView, id string) string { return agentName(agents, id) },
	}
}

func indent(n int, s string) string {
	pad := strings.Repeat(" ", n)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pad + l
		}
	}
	return strings.Join(lines, "\n")
}

func truncate(n int, s string) string {
	r := []rune(s)
	if n < 0 || len(r) <= n {
		return s
	}
	return string(r[:n]) + "..."
}

func toJSON(v any) (string, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", fmt.Errorf("toJSON: %w", err)
	}
	return string(b), nil
}

func defaultValue(def, v any) any {
	switch x := v.(type) {
	case nil:
		return def
	case string:
		if x == "" {
			return def
		}
	case int:
		if x == 0 {
			return def
		}
	}
	return v
}

// filter returns the messages keep accepts, nil if none. Prompts filter the
// whole history on every call, so it avoids copying: when the kept messages
// are next to each other, as a round's or a node's usually are, it returns
// them as a part of ms (capped, so appending to it copies); otherwise it
// copies them into a slice of the right size.
func filter(ms []Message, keep func(*Message) bool) []Message {
	n, first, last := 0, -1, -1
	for i := range ms {
		if keep(&ms[i]) {
			if first < 0 {
				first = i
			}
			last = i
			n++
		}
	}
	if n == 0 {
		return nil
	}
	if last-first+1 == n {
		return ms[first : last+1 : last+1]
	}
	out := make([]Message, 0, n)
	for i := first; i <= last; i++ {
		if keep(&ms[i]) {
			out = append(out, ms[i])
		}
	}
	return out
}

func ByRecord(record string, ms []Message) []Message {
	return filter(ms, func(m *Message) bool { return m.Record == record })
}

func ByFrom(agent string, ms []Message) []Message {
	return filter(ms, func(m *Message) bool { return m.From == agent })
}

// ByAuthors keeps the messages of these agents (say .Agent.Neighbours).
func ByAuthors(agents []string, ms []Message) []Message {
	return filter(ms, func(m *Message) bool { return slices.Contains(agents, m.From) })
}

func NotFrom(agent string, ms []Message) []Message {
	return filter(ms, func(m *Message) bool { return m.From != agent })
}

func ByTo(agent string, ms []Message) []Message {
	return filter(ms, func(m *Message) bool { return m.To == agent })
}

func InRound(round int, ms []Message) []Message {
	return filter(ms, func(m *Message) bool { return m.Round == round })
}

// latestPerAuthor keeps each author's last message, in order of first appearance.
func LatestPerAuthor(ms []Message) []Message {
	idx := map[string]int{}
	var out []Message
	for _, m := range ms {
		if i, ok := idx[m.From]; ok {
			out[i] = m
			continue
		}
		idx[m.From] = len(out)
		out = append(out, m)
	}
	return out
}

func LastMessage(ms []Message) Message {
	if len(ms) == 0 {
		return Message{}
	}
	return ms[len(ms)-1]
}

func agentName(agents []AgentView, id string) string {
	for _, a := range agents {
		if a.ID == id {
			return a.Name
		}
	}
	return id
}

// fromJSON decodes JSON text, or gives nil when the text is not JSON, so a
// template can fall back to showing the text as it is.
func fromJSON(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil
	}
	return v
}

// Count is the number of messages (the count helper).
func Count(ms []Message) int { return len(ms) }
