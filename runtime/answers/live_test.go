package answers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/debate-runner/runner/internal/runtest"
	"github.com/debate-runner/runner/spec/value"
)

// TestTerminalOrPageFirst draws races between a person at the terminal
// and the view's page answering the same questions, each after a random
// delay (or not at all): exactly one answer wins each question, the asker
// gets the winner's, the loser is told (the terminal in its output, the
// page with ErrAnswered), and nothing is left in the asking folder.
func TestTerminalOrPageFirst(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 36))
	t.Logf("seed %d", seed)
	dir := t.TempDir()
	in, typed, out := runtest.Terminal(t)
	ask := Terminal(in, out)
	pageWins, terminalWins := 0, 0
	for i := 0; i < 24; i++ {
		turn := rng.IntN(3) == 0
		q := value.Question{ID: fmt.Sprintf("agent.q%d/%c", i, 'a'+rune(rng.IntN(26))), Agent: "agent", Question: "How many?"}
		var tp *Turn
		if turn {
			q.Question = TurnPrefix + "write the message of agent"
			tp = &Turn{ID: q.ID, Agent: "agent", Messages: []TurnMessage{{Role: "user", Content: "the history"}}}
		}
		ctx := context.WithValue(context.Background(), sharedKey{}, shared{dir: dir, post: Posted{Question: q, Turn: tp}, poll: time.Millisecond})
		typedAnswer := fmt.Sprintf("typed %d", i)
		if turn {
			typedAnswer = fmt.Sprintf("typed %d\nsecond line", i)
		}
		pageAnswer := fmt.Sprintf("from the page %d", i)
		// Which sides answer, and after how long.
		who := rng.IntN(3) // 0: both, 1: the terminal only, 2: the page only
		termDelay := time.Duration(rng.IntN(4000)) * time.Microsecond
		pageDelay := time.Duration(rng.IntN(4000)) * time.Microsecond
		before := len(out.String())

		got := make(chan string, 1)
		errc := make(chan error, 1)
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			a, err := ask(ctx, q)
			got <- a
			errc <- err
		}()
		var pageErr error
		pageTried := false
		var wg sync.WaitGroup
		if who != 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(termDelay)
				text := typedAnswer + "\n"
				if turn {
					text += "\n"
				}
				_, _ = io.WriteString(typed, text)
			}()
		}
		if who != 1 {
			pageTried = true
			// The page answers once it sees the question posted (unless
			// the terminal answered before it looked).
		look:
			for len(OpenPosted(dir)) == 0 {
				select {
				case <-finished:
					break look
				case <-time.After(200 * time.Microsecond):
				}
			}
			if posted := OpenPosted(dir); len(posted) > 0 && (posted[0].Question.ID != q.ID || (turn && (posted[0].Turn == nil || posted[0].Turn.Messages[0].Content != "the history"))) {
				t.Fatalf("posted %+v, want %s", posted, q.ID)
			}
			time.Sleep(pageDelay)
			pageErr = AnswerPosted(dir, q.ID, pageAnswer)
		}
		var answer string
		select {
		case answer = <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("question %d: no answer", i)
		}
		if err := <-errc; err != nil {
			t.Fatalf("question %d: %v", i, err)
		}
		wg.Wait()
		said := out.String()[before:]
		switch answer {
		case pageAnswer:
			pageWins++
			if pageErr != nil || !strings.Contains(said, "answered from the page") {
				t.Errorf("question %d won by the page: page told %v, terminal told %q", i, pageErr, said)
			}
			if who == 0 {
				// What was typed once the page had won goes to the next
				// question asked (unless the terminal had read it as
				// the page won): the test takes it here.
				drain := value.Question{ID: "drain", Agent: "agent", Question: q.Question}
				dctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				a, err := ask(dctx, drain)
				cancel()
				if err == nil && !strings.HasSuffix(typedAnswer, a) {
					t.Fatalf("question %d: the next question got %q, not what was typed", i, a)
				}
			}
		case strings.TrimSpace(typedAnswer):
			terminalWins++
			if pageTried && !errors.Is(pageErr, ErrAnswered) {
				t.Errorf("question %d won by the terminal: the page was told %v", i, pageErr)
			}
			if strings.Contains(said, "answered from the page") {
				t.Errorf("question %d won by the terminal, which says %q", i, said)
			}
		default:
			t.Fatalf("question %d: answer %q is neither side's", i, answer)
		}
		if entries, _ := os.ReadDir(filepath.Join(dir, AskingDir)); len(entries) != 0 {
			t.Fatalf("question %d left %d files in %s", i, len(entries), AskingDir)
		}
	}
	t.Logf("the page won %d, the terminal %d", pageWins, terminalWins)
	if pageWins == 0 || terminalWins == 0 {
		t.Errorf("one side never won (page %d, terminal %d): the races drawn test nothing", pageWins, terminalWins)
	}
}

// TestTerminalTurnIsLines: a seat's message at the terminal is the lines
// typed up to an empty line, or the end of the input; a clarifying
// question's answer is one line.
func TestTerminalTurnIsLines(t *testing.T) {
	var out strings.Builder
	ask := Terminal(strings.NewReader("First line.\n  Second, indented.\n\nOne line.\nLast turn\nends at EOF"), &out)
	turn := value.Question{ID: "d/t1/you", Agent: "you", Question: TurnPrefix + "write the message of You"}
	if got, err := ask(context.Background(), turn); err != nil || got != "First line.\n  Second, indented." {
		t.Errorf("the first turn %q, %v", got, err)
	}
	if got, err := ask(context.Background(), value.Question{ID: "a.q1", Agent: "a", Question: "Users?"}); err != nil || got != "One line." {
		t.Errorf("the question %q, %v", got, err)
	}
	if got, err := ask(context.Background(), turn); err != nil || got != "Last turn\nends at EOF" {
		t.Errorf("the last turn %q, %v", got, err)
	}
	if _, err := ask(context.Background(), turn); !errors.Is(err, io.EOF) {
		t.Errorf("a turn after the end of the input: %v", err)
	}
	if !strings.Contains(out.String(), "an empty line ends it") {
		t.Errorf("the terminal does not say how a message ends:\n%s", out.String())
	}
}
