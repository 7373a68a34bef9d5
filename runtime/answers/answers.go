// Package answers is how answers to clarifying questions reach a run and
// how open questions leave it: the answers file (`--answers FILE`, a YAML
// mapping of question id to answer), questions.yaml (the questions a waiting
// run needs answered, in the same form), and a terminal prompt.
package answers

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/debate-runner/runner/spec/value"

	"github.com/debate-runner/runner/runtime/rundir"
	"gopkg.in/yaml.v3"
)

// Read reads an answers file: a YAML mapping of question id to answer (an
// empty or null answer means "not applicable").
func Read(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s is not a YAML mapping of question id to answer: %v", path, err)
	}
	out := map[string]string{}
	for k, v := range m {
		if v == nil {
			out[k] = ""
			continue
		}
		out[k] = fmt.Sprint(v)
	}
	return out, nil
}

// WriteQuestions writes questions, each as its id with its answer ("" when
// it has none yet) and a comment naming the agent and the question, to
// path, atomically, under a header telling how to resume runDir with them.
// The questions answered so far come first in qs: a resumed run asks them
// again, so the file must answer them all.
func WriteQuestions(path, runDir string, qs []value.Question) error {
	var doc yaml.Node
	doc.Kind = yaml.MappingNode
	seen := map[string]bool{}
	for _, q := range qs {
		if seen[q.ID] {
			continue
		}
		seen[q.ID] = true
		comment := fmt.Sprintf("%s asks: %s", q.Agent, q.Question)
		if q.Answer != "" {
			comment += " (answered)"
		}
		// Every line is marked as a comment here: a blank line would end
		// the comment (a turn's prompt has them), and one that starts with
		// "#" would lose it when read back.
		lines := strings.Split(strings.ReplaceAll(comment, "\r", ""), "\n")
		for i, l := range lines {
			if l == "" {
				lines[i] = "#"
			} else {
				lines[i] = "# " + l
			}
		}
		comment = strings.Join(lines, "\n")
		k := &yaml.Node{Kind: yaml.ScalarNode, Value: q.ID, HeadComment: comment}
		v := &yaml.Node{Kind: yaml.ScalarNode, Value: q.Answer, Style: yaml.DoubleQuotedStyle}
		doc.Content = append(doc.Content, k, v)
	}
	data, err := yaml.Marshal(&doc)
	if err != nil {
		return err
	}
	header := "# Answer the questions below (an empty answer means \"not applicable\"), then run:\n#   runner resume " + runDir + " --answers " + path + "\n"
	return rundir.WriteFile(path, append([]byte(header), data...))
}

// Terminal asks each question on out and reads its answer from in: one
// line for a clarifying question (an empty line means "not applicable"),
// and for a seat's turn the message's lines up to an empty line (or the
// end of the input). Questions are asked one at a time, however many
// calls ask at once. Asked with a context Shared marks, a question is
// also posted in the run's folder for the view: whichever answers first
// wins, and the terminal says so when it was the page.
func Terminal(in io.Reader, out io.Writer) func(ctx context.Context, q value.Question) (string, error) {
	// One reader goroutine owns the input: a question given up on (Ctrl-C,
	// or answered from the page) leaves the read pending rather than
	// losing the next line to it.
	lines := make(chan lineRead)
	var start sync.Once
	var mu sync.Mutex
	// next is the next line typed; false at the end of the input.
	next := func(ctx context.Context) (string, bool, error) {
		select {
		case <-ctx.Done():
			return "", false, ctx.Err()
		case l, ok := <-lines:
			if !ok {
				return "", false, nil
			}
			if l.err != nil && l.line == "" {
				if l.err == io.EOF {
					return "", false, nil
				}
				return "", false, l.err
			}
			return strings.TrimRight(l.line, "\r\n"), true, nil
		}
	}
	return func(ctx context.Context, q value.Question) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		start.Do(func() {
			go func() {
				r := bufio.NewReader(in)
				for {
					line, err := r.ReadString('\n')
					lines <- lineRead{line, err}
					if err != nil {
						close(lines)
						return
					}
				}
			}()
		})
		turn := strings.HasPrefix(q.Question, TurnPrefix)
		s, isShared := sharedOf(ctx)
		also := ""
		if isShared {
			also = "; or answer it in the view"
		}
		if turn {
			// A seat's turn: its prompt as it is, then the message.
			fmt.Fprintf(out, "\n%s (%s)\n%s's message (lines; an empty line ends it%s):\n", q.Question, q.ID, q.Agent, also)
		} else {
			fmt.Fprintf(out, "\n%s asks (%s):\n  %s\nanswer (empty = NA%s): ", q.Agent, q.ID, q.Question, also)
		}
		read := func(ctx context.Context) (string, error) {
			var got []string
			for {
				line, ok, err := next(ctx)
				if err != nil {
					return "", fmt.Errorf("reading the answer to %s: %w", q.ID, err)
				}
				if !ok {
					if len(got) > 0 {
						break // the end of the input ends the message
					}
					return "", fmt.Errorf("reading the answer to %s: %w", q.ID, io.EOF)
				}
				if !turn {
					return strings.TrimSpace(line), nil
				}
				if strings.TrimSpace(line) == "" {
					break
				}
				got = append(got, line)
			}
			return strings.TrimSpace(strings.Join(got, "\n")), nil
		}
		if !isShared {
			return read(ctx)
		}
		return askShared(ctx, s, q, read, func(msg string) { fmt.Fprintf(out, "\n(%s)\n", msg) })
	}
}

// lineRead is a line read from the terminal, or why none could be.
type lineRead struct {
	line string
	err  error
}
