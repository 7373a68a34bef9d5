// Package docs is the manual: one Markdown page per topic, linked from the
// front page (README.md at the root). It is embedded here so that the tests
// that keep the manual true (every spec key, flag, exit code and prompt
// field documented, examples shown as they are) read it by page name,
// wherever they run from. The binary does not import it.
//
// node-kinds.md is made from the kinds: each registered kind's section is
// its package's manual.md, with the table of its keys made from its schema
// fragment. `go generate ./docs` writes it, and a test of internal/gendocs
// fails when it is stale.
package docs

//go:generate go run ../internal/gendocs -root ..

import (
	"embed"
	"fmt"
	"strings"
)

//go:embed *.md
var pages embed.FS

// Page is the text of one page of the manual, e.g. "commands.md".
func Page(name string) (string, error) {
	data, err := pages.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("docs/%s: %w", name, err)
	}
	return string(data), nil
}

// Pages is the text of every page, by file name.
func Pages() (map[string]string, error) {
	entries, err := pages.ReadDir(".")
	if err != nil {
		return nil, err
	}
	all := make(map[string]string, len(entries))
	for _, e := range entries {
		text, err := Page(e.Name())
		if err != nil {
			return nil, err
		}
		all[e.Name()] = text
	}
	return all, nil
}

// Section is the part of a page that starts at the heading whose text is
// title (e.g. "What a template sees", any level) and ends before the next
// heading of the same or a higher level; headings inside code blocks do
// not count.
func Section(page, title string) (string, error) {
	text, err := Page(page)
	if err != nil {
		return "", err
	}
	lines := strings.SplitAfter(text, "\n")
	start, level := -1, 0
	fence := false
	for i, line := range lines {
		if strings.HasPrefix(line, "```") {
			fence = !fence
			continue
		}
		n := headingLevel(line)
		if fence || n == 0 {
			continue
		}
		if start < 0 {
			if strings.TrimSpace(line[n:]) == title {
				start, level = i, n
			}
		} else if n <= level {
			return strings.Join(lines[start:i], ""), nil
		}
	}
	if start < 0 {
		return "", fmt.Errorf("docs/%s has no heading %q", page, title)
	}
	return strings.Join(lines[start:], ""), nil
}

// headingLevel is the level of an ATX heading line ("## x" is 2), or 0.
func headingLevel(line string) int {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n >= len(line) || line[n] != ' ' {
		return 0
	}
	return n
}
