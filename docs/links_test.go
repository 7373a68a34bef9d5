package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// markdownFiles are the pages whose links TestLinksResolve checks, relative
// to the repository root: the front page, the manual and the examples'
// READMEs.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	for _, pattern := range []string{"docs/*.md", "examples/*/README.md", "examples/*/*/README.md"} {
		m, err := filepath.Glob(filepath.Join("..", pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			files = append(files, strings.TrimPrefix(filepath.ToSlash(f), "../"))
		}
	}
	return files
}

var (
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	// A link or image: [text](target) or ![alt](target "title"); the text
	// may run over lines.
	link = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
)

// prose is a Markdown text without its code blocks and code spans, where
// brackets are not links.
func prose(text string) string {
	var b strings.Builder
	fence := false
	for _, line := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			b.WriteString("\n")
			continue
		}
		if fence {
			b.WriteString("\n")
			continue
		}
		b.WriteString(inlineCode.ReplaceAllString(line, "``"))
	}
	return b.String()
}

// anchors are the ids GitHub gives a page's headings: lower case, spaces
// as hyphens, punctuation dropped, a repeated one numbered (-1, -2, ...).
func anchors(text string) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
			continue
		}
		n := headingLevel(line)
		if fence || n == 0 {
			continue
		}
		slug := headingID(line[n+1:])
		id := slug
		if k := seen[slug]; k > 0 {
			id = fmt.Sprintf("%s-%d", slug, k)
		}
		seen[slug]++
		ids[id] = true
	}
	return ids
}

func headingID(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(title)) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

func TestHeadingID(t *testing.T) {
	for title, want := range map[string]string{
		"`runner validate FILE...`":                          "runner-validate-file",
		"Experiments: dry runs, the cache, replays, sweeps":  "experiments-dry-runs-the-cache-replays-sweeps",
		"A local model (Ollama, vLLM, LM Studio, llama.cpp)": "a-local-model-ollama-vllm-lm-studio-llamacpp",
		"kind: ask":                              "kind-ask",
		"templates (key)":                        "templates-key",
		"`runner cache stats|clear`":             "runner-cache-statsclear",
		"Chat turns (thread, history, examples)": "chat-turns-thread-history-examples",
		"max_tool_calls":                         "max_tool_calls",
	} {
		if got := headingID(title); got != want {
			t.Errorf("headingID(%q) = %q, want %q", title, got, want)
		}
	}
}

// TestLinksResolve checks every relative link of the front page, the
// manual and the examples' READMEs: the file it names exists, and the
// anchor, when there is one, is a heading of that page.
func TestLinksResolve(t *testing.T) {
	texts := map[string]string{}
	read := func(name string) (string, error) {
		if s, ok := texts[name]; ok {
			return s, nil
		}
		data, err := os.ReadFile(filepath.Join("..", name))
		texts[name] = string(data)
		return string(data), err
	}
	checked := 0
	for _, file := range markdownFiles(t) {
		text, err := read(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(prose(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(file), path)))
				if strings.HasPrefix(dest, "../") {
					t.Errorf("%s: link %s leaves the repository", file, target)
					continue
				}
				if _, err := os.Stat(filepath.Join("..", dest)); err != nil {
					t.Errorf("%s: link %s: no such file %s", file, target, dest)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") {
				t.Errorf("%s: link %s has an anchor into a file that is not Markdown", file, target)
				continue
			}
			destText, err := read(dest)
			if err != nil {
				t.Errorf("%s: link %s: %v", file, target, err)
				continue
			}
			if !anchors(destText)[anchor] {
				t.Errorf("%s: link %s: %s has no heading #%s", file, target, dest, anchor)
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d relative links found; the link pattern is broken", checked)
	}
}

// TestFrontPage keeps README.md a front page: short, and linking every page
// of the manual.
func TestFrontPage(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	if n := strings.Count(readme, "\n"); n > 400 {
		t.Errorf("README.md has %d lines; a front page has at most 400 (move the detail to docs/)", n)
	}
	all, err := Pages()
	if err != nil {
		t.Fatal(err)
	}
	for name := range all {
		if !strings.Contains(readme, "](docs/"+name+")") {
			t.Errorf("README.md does not link docs/%s", name)
		}
	}
}
