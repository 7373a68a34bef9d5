package report

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/debate-runner/runner/internal/mdtext"
)

// contributions are texts models write that renderers used to eat.
var contributions = map[string]string{
	"tags":          "Give your verdict in a <Verdict> tag, with your reasons in <VerdictReasoning>.\nSet <Withdrawn>true</Withdrawn> when done.",
	"html block":    "<div class=\"x\">\nhidden words inside\n</div>\n\n<!-- a comment with words -->\n<script>alert(1)</script>",
	"entities":      "Use &amp; and &lt;b&gt; and &#169; literally; AT&T stays.",
	"link def":      "[ref]: https://example.com/secret-words \"title words\"\n\nSee [ref].",
	"image":         "![diagram of the cache](https://example.com/img.png) after",
	"autolink":      "See <https://example.com/page> and <mail@example.com>.",
	"headings":      "# Top\n\nintro\n\n## Second\n\ntext\n\n### Third\n\nmore\n\n####### seven hashes",
	"setext":        "Title Line\n==========\n\nbody\n\nTwo lines\nof paragraph\n---\n\nafter",
	"code fence":    "Before\n\n```go\n# not a heading\nx := a < b && c > d // <Verdict>\n```\n\nAfter",
	"unclosed":      "Start\n\n```\ncode that never ends\n# heading-like line",
	"tilde fence":   "~~~~\n<tag> in tildes\n~~~~\n\ntext <tag2>",
	"code span":     "Inline `<Verdict>` and ``a ` b <x>`` plus <y>",
	"indented code": "Para\n\n    <Verdict>indented</Verdict>\n    # not heading\n\nend",
	"list":          "- item one <a>\n- item two\n\n  continued <b>\n\n1. first\n2. second",
	"backslashes":   `Already escaped \<tag\> and \*stars\* and a trailing \`,
	"table":         "| a | b |\n| --- | --- |\n| <x> | y |\n| `p || q` | r | extra cell |",
	"quote":         "> quoted <z>\n> # quoted heading",
	"hard":          "line one  \nline two\\\nline three",
	"underscores":   "WHISPER-team_fit-priya and snake_case_words",
}

// TestBlockKeepsEveryWord renders each contribution inside a report
// skeleton with CommonMark and GFM and checks that every word is shown,
// that no heading of the contribution climbs to the report's own levels,
// and that the report goes on after it.
func TestBlockKeepsEveryWord(t *testing.T) {
	for name, text := range contributions {
		for _, base := range []int{2, 4} {
			doc := "# Report\n\n## Transcript\n\n" + strings.Repeat("#", base) + " Section\n\n" + Block(text, base) + "\n\n## After\n\nTHE-END\n"
			for flavor := range mdtext.Flavors {
				page, err := mdtext.Render(flavor, []byte(doc))
				if err != nil {
					t.Fatal(err)
				}
				quotes := []mdtext.Quote{{Name: name, Text: text}, {Name: "after", Text: "After THE END"}}
				for _, p := range mdtext.Missing(mdtext.Text(page), quotes) {
					t.Errorf("%s (base %d, %s): %s\nmarkdown:\n%s\nhtml:\n%s", name, base, flavor, p, Block(text, base), page)
				}
				if n := strings.Count(page, "<h1"); n != 1 {
					t.Errorf("%s (%s): %d h1 headings", name, flavor, n)
				}
				// Headings up to the section's level are the report's own.
				for l := 2; l <= base; l++ {
					want := 0
					if l == 2 {
						want = 2
					}
					if l == base {
						want++
					}
					if n := strings.Count(page, "<h"+string(rune('0'+l))); n != want {
						t.Errorf("%s (base %d, %s): %d h%d headings, want %d:\n%s", name, base, flavor, n, l, want, page)
					}
				}
				if strings.Contains(page, "raw HTML omitted") {
					t.Errorf("%s (%s): raw HTML left in:\n%s", name, flavor, page)
				}
				if strings.Contains(page, "<img") {
					t.Errorf("%s (%s): an image would be fetched", name, flavor)
				}
			}
		}
	}
}

// TestBlockStructure: headings keep their relative levels, code blocks stay
// byte for byte, an unclosed fence is closed.
func TestBlockStructure(t *testing.T) {
	got := Block(contributions["headings"], 3)
	for _, want := range []string{"#### Top", "##### Second", "###### Third", "####### seven hashes"} {
		if !strings.Contains(got, want+"\n") && !strings.HasSuffix(got, want) {
			t.Errorf("headings: %q lacks %q", got, want)
		}
	}
	// Levels are relative to the contribution's highest heading.
	if got := Block("## A\n\n### B", 4); got != "##### A\n\n###### B" {
		t.Errorf("relative levels: %q", got)
	}
	if got := Block("Title\n=====\n\nx", 2); got != "### Title\n\nx" {
		t.Errorf("setext: %q", got)
	}
	code := contributions["code fence"]
	if got := Block(code, 4); !strings.Contains(got, "```go\n# not a heading\nx := a < b && c > d // <Verdict>\n```") {
		t.Errorf("code block changed:\n%s", got)
	}
	if got := Block(contributions["unclosed"], 2); !strings.HasSuffix(got, "\n```") || strings.Count(got, "```") != 2 {
		t.Errorf("unclosed fence not closed:\n%s", got)
	}
	if got := Block("````\n```\nx\n", 2); !strings.HasSuffix(got, "\n````") {
		t.Errorf("a longer fence is closed with its own length:\n%s", got)
	}
	if got := Block("a `<b>` c <d>", 2); got != "a `<b>` c \\<d>" {
		t.Errorf("code span: %q", got)
	}
	if got := Inline("a | b\n c <d>"); got != `a \| b c \<d>` {
		t.Errorf("Inline: %q", got)
	}
}

// FuzzBlock: whatever a model writes, its words survive rendering and the
// report's headings stay its own.
func FuzzBlock(f *testing.F) {
	for _, c := range contributions {
		f.Add(c)
	}
	words := regexp.MustCompile(`[\p{L}\p{N}]`)
	f.Fuzz(func(t *testing.T, text string) {
		// Replies come as JSON strings: valid UTF-8.
		if !utf8.ValidString(text) || !words.MatchString(text) || strings.ContainsRune(text, 0) || strings.ContainsRune(text, '\r') {
			return
		}
		doc := "# R\n\n## T\n\n" + Block(text, 2) + "\n\n## END-MARK\n"
		page, err := mdtext.Render("gfm", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if p := mdtext.Missing(mdtext.Text(page), []mdtext.Quote{{Name: "text", Text: text}}); p != nil {
			t.Errorf("%v\nmarkdown:\n%s\nhtml:\n%s", p, Block(text, 2), page)
		}
		if !strings.Contains(page, "<h2 id=\"end-mark\">END-MARK</h2>") && !strings.Contains(page, "<h2>END-MARK</h2>") {
			t.Errorf("the report's heading after the text is lost:\n%s", page)
		}
	})
}
