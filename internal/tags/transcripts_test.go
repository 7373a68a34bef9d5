package tags

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/debate-runner/runner/internal/shared"
)

// transcriptDir holds recorded chain-of-debate runs. They are shared,
// read-only data outside the module, in ../shared beside the checkout: the
// test skips when they are absent, unless they are required (see
// internal/shared).
const transcriptDir = "data/chain-of-debate"

// messageHeader starts a message in a transcript: "[12] DR. X (Role) → All:".
var messageHeader = regexp.MustCompile(`(?m)^\[\d+\] .*:\s*$`)

// transcriptMessages returns every message body (the text between one header
// and the next) of every transcript, keyed for error messages by file, offset
// and header.
func transcriptMessages(t *testing.T) map[string]string {
	t.Helper()
	dir := shared.Dir(t, transcriptDir)
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".txt") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts under %s (%v)", dir, err)
	}
	msgs := make(map[string]string)
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("read transcript: %v", err)
		}
		text := string(data)
		heads := messageHeader.FindAllStringIndex(text, -1)
		for i, h := range heads {
			end := len(text)
			if i+1 < len(heads) {
				end = heads[i+1][0]
			}
			// Headers repeat across goals, so the key carries the byte offset.
			key := fmt.Sprintf("%s@%d %s", filepath.Base(path), h[0], strings.TrimSpace(text[h[0]:h[1]]))
			msgs[key] = text[h[1]:end]
		}
	}
	return msgs
}

func TestTranscripts(t *testing.T) {
	msgs := transcriptMessages(t)
	checked := map[string]int{}
	for key, body := range msgs {
		r := Parse(body, scaffold...)
		for _, name := range []string{"Verdict", "Withdrawn", "Content", "VerdictReasoning", "PrivateThoughts"} {
			opening := regexp.MustCompile(`(?i)<` + name + `[\s/>]`)
			if !opening.MatchString(body) {
				continue
			}
			checked[name]++
			fl, ok := r.Get(name)
			if !ok {
				t.Errorf("%s: raw text has <%s> but Parse found no such field", key, name)
				continue
			}
			// Where every opening tag is properly closed, the first field must
			// hold exactly what a naive regexp sees between the first pair.
			pair := regexp.MustCompile(`(?is)<` + name + `(?:\s[^>]*)?>(.*?)</` + name + `\s*>`)
			opens := len(opening.FindAllStringIndex(body, -1))
			if m := pair.FindAllStringSubmatch(body, -1); len(m) == opens {
				if want := strings.TrimSpace(m[0][1]); fl.Value != want {
					t.Errorf("%s: %s = %q, want %q", key, name, fl.Value, want)
				}
			}
		}
		if w, ok := r.Get("Withdrawn"); ok && !w.Unclosed && !strings.Contains(w.Value, "|") {
			if _, err := ParseBool(w.Value); err != nil {
				t.Errorf("%s: Withdrawn value: %v", key, err)
			}
		}
		if pt, ok := r.Get("PrivateThoughts"); ok && pt.Attrs["speaker"] == "" {
			t.Errorf("%s: PrivateThoughts without speaker attribute: %+v", key, pt.Attrs)
		}
	}
	// The recordings hold hundreds of scaffolded messages; far fewer means the
	// message split broke and the test would pass vacuously.
	if checked["Verdict"] < 300 || checked["Withdrawn"] < 300 || checked["PrivateThoughts"] < 200 {
		t.Errorf("too few messages checked: %v of %d", checked, len(msgs))
	}
	t.Logf("%d messages; checked per tag: %v", len(msgs), checked)
}
