package syntax

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// MaxSpecBytes bounds the size of a spec file. Real specs are a few kilobytes;
// the bound keeps a wrong path (a log, a dataset) from being parsed at length.
const MaxSpecBytes = 2 << 20

// maxValueNodes bounds how many YAML values one document may expand to once
// aliases are followed, which defuses "billion laughs" anchor bombs.
const maxValueNodes = 200_000

// maxValueDepth bounds how deeply values nest (a spec needs a handful of
// levels; an inline schema a few more).
const maxValueDepth = 200

// ReadSpecFile reads a spec file and rejects inputs that cannot be a spec
// before any parsing: directories, oversized files, binary data.
func ReadSpecFile(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no such file%s", DidYouMeanPath(path, false))
		}
		return nil, err
	}
	if info.IsDir() {
		return nil, fmt.Errorf("is a directory, not a spec file")
	}
	if !info.Mode().IsRegular() && info.Mode()&os.ModeNamedPipe == 0 {
		return nil, fmt.Errorf("is not a regular file")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSpecBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxSpecBytes {
		return nil, fmt.Errorf("file is larger than %d MiB; a spec is a small YAML file", MaxSpecBytes>>20)
	}
	return data, nil
}

// CheckText rejects data that is not UTF-8 text.
func CheckText(data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("spec is empty")
	}
	if i := bytes.IndexByte(data, 0); i >= 0 && !utf8.Valid(data) {
		// Text with a stray NUL is reported at the NUL, as YAML text
		// with a character YAML does not allow.
		return fmt.Errorf("spec is binary data (NUL byte at offset %d), not YAML text", i)
	}
	if !utf8.Valid(data) {
		return fmt.Errorf("spec is not valid UTF-8 text")
	}
	return nil
}

// DisallowedChar returns the offset of the first character YAML does not
// allow in a document, and the character, or -1. These are yaml.v3's
// rules: tab, line breaks and printable characters only.
func DisallowedChar(data []byte) (int, rune) {
	for i, c := range string(data) {
		switch {
		case c == 0x09 || c == 0x0A || c == 0x0D:
		case c >= 0x20 && c <= 0x7E:
		case c == 0x85:
		case c >= 0xA0 && c <= 0xD7FF:
		case c >= 0xE000 && c <= 0xFFFD:
		case c >= 0x10000 && c <= 0x10FFFF:
		default:
			return i, c
		}
	}
	return -1, 0
}

// OffsetPos is the line and column (in characters, as yaml.v3 counts
// them) of a byte offset of data.
func OffsetPos(data []byte, off int) Pos {
	ends := lineEnds(data)
	line, start := 1, 0
	for _, e := range ends {
		if e > off {
			break
		}
		line, start = line+1, e
	}
	return Pos{Line: line, Col: utf8.RuneCount(data[start:off]) + 1}
}

// ParseYAML parses one YAML document into a node tree that keeps positions.
func ParseYAML(r *Reporter, data []byte) *yaml.Node {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			r.Errorf(Pos{1, 1}, "spec is empty")
			return nil
		}
		pos, msg := explainYAMLError(data, r.Src.Lines, err)
		r.Errorf(pos, "YAML syntax: %s", msg)
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		r.Errorf(NodePos(&extra), "a spec file holds one YAML document; found a second one")
	} else if !errors.Is(err, io.EOF) {
		pos, msg := explainYAMLError(data, r.Src.Lines, err)
		r.Errorf(pos, "YAML syntax: %s", msg)
		return nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		r.Errorf(Pos{1, 1}, "spec is empty")
		return nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" && root.Value == "" {
		r.Errorf(Pos{1, 1}, "spec is empty") // "---" and nothing after it
		return nil
	}
	if root.Kind != yaml.MappingNode {
		r.Errorf(NodePos(root), "a spec must be a mapping of keys (version, name, agents, nodes, flow, ...), found %s", KindName(root))
		return nil
	}
	return root
}

// YAMLErrorPos pulls "line N" out of a yaml.v3 error message, which carries no
// structured position.
func YAMLErrorPos(err error) (Pos, string) {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	if strings.HasPrefix(msg, "line ") {
		rest := msg[len("line "):]
		if i := strings.Index(rest, ":"); i > 0 {
			if n, convErr := strconv.Atoi(rest[:i]); convErr == nil {
				return Pos{Line: n, Col: 1}, strings.TrimSpace(rest[i+1:])
			}
		}
	}
	return Pos{Line: 1, Col: 1}, msg
}

// explainYAMLError turns the parser's terse messages into advice and moves
// the position from the start of the line to the character at fault where
// that can be found.
func explainYAMLError(data []byte, lines []string, err error) (Pos, string) {
	pos, msg := explainYAMLErrorBytes(data, lines, err)
	// The column was found as a byte offset; positions count characters,
	// as yaml.v3's do.
	if pos.Line >= 1 && pos.Line <= len(lines) && pos.Col > 1 {
		if line := lines[pos.Line-1]; pos.Col-1 <= len(line) {
			pos.Col = utf8.RuneCountInString(line[:pos.Col-1]) + 1
		}
	}
	return pos, msg
}

func explainYAMLErrorBytes(data []byte, lines []string, err error) (Pos, string) {
	pos, msg := YAMLErrorPos(err)
	if strings.HasPrefix(msg, "did not find expected") && strings.Contains(err.Error(), "line ") {
		// yaml.v3 numbers the lines of parser errors (unlike scanner
		// errors) from 0; it names the line where the unfinished list or
		// mapping starts.
		pos.Line++
	}
	if contextOnly(msg) {
		// yaml.v3 names where the construct in error starts (a block
		// scalar, a quoted string, a mapping), or no line at all: the
		// shortest start of the file that fails the same way ends on
		// the line at fault.
		if n := failingLine(data, msg); n > 0 {
			pos.Line = n
		}
	}
	line := ""
	if pos.Line >= 1 && pos.Line <= len(lines) {
		line = strings.TrimRight(lines[pos.Line-1], "\r")
		pos.Col = len(line) - len(strings.TrimLeft(line, " ")) + 1
	}
	switch {
	case strings.HasPrefix(msg, "unknown anchor '"):
		name := strings.TrimSuffix(strings.TrimPrefix(msg, "unknown anchor '"), "' referenced")
		if i := strings.Index(line, "*"+name); i >= 0 {
			pos.Col = i + 1
		}
		return pos, fmt.Sprintf("alias *%s names no anchor: define &%s on a value above this line (anchors must come before their aliases)", name, name)
	case strings.Contains(msg, "tab character"):
		if i := strings.IndexByte(line, '\t'); i >= 0 {
			advice := "a tab is used for indentation; YAML indents with spaces only"
			if strings.Contains(msg, "indentation space is expected") {
				advice += " (inside a block scalar too)"
			}
			return Pos{Line: pos.Line, Col: i + 1}, advice
		}
	case strings.Contains(msg, "escape"), strings.Contains(msg, "hexdecimal number"):
		if i := badEscape(line); i >= 0 {
			return Pos{Line: pos.Line, Col: i + 1}, msg + ` (in double quotes a backslash starts an escape such as \n or \"; write \\ for a backslash, or use single quotes)`
		}
	case strings.Contains(msg, "cannot start any token"):
		if i := strings.IndexByte(line, '\t'); i >= 0 && strings.TrimLeft(line[:i], " ") == "" {
			return Pos{Line: pos.Line, Col: i + 1}, "a tab is used for indentation; YAML indents with spaces only"
		}
		if i := strings.IndexAny(line, "@`"); i >= 0 {
			return Pos{Line: pos.Line, Col: i + 1}, fmt.Sprintf("a value cannot start with %q; put the value in quotes", line[i])
		}
	case strings.Contains(msg, "found unexpected end of stream"):
		for n := min(pos.Line, len(lines)); n >= 1; n-- {
			if col := unclosedQuote(lines[n-1]); col > 0 {
				return Pos{Line: n, Col: col}, "the quoted string that starts here is never closed"
			}
		}
	case strings.Contains(msg, "mapping values are not allowed"):
		return pos, "unexpected ':' here; check the indentation of this line, or quote a value that contains \": \""
	case strings.Contains(msg, "could not find expected ':'"):
		return pos, msg + " (each line of a mapping is KEY: VALUE; is this line missing its ':', or meant to continue the value above?)"
	case strings.Contains(msg, "did not find expected key"):
		return pos, msg + " (check the indentation of this line and of the lines below it)"
	case strings.Contains(msg, "did not find expected '-' indicator"):
		return pos, msg + " (a list and a mapping at the same indentation?)"
	case strings.Contains(msg, "did not find expected ',' or"):
		if col := unclosedBracket(line); col > 0 {
			pos.Col = col
		}
		return pos, msg + " (a [list] or {mapping} that starts here is not closed?)"
	}
	return pos, msg
}

// contextOnly reports whether yaml.v3 places an error at the start of the
// construct it is in rather than where it is.
func contextOnly(msg string) bool {
	for _, m := range []string{
		"unknown anchor '",
		"tab character",
		"unknown escape character",
		"did not find expected hexdecimal number",
		"found invalid Unicode character escape code",
		"did not find expected key",
		"could not find expected ':'",
		"did not find expected '-' indicator",
		"did not find expected node content",
		"found unexpected document indicator",
		"found an indentation indicator equal to 0",
	} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// failingLine returns the number of the line that ends the shortest start
// of data on which yaml.v3 fails with msg, or 0. Parsing is streaming, so
// a start that holds the line at fault fails and one that does not parses
// (or fails otherwise): a binary search over lines finds it.
func failingLine(data []byte, msg string) int {
	ends := lineEnds(data)
	fails := func(n int) bool {
		dec := yaml.NewDecoder(bytes.NewReader(data[:ends[n-1]]))
		for i := 0; i < 3; i++ {
			var doc yaml.Node
			err := dec.Decode(&doc)
			if err == nil {
				continue
			}
			if errors.Is(err, io.EOF) {
				return false
			}
			_, m := YAMLErrorPos(err)
			return m == msg
		}
		return false
	}
	lo, hi := 1, len(ends)
	if !fails(hi) {
		return 0
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// lineEnds returns the offset just past each line of data, line breaks
// counted as YAML counts them.
func lineEnds(data []byte) []int {
	var ends []int
	for i := 0; i < len(data); {
		switch {
		case data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n':
			i += 2
		case data[i] == '\n' || data[i] == '\r':
			i++
		case bytes.HasPrefix(data[i:], []byte("\u0085")), bytes.HasPrefix(data[i:], []byte("\u2028")), bytes.HasPrefix(data[i:], []byte("\u2029")):
			_, size := utf8.DecodeRune(data[i:])
			i += size
		default:
			i++
			continue
		}
		ends = append(ends, i)
	}
	if len(ends) == 0 || ends[len(ends)-1] < len(data) {
		ends = append(ends, len(data))
	}
	return ends
}

// badEscape returns the index of the backslash of the first escape in
// line that YAML double quotes do not know, or -1.
func badEscape(line string) int {
	for i := 0; i+1 < len(line); i++ {
		if line[i] != '\\' {
			continue
		}
		c := line[i+1]
		switch {
		case strings.IndexByte("0abt\tnvfre \"/\\N_LP", c) >= 0:
			i++
		case c == 'x' || c == 'u' || c == 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			j := i + 2
			for ; j < len(line) && j < i+2+n && strings.IndexByte("0123456789abcdefABCDEF", line[j]) >= 0; j++ {
			}
			if j-(i+2) < n {
				return i
			}
			i = j - 1
		default:
			return i
		}
	}
	return -1
}

// unclosedBracket returns the 1-based column of the first [ or { on line
// that is not closed on it, or 0. Brackets inside quotes are not told apart;
// this only places a caret.
func unclosedBracket(line string) int {
	var open []int
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '[', '{':
			open = append(open, i)
		case ']', '}':
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
		}
	}
	if len(open) == 0 {
		return 0
	}
	return open[0] + 1
}

// unclosedQuote returns the 1-based column of a quote that opens a YAML
// value on line and is not closed on it, or 0.
func unclosedQuote(line string) int {
	inValuePos := true // at a place where a scalar may start
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == '#' && (i == 0 || line[i-1] == ' '):
			return 0
		case (ch == '"' || ch == '\'') && inValuePos:
			j := i + 1
			for ; j < len(line); j++ {
				if ch == '"' && line[j] == '\\' {
					j++
					continue
				}
				if line[j] == ch {
					if ch == '\'' && j+1 < len(line) && line[j+1] == '\'' {
						j++
						continue
					}
					break
				}
			}
			if j >= len(line) {
				return i + 1
			}
			i = j
			inValuePos = false
		case ch == ' ' || ch == '[' || ch == '{' || ch == ',' || ch == '-' || ch == ':' || ch == '?':
			inValuePos = true
		default:
			inValuePos = false
		}
	}
	return 0
}

func NodePos(n *yaml.Node) Pos {
	if n == nil {
		return Pos{}
	}
	return Pos{Line: n.Line, Col: n.Column}
}

// KindName names a YAML node's shape for messages.
func KindName(n *yaml.Node) string {
	n = ResolveAlias(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!bool":
			return "a boolean"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		default:
			return "a string"
		}
	}
	return "nothing"
}

func ResolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// Located is the result of turning a YAML tree into plain JSON-like values:
// the value, plus where each JSON pointer came from.
type Located struct {
	Value any
	// values maps a JSON pointer to the YAML node of its value; keys maps a
	// pointer to the key node that introduced it (absent for list items).
	Values map[string]*yaml.Node
	Keys   map[string]*yaml.Node
}

// YAMLToJSON converts a YAML node tree into values the JSON Schema validator
// accepts, recording positions by JSON pointer. Duplicate keys and non-string
// keys are reported; alias expansion is bounded.
func YAMLToJSON(r *Reporter, root *yaml.Node) *Located {
	l := &Located{Values: map[string]*yaml.Node{}, Keys: map[string]*yaml.Node{}}
	budget := maxValueNodes
	bombed := false
	aliases := 0
	var conv func(n *yaml.Node, ptr string, depth int) any
	conv = func(n *yaml.Node, ptr string, depth int) any {
		if bombed {
			return nil
		}
		budget--
		switch {
		case depth > maxValueDepth:
			bombed = true
			r.Errorf(NodePos(n), "values are nested more than %d levels deep here; refusing to process the spec", maxValueDepth)
			return nil
		case budget < 0 && aliases > 0:
			bombed = true
			r.Errorf(NodePos(n), "spec expands to more than %d values through YAML aliases; refusing to process it", maxValueNodes)
			return nil
		case budget < 0:
			bombed = true
			r.Errorf(NodePos(n), "spec holds more than %d values; refusing to process it", maxValueNodes)
			return nil
		}
		if n.Kind == yaml.AliasNode {
			aliases++
			if _, ok := l.Values[ptr]; !ok {
				l.Values[ptr] = n
			}
			return conv(n.Alias, ptr, depth+1)
		}
		if _, ok := l.Values[ptr]; !ok {
			l.Values[ptr] = n
		}
		switch n.Kind {
		case yaml.MappingNode:
			m := make(map[string]any, len(n.Content)/2)
			firstAt := map[string]*yaml.Node{}
			for _, p := range MappingPairs(n) {
				k, v := p.K, p.V
				if p.Via != nil {
					// Merged by "<<: *base": reported at the merge.
					cp := ptr + "/" + EscapePointer(k.Value)
					l.Keys[cp] = p.Via
					m[k.Value] = conv(v, cp, depth+1)
					continue
				}
				if k.Kind != yaml.ScalarNode {
					r.Errorf(NodePos(k), "keys must be plain strings, found %s", KindName(k))
					continue
				}
				name := k.Value
				if prev, dup := firstAt[name]; dup {
					r.Errorf(NodePos(k), "duplicate key %q (first defined at line %d)", name, prev.Line)
					continue
				}
				firstAt[name] = k
				cp := ptr + "/" + EscapePointer(name)
				l.Keys[cp] = k
				m[name] = conv(v, cp, depth+1)
			}
			return m
		case yaml.SequenceNode:
			s := make([]any, len(n.Content))
			for i, c := range n.Content {
				s[i] = conv(c, ptr+"/"+strconv.Itoa(i), depth+1)
			}
			return s
		case yaml.ScalarNode:
			return scalarValue(n)
		}
		return nil
	}
	l.Value = conv(root, "", 0)
	if bombed {
		return nil
	}
	return l
}

// Pair is a key and value of a mapping; via is the "<<" key that merged
// it in, nil for a key written in the mapping itself.
type Pair struct{ K, V, Via *yaml.Node }

// MappingPairs returns the pairs of a mapping as YAML defines them: the
// keys written in it, in order, with the keys merged by "<<" where the
// merge is, less those the mapping writes itself; among merged mappings the
// first that has a key wins, and merged mappings merge in turn. Written
// keys are returned even when repeated, for the caller to report.
func MappingPairs(n *yaml.Node) []Pair {
	return mappingPairsMemo(n, map[*yaml.Node][]Pair{}, 0)
}

func mappingPairsMemo(n *yaml.Node, memo map[*yaml.Node][]Pair, depth int) []Pair {
	n = ResolveAlias(n)
	if n == nil || n.Kind != yaml.MappingNode || depth > maxValueDepth {
		return nil
	}
	if ps, ok := memo[n]; ok {
		return ps
	}
	memo[n] = nil // a merge of itself (reported) adds nothing
	isMerge := func(k *yaml.Node) bool { return k.Kind == yaml.ScalarNode && k.Tag == "!!merge" }
	written := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; !isMerge(k) {
			written[ResolveAlias(k).Value] = true
		}
	}
	var out []Pair
	merged := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !isMerge(k) {
			out = append(out, Pair{K: k, V: v})
			continue
		}
		for _, src := range mergeSources(v) {
			for _, p := range mappingPairsMemo(src, memo, depth+1) {
				name := ResolveAlias(p.K).Value
				if written[name] || merged[name] {
					continue
				}
				merged[name] = true
				out = append(out, Pair{K: ResolveAlias(p.K), V: p.V, Via: k})
			}
		}
	}
	memo[n] = out
	return out
}

func mergeSources(v *yaml.Node) []*yaml.Node {
	v = ResolveAlias(v)
	if v.Kind == yaml.MappingNode {
		return []*yaml.Node{v}
	}
	var out []*yaml.Node
	if v.Kind == yaml.SequenceNode {
		for _, c := range v.Content {
			if c = ResolveAlias(c); c.Kind == yaml.MappingNode {
				out = append(out, c)
			}
		}
	}
	return out
}

// scalarValue turns a scalar into the Go value JSON decoding would give.
// An integer too large for 64 bits becomes the nearest float, so that the
// schema can say which bounds its field has.
func scalarValue(n *yaml.Node) any {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle|yaml.TaggedStyle) == 0 && YAMLIntSyntax.MatchString(strings.TrimSpace(n.Value)) {
		if i, ok := new(big.Int).SetString(strings.TrimSpace(n.Value), 0); ok && !i.IsInt64() {
			f, _ := new(big.Float).SetInt(i).Float64()
			return f
		}
	}
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			return b
		}
	case "!!int":
		var i int64
		if n.Decode(&i) == nil {
			return i
		}
		var f float64
		if n.Decode(&f) == nil {
			return f
		}
	case "!!float":
		var f float64
		if n.Decode(&f) == nil {
			return f
		}
	}
	return n.Value
}

func EscapePointer(s string) string {
	s = strings.ReplaceAll(s, "~", "~0")
	return strings.ReplaceAll(s, "/", "~1")
}

func unescapePointer(s string) string {
	s = strings.ReplaceAll(s, "~1", "/")
	return strings.ReplaceAll(s, "~0", "~")
}

// DidYouMeanPath is " (did you mean NEAR?)" for a path that does not
// exist when its folder holds a file (a folder when dirs) of a near name,
// else "".
func DidYouMeanPath(path string, dirs bool) string {
	parent, base := filepath.Split(path)
	if parent == "" {
		parent = "."
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		return ""
	}
	var names []string
	for _, en := range entries {
		if en.IsDir() == dirs {
			names = append(names, en.Name())
		}
	}
	near := suggest(base, names)
	if near == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", filepath.Join(filepath.Dir(path), near))
}
