// Command gendocs writes the generated parts of the manual: the table of
// each node kind's keys in docs/node-kinds.md, made from the kind's schema
// fragment (nodes/KIND/schema.json, and nodes/chat/schema.json for the chat
// keys), so that a key's type, default and meaning are written once, in the
// schema editors also read. A table sits between a marker naming its schema
// and an end marker; the text around it is the page's own. Run it with
// `go generate ./docs`; a test fails when the page is stale.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/nodes"
)

const page = "docs/node-kinds.md"

func main() {
	root := flag.String("root", "..", "the repository's root")
	flag.Parse()
	path := filepath.Join(*root, page)
	old, err := os.ReadFile(path)
	if err == nil {
		var text string
		text, err = render(*root, string(old))
		if err == nil && text != string(old) {
			err = os.WriteFile(path, []byte(text), 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

const endMarker = "<!-- end of generated table -->"

var startMarker = regexp.MustCompile(`(?m)^<!-- generated from (\S+) by go generate ./docs: edit the schema, not this table -->\n`)

// render is the page with every generated table made afresh from its schema.
// Every registered kind must have a table.
func render(root, text string) (string, error) {
	var out strings.Builder
	seen := map[string]bool{}
	rest := text
	for {
		loc := startMarker.FindStringSubmatchIndex(rest)
		if loc == nil {
			out.WriteString(rest)
			break
		}
		source := rest[loc[2]:loc[3]]
		out.WriteString(rest[:loc[1]])
		end := strings.Index(rest[loc[1]:], endMarker)
		if end < 0 {
			return "", fmt.Errorf("%s: the table from %s has no %q", page, source, endMarker)
		}
		table, err := kindTable(root, source)
		if err != nil {
			return "", err
		}
		out.WriteString(table)
		seen[source] = true
		rest = rest[loc[1]+end:]
	}
	for _, k := range nodes.Kinds() {
		if source := "nodes/" + k.Name() + "/schema.json"; !seen[source] {
			return "", fmt.Errorf("%s has no table of the kind %s: add a line %q where it goes", page, k.Name(), "<!-- generated from "+source+" by go generate ./docs: edit the schema, not this table -->\n"+endMarker)
		}
	}
	return out.String(), nil
}

// kindTable is the table of one schema file: a kind's fragment, checked
// against the fragment the kind registers, or the chat keys.
func kindTable(root, source string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, source))
	if err != nil {
		return "", err
	}
	v, err := decodeOrdered(data)
	if err != nil {
		return "", fmt.Errorf("%s: %w", source, err)
	}
	frag, ok := v.(*object)
	if !ok {
		return "", fmt.Errorf("%s is not an object", source)
	}
	props, required := frag, []string(nil)
	if p, ok := frag.get("properties").(*object); ok {
		props, required = p, strings_(frag.get("required"))
	}
	chatKeys := false
	if source != "nodes/chat/schema.json" {
		chatKeys, err = checkRegistered(root, source, props)
		if err != nil {
			return "", err
		}
	}
	var b strings.Builder
	b.WriteString("| key | type | default | meaning |\n| --- | --- | --- | --- |\n")
	rows(&b, props, required, "", "")
	if chatKeys {
		b.WriteString("| `thread`, `history`, `examples` | | | chat turns, see [Chat turns](#chat-turns-thread-history-examples) |\n")
	}
	return b.String(), nil
}

// checkRegistered makes sure the file is the fragment the kind registers:
// the same keys, plus the chat keys when the kind takes them.
func checkRegistered(root, source string, props *object) (chat bool, err error) {
	name := strings.TrimSuffix(strings.TrimPrefix(source, "nodes/"), "/schema.json")
	for _, k := range nodes.Kinds() {
		if k.Name() != name {
			continue
		}
		var reg struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(k.Schema(), &reg); err != nil {
			return false, err
		}
		var want []string
		for key := range reg.Properties {
			want = append(want, key)
		}
		got := slices.Clone(props.keys)
		if _, ok := reg.Properties["thread"]; ok {
			chat = true
			got = append(got, "thread", "history", "examples")
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return false, fmt.Errorf("%s has the keys %v, but the kind %s registers %v", source, got, name, want)
		}
		return chat, nil
	}
	return false, fmt.Errorf("%s: no registered kind %s", source, name)
}

// rows writes one row per key, and the keys of an object below it as
// PARENT.KEY instead of the object itself.
func rows(b *strings.Builder, props *object, required []string, prefix, parent string) {
	for _, key := range props.keys {
		p, _ := props.get(key).(*object)
		if p == nil {
			continue
		}
		if sub, ok := p.get("properties").(*object); ok && p.get("type") == "object" {
			// Children of an optional object are required only with it.
			childParent := parent
			if !slices.Contains(required, key) || parent != "" {
				childParent = prefix + key
			}
			rows(b, sub, strings_(p.get("required")), prefix+key+".", childParent)
			continue
		}
		def := ""
		switch {
		case p.get("default") != nil:
			def = literal(p.get("default"))
		case slices.Contains(required, key) && parent == "":
			def = "required"
		case slices.Contains(required, key):
			def = "required with `" + parent + "`"
		}
		fmt.Fprintf(b, "| `%s%s` | %s | %s | %s |\n", prefix, key, cell(typeOf(p)), cell(def), cell(escape(str(p.get("description")))))
	}
}

// typeOf says in words what a property takes.
func typeOf(p *object) string {
	if e, ok := p.get("enum").([]any); ok {
		var names []string
		for _, v := range e {
			names = append(names, literal(v))
		}
		return strings.Join(names, ", ")
	}
	if c, ok := p.get("anyOf").([]any); ok {
		var alts []string
		for _, a := range c {
			if o, ok := a.(*object); ok {
				alts = append(alts, typeOf(o))
			}
		}
		return orList(alts)
	}
	var types []string
	switch t := p.get("type").(type) {
	case string:
		types = []string{t}
	case []any:
		for _, v := range t {
			types = append(types, str(v))
		}
	}
	var words []string
	for _, t := range types {
		words = append(words, typeWord(t, p))
	}
	return orList(words)
}

func typeWord(t string, p *object) string {
	switch t {
	case "string":
		if str(p.get("pattern")) == "^[A-Za-z_][A-Za-z0-9_-]*$" {
			return "id"
		}
		return "string"
	case "integer", "number":
		lo, hasLo := p.get("minimum").(json.Number)
		hi, hasHi := p.get("maximum").(json.Number)
		if hasHi && hi.String() == "2147483647" {
			hasHi = false
		}
		switch {
		case hasLo && hasHi:
			return t + " " + lo.String() + "-" + hi.String()
		case hasLo:
			return t + " ≥ " + lo.String()
		}
		return t
	case "object":
		if sub, ok := p.get("properties").(*object); ok {
			return "`{" + strings.Join(sub.keys, ", ") + "}`"
		}
		if _, ok := p.get("additionalProperties").(*object); ok {
			return "mapping of name to " + typeOf(p.get("additionalProperties").(*object))
		}
		return "mapping"
	case "array":
		items, _ := p.get("items").(*object)
		if items == nil {
			return "list"
		}
		it := typeOf(items)
		if items.get("type") == "string" && items.get("enum") == nil {
			it = "strings"
		}
		if items.get("type") == "string" && items.get("pattern") == "^[A-Za-z_][A-Za-z0-9_-]*$" {
			it = "ids"
		}
		return "list of " + it
	}
	return t
}

func orList(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// literal is a JSON value as the manual writes it: text and booleans in
// code, numbers as they are.
func literal(v any) string {
	switch v := v.(type) {
	case string:
		return "`" + v + "`"
	case bool:
		return "`" + strconv.FormatBool(v) + "`"
	case json.Number:
		return v.String()
	}
	data, _ := json.Marshal(v)
	return "`" + string(data) + "`"
}

// escape keeps text that looks like HTML (tags as in <Verdict>) as text;
// inside code spans it is text already.
func escape(s string) string {
	parts := strings.Split(s, "`")
	for i := 0; i < len(parts); i += 2 {
		parts[i] = strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(parts[i])
	}
	return strings.Join(parts, "`")
}

// cell keeps a table cell on its line.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func strings_(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, x := range l {
			out = append(out, str(x))
		}
	}
	return out
}

// object is a JSON object that keeps its keys in the order written, so the
// table lists a kind's keys in the order of its schema file.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) get(k string) any { return o.vals[k] }

func decodeOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("text after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				o.keys = append(o.keys, k)
				o.vals[k] = v
			}
			_, err := dec.Token()
			return o, err
		case '[':
			var l []any
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			_, err := dec.Token()
			return l, err
		}
	}
	return tok, nil
}
