package view

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/debate-runner/runner/internal/event"
	"github.com/debate-runner/runner/runtime/result"
)

// RunInfo is a run as the list of runs shows it.
type RunInfo struct {
	ID          string    `json:"id"`
	Sweep       string    `json:"sweep,omitempty"`
	Spec        string    `json:"spec"`
	Status      string    `json:"status"`
	Error       string    `json:"error,omitempty"`
	Created     time.Time `json:"created"`
	DurationMS  int64     `json:"duration_ms"`
	Rounds      int       `json:"rounds"`
	Goals       int       `json:"goals"`
	Calls       int       `json:"calls"`
	Tokens      int       `json:"tokens"`
	Cost        float64   `json:"cost"`
	Priced      bool      `json:"priced"`
	FirstOutput string    `json:"first_output,omitempty"`
	Score       *float64  `json:"score,omitempty"`

	// BuiltinPrices is the date of the built-in list prices part of Cost
	// is at (models the spec gave no price).
	BuiltinPrices string `json:"builtin_prices,omitempty"`

	// started and lastEvent time a run without a result (lastEvent zero
	// while it runs: its duration grows).
	started, lastEvent time.Time
}

// SweepInfo is a sweep as the list shows it.
type SweepInfo struct {
	ID                string          `json:"id"`
	Spec              string          `json:"spec"`
	Created           time.Time       `json:"created"`
	Runs              int             `json:"runs"`
	Completed         int             `json:"completed"`
	Inconclusive      int             `json:"inconclusive"`
	Failed            int             `json:"failed"`
	Waiting           int             `json:"waiting"`
	CallsMade         int             `json:"calls_made"`
	CallsWithoutCache int             `json:"calls_without_cache"`
	Accuracy          json.RawMessage `json:"accuracy,omitempty"`
}

// sweepSummary is what the view reads of a sweep's summary.json.
type sweepSummary struct {
	ID                string          `json:"id"`
	Spec              string          `json:"spec"`
	Created           time.Time       `json:"created"`
	Completed         int             `json:"completed"`
	Inconclusive      int             `json:"inconclusive"`
	Failed            int             `json:"failed"`
	Waiting           int             `json:"waiting"`
	CallsMade         int             `json:"calls_made"`
	CallsWithoutCache int             `json:"calls_without_cache"`
	Accuracy          json.RawMessage `json:"accuracy"`
	Runs              []struct {
		Dir    string `json:"dir"`
		Status string `json:"status"`
	} `json:"runs"`
}

// Statuses a run without result.json has.
const (
	StatusRunning    = "running"
	StatusIncomplete = "incomplete"
)

// cachedRun is a run's entry in the list, kept while its files are
// unchanged.
type cachedRun struct {
	stamp string
	info  RunInfo
}

// listRuns finds the runs of the root folder and of its sweep folders.
func (s *Server) listRuns() ([]RunInfo, []SweepInfo, error) {
	entries, err := os.ReadDir(s.root)
	if err != nil {
		return nil, nil, err
	}
	var runs []RunInfo
	var sweeps []SweepInfo
	for _, en := range entries {
		if !en.IsDir() || !safeName.MatchString(en.Name()) {
			continue
		}
		dir := filepath.Join(s.root, en.Name())
		if ri, err := s.runInfo(en.Name(), dir); err == nil {
			runs = append(runs, ri)
			continue
		}
		if sum, err := readSweep(dir); err == nil {
			sweeps = append(sweeps, SweepInfo{ID: en.Name(), Spec: sum.Spec, Created: sum.Created, Runs: len(sum.Runs),
				Completed: sum.Completed, Inconclusive: sum.Inconclusive, Failed: sum.Failed, Waiting: sum.Waiting, CallsMade: sum.CallsMade,
				CallsWithoutCache: sum.CallsWithoutCache, Accuracy: sum.Accuracy})
		}
		inner, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, in := range inner {
			if !in.IsDir() || !safeName.MatchString(in.Name()) {
				continue
			}
			if ri, err := s.runInfo(en.Name()+"/"+in.Name(), filepath.Join(dir, in.Name())); err == nil {
				ri.Sweep = en.Name()
				runs = append(runs, ri)
			}
		}
	}
	sort.SliceStable(runs, func(i, j int) bool {
		if !runs[i].Created.Equal(runs[j].Created) {
			return runs[i].Created.After(runs[j].Created)
		}
		return runs[i].ID > runs[j].ID
	})
	sort.SliceStable(sweeps, func(i, j int) bool { return sweeps[i].Created.After(sweeps[j].Created) })
	return runs, sweeps, nil
}

func readSweep(dir string) (*sweepSummary, error) {
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, err
	}
	var sum sweepSummary
	if err := json.Unmarshal(data, &sum); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "summary.json"), err)
	}
	return &sum, nil
}

// stamp identifies the state of a run's files: a changed one is read again.
func stamp(dir string) string {
	var b strings.Builder
	for _, f := range []string{"run.json", "result.json", "journal.jsonl"} {
		if info, err := os.Stat(filepath.Join(dir, f)); err == nil {
			fmt.Fprintf(&b, "%d.%d;", info.Size(), info.ModTime().UnixNano())
		} else {
			b.WriteString("-;")
		}
	}
	return b.String()
}

// runInfo reads a run's line of the list.
func (s *Server) runInfo(id, dir string) (RunInfo, error) {
	st := stamp(dir)
	s.mu.Lock()
	c, ok := s.cache[id]
	s.mu.Unlock()
	if ok && c.stamp == st && !resumedNow(c.info, dir) {
		info := c.info
		if info.Status == StatusRunning || info.Status == StatusIncomplete {
			info.Status = liveStatus(dir)
		}
		if info.Status == StatusRunning && !info.started.IsZero() {
			info.DurationMS = time.Since(info.started).Milliseconds()
		}
		return info, nil
	}
	m, err := result.ReadManifest(dir)
	if err != nil {
		return RunInfo{}, err
	}
	info := RunInfo{ID: id, Spec: m.SpecName, Created: m.Created, Sweep: m.Sweep}
	res, err := result.Read(dir)
	if err == nil && res.Status != result.StatusCompleted && res.Status != result.StatusInconclusive && heldNow(filepath.Join(dir, ".lock")) {
		// A result a resume is going on from (a waiting run answered, a
		// failed one resumed): the run is running again.
		err = fs.ErrNotExist
	}
	switch {
	case err == nil:
		info.Status, info.Error, info.DurationMS = res.Status, res.Error, res.DurationMS
		if res.Status == result.StatusInconclusive {
			info.Error = res.Conclusion.Short()
		}
		u := res.Usage.Total
		info.Calls, info.Tokens, info.Cost, info.Priced = u.Calls, u.PromptTokens+u.CompletionTokens, u.Cost, u.Priced
		info.BuiltinPrices = u.BuiltinPrices
		info.Score = res.Score
		goals := map[string]bool{}
		for _, msg := range res.Messages {
			info.Rounds = max(info.Rounds, msg.Round)
			if msg.Goal != "" {
				goals[msg.Goal] = true
			}
		}
		info.Goals = len(goals)
		if len(res.OutputOrder) > 0 {
			info.FirstOutput = cell(res.Outputs[res.OutputOrder[0]])
		}
	case errors.Is(err, fs.ErrNotExist):
		info.Status = liveStatus(dir)
		t := tally(dir)
		info.Calls, info.Tokens, info.started = t.calls, t.tokens, t.started
		switch {
		case t.started.IsZero():
		case info.Status == StatusRunning:
			info.DurationMS = time.Since(t.started).Milliseconds()
		default:
			info.DurationMS, info.lastEvent = t.last.Sub(t.started).Milliseconds(), t.last
		}
	default:
		return RunInfo{}, err
	}
	s.mu.Lock()
	s.cache[id] = cachedRun{stamp: st, info: info}
	s.mu.Unlock()
	return info, nil
}

// cell shows an output in a line of the list.
func cell(v any) string {
	s, ok := v.(string)
	if !ok {
		data, _ := json.Marshal(v)
		s = string(data)
	}
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 160 {
		s = string(r[:159]) + "…"
	}
	return s
}

// journalTally is what the list shows of a run without a result: the
// replies it received, their tokens, and when its journal started (the
// run, or its latest resume) and last grew.
type journalTally struct {
	calls, tokens int
	started, last time.Time
}

// tally reads a run's journal for its line of the list, as the run's page
// counts it: the list and the page say the same of a running run.
func tally(dir string) journalTally {
	var t journalTally
	f, err := os.Open(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		return t
	}
	defer f.Close()
	response := `"type":"` + string(event.ModelResponse) + `"`
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev struct {
			Type event.Type `json:"type"`
			Time time.Time  `json:"time"`
			Data struct {
				PromptTokens     int  `json:"prompt_tokens"`
				CompletionTokens int  `json:"completion_tokens"`
				Human            bool `json:"human"`
			} `json:"data"`
		}
		if !strings.Contains(string(line), `"type":"run_`) && !strings.Contains(string(line), response) {
			// Only the time of the last line is needed.
			var only struct {
				Time time.Time `json:"time"`
			}
			if json.Unmarshal(line, &only) == nil && !only.Time.IsZero() {
				t.last = only.Time
			}
			continue
		}
		if json.Unmarshal(line, &ev) != nil {
			continue // a torn last line
		}
		switch ev.Type {
		case event.RunStarted, event.RunResumed:
			t.started = ev.Time
		case event.ModelResponse:
			if ev.Data.Human {
				break // a person's turn at a seat, no model call
			}
			t.calls++
			t.tokens += ev.Data.PromptTokens + ev.Data.CompletionTokens
		}
		if !ev.Time.IsZero() {
			t.last = ev.Time
		}
	}
	return t
}

// liveStatus tells a run that a process is working on (it holds the run
// directory's lock) from one that was killed or stopped.
func liveStatus(dir string) string {
	if locked(filepath.Join(dir, ".lock")) {
		return StatusRunning
	}
	return StatusIncomplete
}

// locked reports whether a process holds the lock on path. On Linux the
// kernel's table of locks says so without taking the lock, which could
// make a `runner resume` starting at that moment fail; elsewhere, a journal
// written to in the last minute counts as running.
func locked(path string) bool {
	info, err := os.Stat(path)
	if err != nil {
		return false
	}
	if ino, ok := inode(info); ok {
		if data, err := os.ReadFile("/proc/locks"); err == nil {
			return holdsInode(string(data), ino)
		}
	}
	j, err := os.Stat(filepath.Join(filepath.Dir(path), "journal.jsonl"))
	return err == nil && time.Since(j.ModTime()) < time.Minute
}

// resumedNow reports whether a run listed with a result that a resume
// can go on from (waiting, failed, stopped) is running again.
func resumedNow(info RunInfo, dir string) bool {
	switch info.Status {
	case result.StatusCompleted, result.StatusInconclusive, StatusRunning, StatusIncomplete:
		return false
	}
	return heldNow(filepath.Join(dir, ".lock"))
}

// heldNow reports whether a process holds the lock on path, where the
// kernel's table of locks says so (Linux); elsewhere false.
func heldNow(path string) bool {
	info, err := os.Stat(path)
	if err != nil {
		return false
	}
	if ino, ok := inode(info); ok {
		if data, err := os.ReadFile("/proc/locks"); err == nil {
			return holdsInode(string(data), ino)
		}
	}
	return false
}

// holdsInode reads /proc/locks ("1: FLOCK ADVISORY WRITE 1234 fd:01:5678 0
// EOF") for a lock on the inode.
func holdsInode(locks string, ino uint64) bool {
	want := ":" + strconv.FormatUint(ino, 10)
	for _, l := range strings.Split(locks, "\n") {
		f := strings.Fields(l)
		for i, x := range f {
			if strings.Contains(x, "->") || i == 0 {
				continue
			}
			if strings.Count(x, ":") == 2 && strings.HasSuffix(x, want) {
				return true
			}
		}
	}
	return false
}
