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
//
// The two claim the question by renaming its one file, which only one of
// them can do: the terminal to NAME.term, the page to NAME.RAND.won once
// its answer is written beside it as NAME.RAND.answer. The other's rename
// fails because the file is gone, so it knows it lost; a page that comes
// after the terminal is done finds no question to rename. One file and one
// rename leave no moment where both sides can think they won, or where the
// page is told it lost while its answer is used (two files, a claimed
// answer and the question, had such moments: the terminal could take the
// page's answer and clear both between the page's claim and its check).

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
// character): hex digits, which glob patterns read as themselves.
func postedName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:12])
}

// Suffixes of a post's files besides its question (NAME.json).
const (
	termSuffix   = ".term"   // NAME.term: the terminal claimed it
	wonSuffix    = ".won"    // NAME.RAND.won: the page whose answer is NAME.RAND.answer claimed it
	answerSuffix = ".answer" // NAME.RAND.answer: a page's answer
)

// post is a question posted in the run's asking folder: its folder and
// file name.
type post struct {
	dir, name string
}

func (p *post) question() string { return filepath.Join(p.dir, p.name+".json") }

func newPost(s shared) (*post, error) {
	dir := filepath.Join(s.dir, AskingDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := &post{dir: dir, name: postedName(s.post.Question.ID)}
	// What an earlier ask of the same id left is not this one's.
	p.removeClaims()
	data, err := json.MarshalIndent(s.post, "", "  ")
	if err != nil {
		return nil, err
	}
	return p, rundir.WriteFile(p.question(), append(data, '\n'))
}

// claim takes the question for the terminal; false when the page took
// it first.
func (p *post) claim() (bool, error) {
	err := os.Rename(p.question(), filepath.Join(p.dir, p.name+termSuffix))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// given reads the page's answer, if the page claimed the question.
func (p *post) given() (string, bool) {
	won, _ := filepath.Glob(filepath.Join(p.dir, p.name+".*"+wonSuffix))
	if len(won) != 1 {
		return "", false
	}
	data, err := os.ReadFile(strings.TrimSuffix(won[0], wonSuffix) + answerSuffix)
	if err != nil {
		return "", false
	}
	return string(data), true
}

// removeClaims removes the post's files but its question: claims and
// answers.
func (p *post) removeClaims() {
	_ = os.Remove(filepath.Join(p.dir, p.name+termSuffix))
	for _, suffix := range []string{wonSuffix, answerSuffix} {
		m, _ := filepath.Glob(filepath.Join(p.dir, p.name+".*"+suffix))
		for _, f := range m {
			_ = os.Remove(f)
		}
	}
}

// clear removes the post, and its folder when it is the last.
func (p *post) clear() {
	_ = os.Remove(p.question())
	p.removeClaims()
	_ = os.Remove(p.dir)
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
		data, err := os.ReadFile(filepath.Join(dir, AskingDir, name))
		if err != nil {
			continue // claimed since it was listed
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
// it first or it is asked no more. When it returns nil, the terminal's
// asker gets this answer.
func AnswerPosted(dir, id, answer string) error {
	p := &post{dir: filepath.Join(dir, AskingDir), name: postedName(id)}
	if _, err := os.Stat(p.question()); err != nil {
		return ErrAnswered
	}
	f, err := os.CreateTemp(p.dir, p.name+".*"+answerSuffix)
	if errors.Is(err, fs.ErrNotExist) {
		return ErrAnswered // the terminal was done and took the folder away
	}
	if err != nil {
		return err
	}
	ans := f.Name()
	_, werr := f.WriteString(answer)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(ans)
		return werr
	}
	// The answer is whole before the question is claimed, so the terminal
	// that finds the question gone reads all of it.
	err = os.Rename(p.question(), strings.TrimSuffix(ans, answerSuffix)+wonSuffix)
	if err != nil {
		_ = os.Remove(ans)
		if errors.Is(err, fs.ErrNotExist) {
			return ErrAnswered
		}
		return err
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
	// fromPage is the page's answer once the terminal knows the page
	// claimed the question.
	fromPage := func() (string, bool) {
		ans, ok := p.given()
		if ok {
			tell(fmt.Sprintf("answered from the page: %s", firstLine(ans)))
		}
		return ans, ok
	}
	for {
		select {
		case g := <-typed:
			ours, err := p.claim()
			if err != nil {
				return "", err
			}
			if !ours {
				if ans, ok := p.given(); ok {
					if g.err == nil {
						tell(fmt.Sprintf("answered from the page first (%s); what you typed is dropped", firstLine(ans)))
					} else {
						tell(fmt.Sprintf("answered from the page: %s", firstLine(ans)))
					}
					return ans, nil
				}
			}
			return g.s, g.err
		case <-tick.C:
			if _, err := os.Stat(p.question()); errors.Is(err, fs.ErrNotExist) {
				if ans, ok := fromPage(); ok {
					cancel()
					return ans, nil
				}
			}
		case <-ctx.Done():
			// Claimed so that a page coming now is told it is too late;
			// an answer the page gave before is not lost.
			if ours, err := p.claim(); err == nil && !ours {
				if ans, ok := fromPage(); ok {
					return ans, nil
				}
			}
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
