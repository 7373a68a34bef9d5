package tools

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/debate-runner/runner/nodes/kit"
)

// Snapshot is what read_file and list_files answer for every path of a
// context directory, taken once: a run made elsewhere (on Temporal workers,
// which do not have the directory) reads the same answers as the machine
// that took it, and a run reads the directory as it was when it started.
// It is plain data (JSON), so it travels with the run.
type Snapshot struct {
	// Answers are by path relative to the directory, cleaned, with "/"
	// separators ("." is the directory itself).
	Answers map[string]Answer `json:"answers"`
}

// Answer is what the file tools say of one path: read_file's text or
// error, and list_files'. Errors quote the path as Answers keys it.
type Answer struct {
	Read    string `json:"read,omitempty"`
	ReadErr string `json:"read_err,omitempty"`
	List    string `json:"list,omitempty"`
	ListErr string `json:"list_err,omitempty"`
	// Leaves is set for a link out of the directory: every path under it
	// leaves it too.
	Leaves bool `json:"leaves,omitempty"`
}

// snapshotDepth bounds how deep a snapshot goes into folders (and into
// links that lead back up).
const snapshotDepth = 32

// TakeSnapshot records what the file tools answer for every path under dir,
// following links that stay inside it, up to limit bytes of answers.
func TakeSnapshot(dir string, limit int64) (*Snapshot, error) {
	s := &Snapshot{Answers: map[string]Answer{}}
	var size int64
	var walk func(p string, depth int, seen map[string]bool) error
	walk = func(p string, depth int, seen map[string]bool) error {
		var a Answer
		text, err := fileTool(Env{Dir: dir}, ReadFile, p)
		a.Read, a.ReadErr = text, errText(err)
		list, err := fileTool(Env{Dir: dir}, ListFiles, p)
		a.List, a.ListErr = list, errText(err)
		a.Leaves = strings.HasSuffix(a.ReadErr, "leaves the context directory")
		size += int64(len(p) + len(a.Read) + len(a.ReadErr) + len(a.List) + len(a.ListErr))
		if size > limit {
			return fmt.Errorf("the context directory %s holds more than %d KiB of files that tools could read: too much to send with the run", dir, limit>>10)
		}
		s.Answers[filepath.ToSlash(p)] = a
		if a.ListErr != "" || depth >= snapshotDepth || list == "(empty folder)" {
			return nil
		}
		real, err := filepath.EvalSymlinks(filepath.Join(dir, p))
		if err != nil || seen[real] {
			return nil // a link back to a folder on the way here
		}
		inner := map[string]bool{real: true}
		for k := range seen {
			inner[k] = true
		}
		for _, line := range strings.Split(list, "\n") {
			name := strings.TrimSuffix(strings.TrimSuffix(line, " (link)"), "/")
			child := name
			if p != "." {
				child = p + "/" + name
			}
			if err := walk(child, depth+1, inner); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(".", 0, map[string]bool{}); err != nil {
		return nil, err
	}
	return s, nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// answer is what tool name says of path p.
func (s *Snapshot) answer(name, p string) (string, error) {
	clean, err := relative(p)
	if err != nil {
		return "", err
	}
	key := filepath.ToSlash(clean)
	a, ok := s.Answers[key]
	if !ok {
		for dir := key; dir != "." && dir != "/"; {
			dir = filepath.ToSlash(filepath.Dir(dir))
			if s.Answers[dir].Leaves {
				return "", fmt.Errorf("%q leaves the context directory", p)
			}
		}
		return "", fmt.Errorf("cannot open %q: no such file or directory", p)
	}
	text, msg := a.Read, a.ReadErr
	if name == ListFiles {
		text, msg = a.List, a.ListErr
	}
	if msg != "" {
		// Said of the path as keyed; the model is told of the path it gave.
		return "", errors.New(strings.ReplaceAll(msg, strconv.Quote(key), strconv.Quote(p)))
	}
	return text, nil
}

// SnapshotHost is a host that gives its runs a snapshot of the context
// directory to read instead of the directory itself.
type SnapshotHost interface {
	ContextSnapshot() *Snapshot
}

// SnapshotOf returns h's snapshot of the context directory, or nil.
func SnapshotOf(h kit.ToolRunner) *Snapshot {
	if sh, ok := h.(SnapshotHost); ok {
		return sh.ContextSnapshot()
	}
	return nil
}
