package syntax

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// This file checks the YAML tree itself, before any value is read from it:
// what YAML allows but a spec cannot mean. Each problem is reported at the
// node it is about, and the node is made harmless (an unknown tag dropped,
// a recursive alias replaced by null, a merge of something other than
// mappings removed), so that decoding can go on and report the rest of the
// spec's mistakes instead of stopping at the first, or at line 1.

// coreTags are the explicit tags a spec may use: they only say what YAML
// would infer anyway, or force a type (`!!str 123`).
var coreTags = map[string]bool{
	"!!str": true, "!!int": true, "!!float": true, "!!bool": true, "!!null": true,
	"!!map": true, "!!seq": true, "!!merge": true, "!": true,
}

// YAMLIntSyntax matches the integers yaml.v3 reads from plain scalars, in
// any base, with the underscores Go's parser allows.
var YAMLIntSyntax = regexp.MustCompile(`^[-+]?(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|[0-9][0-9_]*)$`)

// treeChecker walks a document once, never following an alias.
type treeChecker struct {
	r *Reporter
	// open holds the nodes being walked, from the root down: an alias to
	// one of them is recursive.
	open map[*yaml.Node]bool
	// overflows are the integers beyond 64 bits, with where they are.
	overflows []overflow
	// fatal is set by a problem after which nothing else is checked.
	fatal bool
}

// maxMappingKeys bounds the keys of one mapping: yaml.v3 checks a mapping
// for duplicate keys in time quadratic in its size (300,000 keys, which fit
// in a spec's 2 MiB, would take minutes), and no spec needs more.
const maxMappingKeys = 10_000

type overflow struct {
	n   *yaml.Node
	ptr string
}

// CheckTree reports tags, numbers, merges and aliases a spec cannot use,
// neutralizing each so that later stages do not trip over it. It returns
// a function that reports the integers too large for 64 bits which the
// schema did not report (with the bounds of their field) in the meantime.
func CheckTree(r *Reporter, root *yaml.Node) (reportOverflows func(), ok bool) {
	t := &treeChecker{r: r, open: map[*yaml.Node]bool{}}
	t.walk(root, "", 0)
	return func() {
		for _, o := range t.overflows {
			text := strings.TrimSpace(o.n.Value)
			switch {
			case r.claimed[NodePos(o.n)]:
			case strings.HasPrefix(text, "-"):
				r.Errorf(NodePos(o.n), "%s: %s is too small for an integer: the smallest a spec can hold is %d", DescribePointer(o.ptr), Clip(text, 40), int64(math.MinInt64))
			default:
				r.Errorf(NodePos(o.n), "%s: %s is too large for an integer: the largest a spec can hold is %d", DescribePointer(o.ptr), Clip(text, 40), int64(math.MaxInt64))
			}
		}
	}, !t.fatal
}

func (t *treeChecker) walk(n *yaml.Node, ptr string, depth int) {
	if n == nil || depth > maxYAMLDepth {
		return
	}
	t.tag(n, ptr)
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias != nil && t.open[n.Alias] {
			t.r.Errorf(NodePos(n), "%s: alias *%s refers to a value that contains it; YAML aliases cannot nest their own anchor (copy the value instead)", DescribePointer(ptr), n.Value)
			*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: n.Line, Column: n.Column}
		}
		return
	case yaml.ScalarNode:
		t.scalar(n, ptr)
		return
	}
	t.open[n] = true
	defer delete(t.open, n)
	switch n.Kind {
	case yaml.MappingNode:
		if len(n.Content)/2 > maxMappingKeys {
			t.r.Errorf(NodePos(n), "%s: this mapping has %d keys; a spec's mappings hold at most %d", DescribePointer(ptr), len(n.Content)/2, maxMappingKeys)
			t.fatal = true
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				if !t.merge(v, ptr) {
					n.Content = append(n.Content[:i:i], n.Content[i+2:]...)
					i -= 2
				}
				continue
			}
			t.tag(k, ptr) // keys are text, whatever they look like
			t.walk(v, ptr+"/"+EscapePointer(k.Value), depth+1)
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for i, c := range n.Content {
			t.walk(c, ptr+"/"+strconv.Itoa(i), depth+1)
		}
	}
}

// maxYAMLDepth bounds how deep a document is walked; yaml.v3 refuses
// deeper nesting than this when parsing.
const maxYAMLDepth = 10_000

// tag reports an explicit tag a spec cannot use, and drops it.
func (t *treeChecker) tag(n *yaml.Node, ptr string) {
	if n.Style&yaml.TaggedStyle == 0 {
		return
	}
	tag := n.ShortTag()
	where := DescribePointer(ptr)
	switch {
	case tag == "!include" || strings.HasPrefix(tag, "!include"):
		t.r.Errorf(NodePos(n), "%s: YAML tag %s is not supported: a spec is one file and runner has no include mechanism; write the value here, or share prompt text through a template library (templates: {use: [FOLDER]})", where, tag)
	case tag == "!!binary":
		t.r.Errorf(NodePos(n), "%s: YAML tag !!binary is not supported: a spec holds text; write the value as plain text", where)
	case tag == "!!timestamp" || tag == "!!set" || tag == "!!omap" || tag == "!!pairs":
		t.r.Errorf(NodePos(n), "%s: YAML tag %s is not supported; remove it (write dates as text, sets as lists, ordered mappings as mappings)", where, tag)
	case !coreTags[tag]:
		t.r.Errorf(NodePos(n), "%s: unknown YAML tag %s: a spec uses plain YAML values; remove the tag (quote the value if it must be text)", where, tag)
	default:
		if msg := tagMismatch(n, tag); msg != "" {
			t.r.Errorf(NodePos(n), "%s: %s", where, msg)
		} else {
			return
		}
	}
	n.Style &^= yaml.TaggedStyle
	switch n.Kind {
	case yaml.MappingNode:
		n.Tag = "!!map"
	case yaml.SequenceNode:
		n.Tag = "!!seq"
	default:
		n.Tag = "!!str"
	}
}

// tagMismatch explains a core tag put on a value of another shape
// (`!!map [1]`), which yaml.v3 accepts and then fails to decode.
func tagMismatch(n *yaml.Node, tag string) string {
	want := map[string]yaml.Kind{"!!map": yaml.MappingNode, "!!seq": yaml.SequenceNode}
	if k, ok := want[tag]; ok && n.Kind != k {
		return fmt.Sprintf("tag %s does not fit %s; remove the tag", tag, KindName(n))
	}
	if _, ok := want[tag]; !ok && tag != "!!merge" && tag != "!" && n.Kind != yaml.ScalarNode {
		return fmt.Sprintf("tag %s does not fit %s; remove the tag", tag, KindName(n))
	}
	if n.Kind == yaml.ScalarNode && tag != "!!str" && tag != "!" && tag != "!!merge" {
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Sprintf("%q is not a valid %s value; fix the value or remove the tag", Clip(n.Value, 40), tag)
		}
	}
	return ""
}

// scalar reports numbers no value of a spec can hold: integers beyond 64
// bits (which yaml.v3 silently reads as inexact floats, or as text) and
// infinities or NaN (which JSON, and so results and schemas, cannot hold).
func (t *treeChecker) scalar(n *yaml.Node, ptr string) {
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return
	}
	where := DescribePointer(ptr)
	switch n.ShortTag() {
	case "!!int", "!!float", "!!str":
		text := strings.TrimSpace(n.Value)
		if YAMLIntSyntax.MatchString(text) {
			if _, err := strconv.ParseInt(text, 0, 64); errors.Is(err, strconv.ErrRange) {
				// yaml.v3 reads it as an inexact float, which decodes
				// into no integer field: the field was silently left
				// at its default. The schema may know the field's
				// bounds; what it does not report is reported after it.
				t.overflows = append(t.overflows, overflow{n, ptr})
			}
			return
		}
		if n.ShortTag() == "!!float" {
			if f, err := strconv.ParseFloat(strings.ReplaceAll(text, "_", ""), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
				return
			}
			var f float64
			if n.Decode(&f) == nil && (math.IsInf(f, 0) || math.IsNaN(f)) {
				t.r.Errorf(NodePos(n), "%s: %s is not a finite number; a spec's numbers must be finite (quote it if it is text)", where, text)
				n.Tag, n.Style = "!!str", yaml.DoubleQuotedStyle
			}
		}
	}
}

// merge checks the value of a `<<` key: a mapping, an alias of one, or a
// list of those. It reports anything else and returns false.
func (t *treeChecker) merge(v *yaml.Node, ptr string) bool {
	where := DescribePointer(ptr)
	ok := func(n *yaml.Node) bool {
		n = ResolveAlias(n)
		return n != nil && n.Kind == yaml.MappingNode
	}
	if ok(v) {
		return true
	}
	if s := ResolveAlias(v); s != nil && s.Kind == yaml.SequenceNode {
		for _, c := range s.Content {
			if !ok(c) {
				at := c
				if v.Kind == yaml.AliasNode {
					at = v
				}
				t.r.Errorf(NodePos(at), "%s: a merge (<<) takes mappings, but this list holds %s; write <<: *ANCHOR or <<: [*A, *B] with anchors of mappings", where, KindName(c))
				return false
			}
		}
		return true
	}
	t.r.Errorf(NodePos(v), "%s: a merge (<<) takes a mapping, found %s; write <<: *ANCHOR where the anchor is on a mapping (or a list of such aliases)", where, KindName(v))
	return false
}

// Clip shortens text for a message.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
