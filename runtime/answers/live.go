package answers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/debate-runner/runner/runtime/rundir"
	"github.com/debate-runner/runner/spec/value"
)

// This file lets the view answer a question a terminal asks while the run
// goes on (runner run or resume at a terminal, the run not stopped): the
// question is posted in the run's folder (asking/), the view shows it, and
// whichever answers first, the person at the terminal or the page, wins.
// The two claim the answer by creating the same file, which only one can
// do (a hard link fails when the name exists); the other is told.

// AskingDir is the folder of a run's directory that holds the questions a
// terminal asks while the run goes on; it is empty once they are answered.
const AskingDir = "asking"

// ErrAnswered is the view's answer refused: the terminal answered the
// question first (or the run moved on).
var ErrAnswered = errors.New("the question was answered at the terminal first")

// Posted is a question a terminal asks that the view may answer: the
// question, and for a seat's turn the prompt its model would have got.
type Posted struct {
	Question value.Question `json:"question"`
	Turn     *Turn          `json:"turn,omitempty"`
}

type sharedKey struct{}

type shared struct {
	dir  string
	post Posted
	poll time.Duration
}

// Shared marks ctx so that the terminal (Terminal) asking with it also
// posts the question in the run directory dir, for the view to answer, as
// p has it (the question, and a seat's turn with its prompt; secrets
// taken out, as in every file of the run).
func Shared(ctx context.Context, dir string, p Posted) context.Context {
	return context.WithValue(ctx, sharedKey{}, shared{dir: dir, post: p, poll: 100 * time.Millisecond})
}

func sharedOf(ctx context.Context) (shared, bool) {
	s, ok := ctx.Value(sharedKey{}).(shared)
	return s, ok && s.dir != ""
}

// postedName is the file name of a question's post (its id may hold any
// character).
func postedName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:12])
}

// post is a question posted in the run's asking folder: its file, and
// the file its answer is claimed by.
type post struct {
	question, answer string
}

func newPost(s shared) (*post, error) {
	q := s.post.Question
	dir := filepath.Join(s.dir, AskingDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	name := postedName(q.ID)
	p := &post{question: filepath.Join(dir, name+".json"), answer: filepath.Join(dir, name+".answer")}
	// An answer left from an earlier ask of the same id is not this one's.
	_ = os.Remove(p.answer)
	data, err := json.MarshalIndent(s.post, "", "  ")
	if err != nil {
		return nil, err
	}
	return p, rundir.WriteFile(p.question, append(data, '\n'))
}

// claim makes answer the question's answer unless the other side's came
// first; it returns the answer that won and whether it was this one.
func claim(answerPath, answer string) (string, bool, error) {
	tmp, err := os.CreateTemp(filepath.Dir(answerPath), ".claim-*")
	if err != nil {
		return "", false, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(answer); err != nil {
		_ = tmp.Close()
		return "", false, err
	}
	if err := tmp.Close(); err != nil {
		return "", false, err
	}
	if err := os.Link(tmp.Name(), answerPath); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return "", false, err
		}
		data, rerr := os.ReadFile(answerPath)
		if rerr != nil {
			return "", false, rerr
		}
		return string(data), false, nil
	}
	return answer, true, nil
}

// given reads the other side's answer, if it came.
func (p *post) given() (string, bool) {
	data, err := os.ReadFile(p.answer)
	if err != nil {
		return "", false
	}
	return string(data), true
}

// clear removes the post: the question first, so that the view, which
// checks it after claiming, knows it came too late.
func (p *post) clear() {
	_ = os.Remove(p.question)
	_ = os.Remove(p.answer)
	_ = os.Remove(filepath.Dir(p.question)) // when it is the last
}

// OpenPosted lists the questions terminals ask in the run directory dir
// that nobody has answered yet, by id.
func OpenPosted(dir string) []Posted {
	entries, err := os.ReadDir(filepath.Join(dir, AskingDir))
	if err != nil {
		return nil
	}
	var out []Posted
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		base := filepath.Join(dir, AskingDir, strings.TrimSuffix(name, ".json"))
		if _, err := os.Stat(base + ".answer"); err == nil {
			continue
		}
		data, err := os.ReadFile(base + ".json")
		if err != nil {
			continue
		}
		var p Posted
		if json.Unmarshal(data, &p) == nil && p.Question.ID != "" {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Question.ID < out[j].Question.ID })
	return out
}

// AnswerPosted answers the question id a terminal asks in the run
// directory dir, as the view does; ErrAnswered when the terminal answered
// it first or it is asked no more.
func AnswerPosted(dir, id, answer string) error {
	name := filepath.Join(dir, AskingDir, postedName(id))
	if _, err := os.Stat(name + ".json"); err != nil {
		return ErrAnswered
	}
	_, ours, err := claim(name+".answer", answer)
	if err != nil {
		return err
	}
	if !ours {
		return ErrAnswered
	}
	if _, err := os.Stat(name + ".json"); err != nil {
		// The terminal was done with it before the claim landed.
		_ = os.Remove(name + ".answer")
		return ErrAnswered
	}
	return nil
}

// askShared asks q at the terminal (read) while the view may answer it
// through the post; it tells out which side won when the page did.
func askShared(ctx context.Context, s shared, q value.Question, read func(context.Context) (string, error), tell func(string)) (string, error) {
	if s.post.Question.ID != q.ID {
		return read(ctx)
	}
	p, err := newPost(s)
	if err != nil {
		// The terminal alone asks.
		return read(ctx)
	}
	defer p.clear()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type got struct {
		s   string
		err error
	}
	typed := make(chan got, 1)
	go func() {
		v, err := read(rctx)
		typed <- got{v, err}
	}()
	tick := time.NewTicker(s.poll)
	defer tick.Stop()
	for {
		select {
		case g := <-typed:
			if g.err != nil {
				if ans, ok := p.given(); ok {
					return ans, nil
				}
				return "", g.err
			}
			won, ours, err := claim(p.answer, g.s)
			if err != nil {
				return "", err
			}
			if !ours {
				tell(fmt.Sprintf("answered from the page first (%s); what you typed is dropped", firstLine(won)))
			}
			return won, nil
		case <-tick.C:
			if ans, ok := p.given(); ok {
				cancel()
				tell(fmt.Sprintf("answered from the page: %s", firstLine(ans)))
				return ans, nil
			}
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

func firstLine(s string) string {
	line, _, more := strings.Cut(strings.TrimSpace(s), "\n")
	if len([]rune(line)) > 60 {
		line, more = string([]rune(line)[:60]), true
	}
	if more {
		line += "…"
	}
	return line
}
