package converse_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestReport checks report.md of a hiring-panel run: one transcript per
// goal with whispers marked and private thoughts left out, every goal's
// verdict table with counts and percentages, and the whisper statistics.
func TestReport(t *testing.T) {
	o := runHiringPanel(t, 7)
	report := o.readFile(t, "report.md")
	transcript := section(report, "## Transcript")
	if strings.Contains(report, "PRIVATE-") {
		t.Error("a private thought is in the report")
	}
	for i, g := range hiringGoals {
		part := between(transcript, "### Goal: "+g+"\n", "### Goal: ")
		if part == "" {
			t.Fatalf("no transcript for goal %s", g)
		}
		if i > 0 && strings.Contains(part, hiringGoals[i-1]+"-") {
			t.Errorf("goal %s's transcript holds messages of %s", g, hiringGoals[i-1])
		}
		for from, to := range whisperTo {
			head := fmt.Sprintf("**%s → %s** (panel, message, whisper, turn ", nameOf(from), nameOf(to[0]))
			body := fmt.Sprintf("WHISPER-%s-%s-%s", g, from, to[0])
			if !regexp.MustCompile(regexp.QuoteMeta(head) + `\d+\)\n\n` + regexp.QuoteMeta(body)).MatchString(part) {
				t.Errorf("goal %s: whisper %s is not marked %q", g, body, head)
			}
			public := fmt.Sprintf("PUBLIC-%s-%s\n\n> Verdict: **%s**: REASON-%s-%s", g, from, hiringVerdict[from], g, from)
			if !strings.Contains(part, public) {
				t.Errorf("goal %s: no public message with verdict %q", g, public)
			}
			if !regexp.MustCompile(regexp.QuoteMeta(nameOf(from)+"** (panel, message, turn ") + `\d+, withdrawn\)\n\nDONE-` + g).MatchString(part) {
				t.Errorf("goal %s: %s's withdrawal is not marked", g, from)
			}
		}
		if n := strings.Count(part, "(panel, interjection, turn "); n != 2 {
			t.Errorf("goal %s: %d interjections in the transcript, want 2", g, n)
		}
	}

	verdicts := section(report, "## Verdicts")
	for _, g := range hiringGoals {
		part := between(verdicts, "### "+g+" (node panel)\n", "### ")
		if part == "" {
			t.Fatalf("no verdict table for %s:\n%s", g, verdicts)
		}
		for a, v := range hiringVerdict {
			row := fmt.Sprintf("| %s | %s | true | REASON-%s-%s |", nameOf(a), v, g, a)
			if !strings.Contains(part, row) {
				t.Errorf("%s: no row %q", g, row)
			}
		}
		for _, row := range []string{"| ADEQUATE | 1 | 25.0% |", "| GOOD_FIT | 2 | 50.0% |", "| POOR_FIT | 1 | 25.0% |"} {
			if !strings.Contains(part, row) {
				t.Errorf("%s: no count row %q", g, row)
			}
		}
	}

	whispers := section(report, "## Whispers")
	for _, g := range hiringGoals {
		for from, to := range whisperTo {
			row := fmt.Sprintf("| %s | %s | %s | 1 |", g, nameOf(from), nameOf(to[0]))
			if !strings.Contains(whispers, row) {
				t.Errorf("whisper statistics lack %q", row)
			}
		}
	}
	if len(o.res.Whispers) != 12 {
		t.Errorf("result.json has %d whisper statistics, want 12", len(o.res.Whispers))
	}
}

// nameOf is how the report names a hiring-panel member.
func nameOf(id string) string {
	return map[string]string{"priya": "Priya Raman", "tomas": "Tomás Ortega", "grace": "Grace Okafor", "lena": "Lena Hoffmann"}[id] + " (" + id + ")"
}

// section is the part of a Markdown document from heading to the next
// heading of the same level.
func section(doc, heading string) string {
	return between(doc, heading+"\n", "\n"+heading[:strings.Index(heading, " ")+1])
}

// between is the text after start up to the next end (or the end of s),
// or "" when start does not occur.
func between(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	rest := s[i+len(start):]
	if j := strings.Index(rest, end); j >= 0 {
		return rest[:j]
	}
	return rest
}
