package syntax

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The JSON Schema is checked before the spec is decoded into Go values, and
// most mistakes are reported there, at their place. Decoding can still fail
// where the schema is looser than the Go type (a seed beyond the range of
// int on a 32-bit machine, a number written as 1e19). Such failures used to
// be dropped, leaving a zero value in place of what the user wrote (a
// default, silently); decodeError reports each one the schema did not
// already report, at the value it is about.

// typeErrorf returns a decoding error about n in the form decodeError
// reads back, as a *yaml.TypeError so that yaml.v3 goes on decoding the
// rest of the document (any other error stops it where it is).
func typeErrorf(n *yaml.Node, format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d:%d: %s", n.Line, n.Column, fmt.Sprintf(format, args...))}}
}

var (
	// ourTypeError is typeErrorf's form.
	ourTypeError = regexp.MustCompile(`^line (\d+):(\d+): (.*)$`)
	// yamlTypeError is yaml.v3's: the value is cut to 7 characters and
	// "..." when longer than 10, and absent for lists and mappings.
	yamlTypeError = regexp.MustCompile("^line (\\d+): cannot unmarshal (\\S+)(?: `(.*)`)? into (.+)$")
)

// DecodeError reports the errors of decoding part of the spec (root is the
// whole document, for naming where a value is).
func (r *Reporter) DecodeError(root *yaml.Node, err error) {
	if err == nil {
		return
	}
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		pos, msg := YAMLErrorPos(err)
		if !r.claimedLine(pos.Line) {
			r.Errorf(pos, "%s", strings.TrimPrefix(msg, "yaml: "))
		}
		return
	}
	for _, e := range te.Errors {
		if m := ourTypeError.FindStringSubmatch(e); m != nil {
			line, _ := strconv.Atoi(m[1])
			col, _ := strconv.Atoi(m[2])
			r.Errorf(Pos{line, col}, "%s", m[3])
			continue
		}
		m := yamlTypeError.FindStringSubmatch(e)
		if m == nil {
			pos, msg := YAMLErrorPos(errors.New(e))
			if !r.claimedLine(pos.Line) {
				r.Errorf(pos, "%s", msg)
			}
			continue
		}
		line, _ := strconv.Atoi(m[1])
		found := findDecoded(root, line, m[2], m[3])
		if len(found) == 0 {
			if !r.claimedLine(line) {
				r.Errorf(Pos{line, 1}, "cannot read %s here: %s", m[2], goTypeWords(m[4]))
			}
			continue
		}
		// Several values on the line may fit the description: when one
		// of them was reported already, that one is most likely meant.
		claimed := false
		for _, f := range found {
			claimed = claimed || r.claimed[NodePos(f.n)]
		}
		if !claimed {
			r.Errorf(NodePos(found[0].n), "%s: %s", DescribePointer(found[0].ptr), decodeMessage(found[0].n, m[4]))
		}
	}
}

// claimedLine reports whether the schema reported an error on line.
func (r *Reporter) claimedLine(line int) bool {
	for p := range r.claimed {
		if p.Line == line {
			return true
		}
	}
	return false
}

type foundNode struct {
	n   *yaml.Node
	ptr string
}

// findDecoded finds the values a yaml.v3 decoding error may be about: on
// line, with that tag, their text starting as shown; leftmost first.
func findDecoded(root *yaml.Node, line int, tag, shown string) []foundNode {
	prefix, cut := strings.CutSuffix(shown, "...")
	var found []foundNode
	var visit func(n *yaml.Node, ptr string, depth int)
	visit = func(n *yaml.Node, ptr string, depth int) {
		if n == nil || depth > maxYAMLDepth {
			return
		}
		if n.Line == line && n.ShortTag() == tag && n.Kind != yaml.AliasNode &&
			(n.Kind != yaml.ScalarNode || n.Value == shown || cut && strings.HasPrefix(n.Value, prefix)) {
			found = append(found, foundNode{n, ptr})
		}
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				visit(n.Content[i+1], ptr+"/"+EscapePointer(n.Content[i].Value), depth+1)
			}
		case yaml.SequenceNode, yaml.DocumentNode:
			for i, c := range n.Content {
				visit(c, ptr+"/"+strconv.Itoa(i), depth+1)
			}
		}
	}
	visit(root, "", 0)
	sort.SliceStable(found, func(i, j int) bool { return found[i].n.Column < found[j].n.Column })
	return found
}

// decodeMessage says why a value does not fit the Go type it is read into.
func decodeMessage(n *yaml.Node, goType string) string {
	if bits, signed, ok := intType(goType); ok && n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!int" || n.ShortTag() == "!!float") {
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err == nil && f != math.Trunc(f) {
			return fmt.Sprintf("expected a whole number, found %s", n.Value)
		}
		lo, hi := intRange(bits, signed)
		if !signed && strings.HasPrefix(strings.TrimSpace(n.Value), "-") {
			return fmt.Sprintf("%s is negative; a count here lies between 0 and %d", n.Value, hi)
		}
		return fmt.Sprintf("%s is out of range: a whole number here lies between %d and %d", Clip(n.Value, 40), lo, hi)
	}
	return fmt.Sprintf("%s, found %s", goTypeWords(goType), DescribeValue(n))
}

// intType reads Go's name of an integer type.
func intType(goType string) (bits int, signed, ok bool) {
	goType = strings.TrimPrefix(goType, "*")
	signed = !strings.HasPrefix(goType, "uint")
	rest := strings.TrimPrefix(strings.TrimPrefix(goType, "u"), "int")
	if !strings.HasPrefix(goType, "int") && !strings.HasPrefix(goType, "uint") {
		return 0, false, false
	}
	if rest == "" {
		return strconv.IntSize, signed, true
	}
	b, err := strconv.Atoi(rest)
	if err != nil {
		return 0, false, false
	}
	return b, signed, true
}

func intRange(bits int, signed bool) (lo int64, hi uint64) {
	if signed {
		return -1 << (bits - 1), 1<<(bits-1) - 1
	}
	if bits == 64 {
		return 0, math.MaxUint64
	}
	return 0, 1<<bits - 1
}

// goTypeWords names a Go type the way a spec author thinks of values.
func goTypeWords(goType string) string {
	goType = strings.TrimPrefix(goType, "*")
	switch {
	case goType == "string":
		return "expected text"
	case goType == "bool":
		return "expected true or false"
	case goType == "float64" || goType == "float32":
		return "expected a number"
	case strings.HasPrefix(goType, "int") || strings.HasPrefix(goType, "uint"):
		return "expected a whole number"
	case strings.HasPrefix(goType, "[]"):
		return "expected a list"
	}
	return "expected a mapping"
}
