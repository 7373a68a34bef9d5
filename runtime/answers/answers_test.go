package answers

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/debate-runner/runner/spec/value"
	"gopkg.in/yaml.v3"
)

// TestQuestionsRoundTrip: questions.yaml, once filled in, is an answers
// file: answered questions keep their answers, open ones get what the
// person wrote, and the header says how to resume.
func TestQuestionsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "questions.yaml")
	qs := []value.Question{
		{ID: "arch.q1", Agent: "arch", Question: "How many users?", Answer: "10k"},
		{ID: "sec.q1", Agent: "sec", Question: `Which "region": EU or US?`},
		{ID: "arch.q1", Agent: "arch", Question: "How many users?"}, // asked again: kept once
	}
	if err := WriteQuestions(path, dir, qs); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if !strings.Contains(text, "runner resume "+dir+" --answers "+path) || !strings.Contains(text, "# sec asks: Which \"region\": EU or US?") {
		t.Errorf("questions.yaml:\n%s", text)
	}
	filled := strings.Replace(text, `sec.q1: ""`, `sec.q1: "EU, mostly"`, 1)
	if err := os.WriteFile(path, []byte(filled), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["arch.q1"] != "10k" || got["sec.q1"] != "EU, mostly" {
		t.Errorf("answers = %v", got)
	}
}

func TestReadAnswers(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	got, err := Read(write("a.yaml", "a.q1: 42\na.q2:\nb.q1: yes\n"))
	if err != nil || got["a.q1"] != "42" || got["a.q2"] != "" || got["b.q1"] != "true" && got["b.q1"] != "yes" {
		t.Errorf("Read = %v, %v", got, err)
	}
	if _, err := Read(write("b.yaml", "- a list\n")); err == nil || !strings.Contains(err.Error(), "not a YAML mapping") {
		t.Errorf("a list: %v", err)
	}
	if _, err := Read(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("a missing file gave no error")
	}
}

func TestTerminal(t *testing.T) {
	var out strings.Builder
	ask := Terminal(strings.NewReader("About 1000.\n\n"), &out)
	a, err := ask(context.Background(), value.Question{ID: "a.q1", Agent: "a", Question: "How many users?"})
	if err != nil || a != "About 1000." {
		t.Errorf("first answer %q, %v", a, err)
	}
	b, err := ask(context.Background(), value.Question{ID: "a.q2", Agent: "a", Question: "Budget?"})
	if err != nil || b != "" {
		t.Errorf("second answer %q, %v", b, err)
	}
	if _, err := ask(context.Background(), value.Question{ID: "a.q3"}); err == nil {
		t.Error("no more input gave no error")
	}
	if !strings.Contains(out.String(), "a asks (a.q1):\n  How many users?") {
		t.Errorf("prompt:\n%s", out.String())
	}
}

// TestTerminalGivesWayToCtrlC: a question waiting at the terminal returns
// as soon as the run is interrupted, and the line typed afterwards goes to
// the next question rather than to the one given up on.
func TestTerminalGivesWayToCtrlC(t *testing.T) {
	in, typed := io.Pipe()
	defer typed.Close()
	ask := Terminal(in, io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := ask(ctx, value.Question{ID: "a.q1", Agent: "a", Question: "first?"})
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the interrupted question returned %v; want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the question did not give way to the interrupt")
	}
	go func() { _, _ = io.WriteString(typed, "forty-two\n") }()
	got, err := ask(context.Background(), value.Question{ID: "a.q2", Agent: "a", Question: "second?"})
	if err != nil || got != "forty-two" {
		t.Errorf("the next question got %q, %v; want the line typed after the interrupt", got, err)
	}
}

// TestQuestionsKeepTurnPrompts: a question whose text has blank lines and
// comment-like lines (a seat's turn shows the agent's prompt) stays one
// comment above its id, whole, so that a person reads all of it and a
// reader of questions.yaml finds who asks what.
func TestQuestionsKeepTurnPrompts(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "questions.yaml")
	text := "your turn: write the message of You\n--- user ---\nfirst\n\n\n# not a heading\n  indented\n\nlast"
	if err := WriteQuestions(path, dir, []value.Question{{ID: "debate/-/t1/you", Agent: "you", Question: text}}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	m := doc.Content[0]
	if len(m.Content) != 2 || m.Content[0].Value != "debate/-/t1/you" {
		t.Fatalf("questions.yaml:\n%s", data)
	}
	var lines []string
	for _, l := range strings.Split(m.Content[0].HeadComment, "\n") {
		lines = append(lines, strings.TrimPrefix(strings.TrimPrefix(l, "#"), " "))
	}
	got := strings.Join(lines, "\n")
	if !strings.HasSuffix(got, "you asks: "+text) {
		t.Errorf("the comment above the turn reads back as\n%q\nwant it to end with\n%q", got, "you asks: "+text)
	}
	if a, err := Read(path); err != nil || len(a) != 1 {
		t.Errorf("Read = %v, %v", a, err)
	}
}
