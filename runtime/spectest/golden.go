package spectest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/debate-runner/runner/nodes/kit"
	"github.com/debate-runner/runner/runtime/rundir"
	"github.com/debate-runner/runner/runtime/scripted"
)

// GoldenPath is where a case's golden prompts are kept: NAME.golden/CASE.txt
// beside the test file NAME.test.yaml.
func GoldenPath(testFile, caseID string) string {
	base := filepath.Base(testFile)
	stem := strings.TrimSuffix(base, Suffix)
	if stem == base {
		stem = strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
	}
	name := strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, caseID)
	return filepath.Join(filepath.Dir(testFile), stem+".golden", name+".txt")
}

// goldenHeader starts every golden file.
const goldenHeader = "# Prompts of every model call of this test case, in the order of the flow.\n# Written by `runner test --update`; a change to a template shows as a diff here.\n"

// Prompts writes the prompts of the calls as a golden file holds them:
// each call's key, then each message of its request under its role.
func Prompts(calls []Call, attempts []scripted.Attempt) string {
	first := map[string][]kit.ChatMessage{}
	for _, a := range attempts {
		if _, ok := first[a.Call.Key]; !ok {
			first[a.Call.Key] = a.Call.Kit.Messages
		}
	}
	var b strings.Builder
	b.WriteString(goldenHeader)
	for _, c := range calls {
		fmt.Fprintf(&b, "\n=== %s\n", c.Key)
		for _, m := range first[c.Key] {
			head := m.Role
			if m.ToolCallID != "" {
				head += " " + m.ToolCallID
			}
			for _, tc := range m.ToolCalls {
				head += fmt.Sprintf(" %s(%s)", tc.Name, tc.Arguments)
			}
			fmt.Fprintf(&b, "--- %s\n%s\n", head, strings.TrimRight(m.Content, "\n"))
		}
	}
	return b.String()
}

// checkGolden compares prompts with the golden file at path, or with
// update writes it. It returns a note for the report, and a failure.
func checkGolden(path, prompts string, update bool) (string, *Failure) {
	old, err := os.ReadFile(path)
	if update {
		if err == nil && string(old) == prompts {
			return "", nil
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", &Failure{Message: "writing the golden file: " + err.Error()}
		}
		if err := writeFile(path, []byte(prompts)); err != nil {
			return "", &Failure{Message: "writing the golden file: " + err.Error()}
		}
		return "wrote " + path, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return "", &Failure{Message: fmt.Sprintf("golden file %s does not exist: run runner test --update to write it", path)}
	}
	if err != nil {
		return "", &Failure{Message: "reading the golden file: " + err.Error()}
	}
	if string(old) == prompts {
		return "", nil
	}
	return "", &Failure{
		Message: fmt.Sprintf("the prompts differ from %s (runner test --update accepts them)", path),
		Detail:  diffPrompts(string(old), prompts),
	}
}

// section is one call of a golden file.
type section struct {
	key   string
	lines []string
}

func sections(text string) []section {
	var out []section
	for _, line := range strings.Split(text, "\n") {
		if key, ok := strings.CutPrefix(line, "=== "); ok {
			out = append(out, section{key: key})
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].lines = append(out[len(out)-1].lines, line)
		}
	}
	return out
}

// Limits of what a diff shows.
const (
	maxDiffCalls = 5
	maxDiffLines = 40
	diffContext  = 2
)

// diffPrompts says which calls' prompts changed, and how: a diff of each
// changed call's prompt (- golden, + now), and the calls that appeared or
// went away.
func diffPrompts(old, now string) string {
	olds, ns := sections(old), sections(now)
	oldBy := map[string]section{}
	for _, s := range olds {
		oldBy[s.key] = s
	}
	nowBy := map[string]bool{}
	var b strings.Builder
	shown := 0
	var added, removed []string
	// The same change in many calls (a template every agent renders) is
	// shown once, with the calls it is in.
	type change struct {
		diff string
		keys []string
	}
	var changes []*change
	byDiff := map[string]*change{}
	for _, s := range ns {
		nowBy[s.key] = true
		o, ok := oldBy[s.key]
		if !ok {
			added = append(added, s.key)
			continue
		}
		if equalLines(o.lines, s.lines) {
			continue
		}
		d := unified(o.lines, s.lines)
		if c, ok := byDiff[d]; ok {
			c.keys = append(c.keys, s.key)
			continue
		}
		c := &change{diff: d, keys: []string{s.key}}
		byDiff[d] = c
		changes = append(changes, c)
	}
	for _, c := range changes {
		shown++
		if shown > maxDiffCalls {
			continue
		}
		if len(c.keys) == 1 {
			fmt.Fprintf(&b, "call %s:\n%s", c.keys[0], c.diff)
		} else {
			fmt.Fprintf(&b, "calls %s:\n%s", listSome(c.keys), c.diff)
		}
	}
	for _, s := range olds {
		if !nowBy[s.key] {
			removed = append(removed, s.key)
		}
	}
	if shown > maxDiffCalls {
		fmt.Fprintf(&b, "... and %d more changes\n", shown-maxDiffCalls)
	}
	if len(added) > 0 {
		fmt.Fprintf(&b, "calls not in the golden file: %s\n", listSome(added))
	}
	if len(removed) > 0 {
		fmt.Fprintf(&b, "calls in the golden file that were not made: %s\n", listSome(removed))
	}
	if b.Len() == 0 {
		b.WriteString("(the files differ outside the prompts)\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func listSome(keys []string) string {
	if len(keys) > 8 {
		return strings.Join(keys[:8], ", ") + fmt.Sprintf(" and %d more", len(keys)-8)
	}
	return strings.Join(keys, ", ")
}

func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// unified is a line diff of a and b with a little context, - for lines of
// a and + for lines of b.
func unified(a, b []string) string {
	ops := diffLines(a, b)
	// Mark the lines to show: changes and their context.
	show := make([]bool, len(ops))
	for i, op := range ops {
		if op.kind != ' ' {
			for j := max(0, i-diffContext); j <= min(len(ops)-1, i+diffContext); j++ {
				show[j] = true
			}
		}
	}
	var out bytes.Buffer
	lines, gap := 0, false
	for i, op := range ops {
		if !show[i] {
			gap = true
			continue
		}
		if gap && out.Len() > 0 {
			out.WriteString("    ...\n")
		}
		gap = false
		if lines >= maxDiffLines {
			out.WriteString("    ... (diff cut)\n")
			break
		}
		fmt.Fprintf(&out, "  %c %s\n", op.kind, op.line)
		lines++
	}
	return out.String()
}

type diffOp struct {
	kind byte // ' ', '-', '+'
	line string
}

// diffLines is a longest-common-subsequence line diff. Prompts are
// compared call by call, so each side is a prompt's lines: small enough
// for the quadratic table.
func diffLines(a, b []string) []diffOp {
	// Common prefix and suffix first: most changes touch a few lines.
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	var ops []diffOp
	for _, l := range a[:p] {
		ops = append(ops, diffOp{' ', l})
	}
	ma, mb := a[p:len(a)-s], b[p:len(b)-s]
	if len(ma)*len(mb) > 4_000_000 {
		// Too large to align: all of one, then all of the other.
		for _, l := range ma {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range mb {
			ops = append(ops, diffOp{'+', l})
		}
	} else {
		n, m := len(ma), len(mb)
		lcs := make([][]int32, n+1)
		for i := range lcs {
			lcs[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && ma[i] == mb[j]:
				ops = append(ops, diffOp{' ', ma[i]})
				i++
				j++
			case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, diffOp{'-', ma[i]})
				i++
			default:
				ops = append(ops, diffOp{'+', mb[j]})
				j++
			}
		}
	}
	for _, l := range a[len(a)-s:] {
		ops = append(ops, diffOp{' ', l})
	}
	return ops
}

// writeFile writes a file of the user's project atomically, readable by all as
// files in a repository are (rundir.WriteFile keeps run files private).
func writeFile(path string, data []byte) error {
	if err := rundir.WriteFile(path, data); err != nil {
		return err
	}
	return os.Chmod(path, 0o644)
}
