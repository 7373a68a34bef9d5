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
	funcs := template.FuncMap{
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
		"inLoop":    InLoop,
		"notFrom":   NotFrom,
		"latest":    LatestPerAuthor,
		"last":      LastMessage,
		"count":     Count,
		"agentName": func(agents []AgentView, id string) string { return agentName(agents, id) },
	}
	funcs[CacheBreakFunc] = cacheBreak
	return funcs
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

// List returns the messages a template gave a message helper: .History,
// .Inbox and what helpers return are lists of pointers; a node's .Messages
// is a list of messages, which the helpers read in place. ok is false for
// anything else.
func List(v any) (ms []*Message, ok bool) {
	switch x := v.(type) {
	case []*Message:
		return x, true
	case []Message:
		if len(x) == 0 {
			return nil, true
		}
		ms = make([]*Message, len(x))
		for i := range x {
			ms[i] = &x[i]
		}
		return ms, true
	case nil:
		return nil, true
	}
	return nil, false
}

// list is List for a helper, with its error.
func list(helper string, v any) ([]*Message, error) {
	ms, ok := List(v)
	if !ok {
		return nil, fmt.Errorf("%s: expected a list of messages (.History, .Inbox, a node's .Messages), got %T", helper, v)
	}
	return ms, nil
}

// filter returns the messages keep accepts, nil if none. Prompts filter the
// whole history on every call, so it avoids copying: when the kept messages
// are next to each other, as a round's or a node's usually are, it returns
// them as a part of ms (capped, so appending to it copies); otherwise it
// copies them into a slice of the right size.
func filter(ms []*Message, keep func(*Message) bool) []*Message {
	n, first, last := 0, -1, -1
	for i, m := range ms {
		if keep(m) {
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
	out := make([]*Message, 0, n)
	for i := first; i <= last; i++ {
		if keep(ms[i]) {
			out = append(out, ms[i])
		}
	}
	return out
}

// filtering is a filtering helper over any list List accepts.
func filtering(helper string, keep func(*Message) bool) func(any) ([]*Message, error) {
	return func(v any) ([]*Message, error) {
		ms, err := list(helper, v)
		if err != nil {
			return nil, err
		}
		return filter(ms, keep), nil
	}
}

// MessageList is what the message helpers take: a list of messages, as
// .History, .Inbox and the helpers give them ([]*Message) or as a node's
// .Messages holds them ([]Message). A type of its own, rather than any, so
// that validate's template checker can refuse anything else where a list of
// messages is wanted.
type MessageList any

// ByRecord keeps the messages of a record (the byRecord helper).
func ByRecord(record string, ms MessageList) ([]*Message, error) {
	return filtering("byRecord", func(m *Message) bool { return m.Record == record })(ms)
}

// ByFrom keeps the messages an agent wrote.
func ByFrom(agent string, ms MessageList) ([]*Message, error) {
	return filtering("byFrom", func(m *Message) bool { return m.From == agent })(ms)
}

// ByAuthors keeps the messages of these agents (say .Agent.Neighbours).
func ByAuthors(agents []string, ms MessageList) ([]*Message, error) {
	return filtering("byAuthors", func(m *Message) bool { return slices.Contains(agents, m.From) })(ms)
}

// NotFrom keeps the messages of every author but one.
func NotFrom(agent string, ms MessageList) ([]*Message, error) {
	return filtering("notFrom", func(m *Message) bool { return m.From != agent })(ms)
}

// ByTo keeps the messages addressed to an agent.
func ByTo(agent string, ms MessageList) ([]*Message, error) {
	return filtering("byTo", func(m *Message) bool { return m.To == agent })(ms)
}

// InRound keeps the messages of a round.
func InRound(round int, ms MessageList) ([]*Message, error) {
	return filtering("inRound", func(m *Message) bool { return m.Round == round })(ms)
}

// InLoop keeps the messages recorded in iteration n of the enclosing loop
// (or item n of the foreach) named name, however deep it was.
func InLoop(name string, n int, ms MessageList) ([]*Message, error) {
	return filtering("inLoop", func(m *Message) bool { return m.Loops[name] == n })(ms)
}

// LatestPerAuthor keeps each author's last message, in order of first
// appearance (the latest helper).
func LatestPerAuthor(v MessageList) ([]*Message, error) {
	ms, err := list("latest", v)
	if err != nil {
		return nil, err
	}
	return latestPerAuthor(ms), nil
}

func latestPerAuthor(ms []*Message) []*Message {
	idx := map[string]int{}
	var out []*Message
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

// LatestOf is each author's latest message of a record, in order of the
// authors' first message of it: the latest(record) of expressions.
func LatestOf(ms []Message, record string) []Message {
	idx := map[string]int{}
	var out []Message
	for _, m := range ms {
		if m.Record != record {
			continue
		}
		if i, ok := idx[m.From]; ok {
			out[i] = m
			continue
		}
		idx[m.From] = len(out)
		out = append(out, m)
	}
	return out
}

// LastMessage is the last message of a list, the zero message for none (the
// last helper).
func LastMessage(v MessageList) (Message, error) {
	if x, ok := v.([]Message); ok {
		if len(x) == 0 {
			return Message{}, nil
		}
		return x[len(x)-1], nil
	}
	ms, err := list("last", v)
	if err != nil || len(ms) == 0 {
		return Message{}, err
	}
	return *ms[len(ms)-1], nil
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
func Count(v MessageList) (int, error) {
	if x, ok := v.([]Message); ok {
		return len(x), nil
	}
	ms, err := list("count", v)
	return len(ms), err
}
