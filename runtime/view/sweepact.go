package view

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/debate-runner/runner/runtime"
	"github.com/debate-runner/runner/runtime/executor"
	"github.com/debate-runner/runner/runtime/progress"
	"github.com/debate-runner/runner/runtime/sweep"
	"gopkg.in/yaml.v3"
)

// This file starts sweeps and studies from the page, as runner run
// --dataset/--matrix/--repeat and runner study do: through the same
// executors, into the view's runs folder. A dataset is one of the files
// of the specs folder (or a generated one, gen:...); a study one of the
// study files there: the page names them by their path in the folder,
// and nothing outside it can be named.

// StudyFile is a study file the start page offers.
type StudyFile struct {
	Path        string `json:"path"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

var (
	looksLikeStudy = regexp.MustCompile(`(?m)^specs:`)
	hasDataset     = regexp.MustCompile(`(?m)^dataset:`)
)

// maxMatrixLines is how many --matrix lines the form may give.
const maxMatrixLines = 8

// walkSpecs calls visit with every regular file of the specs folder the
// page may name (walkSpecFolder).
func (s *Server) walkSpecs(visit func(path, rel string)) {
	s.walkSpecFolder(func(path, rel string, d fs.DirEntry) {
		if d.Type().IsRegular() {
			visit(path, rel)
		}
	})
}

// walkSpecFolder calls visit with every entry but folders of the specs
// folder, three levels deep, hidden folders and testdata left out; rel is
// the path relative to the folder, with slashes.
func (s *Server) walkSpecFolder(visit func(path, rel string, d fs.DirEntry)) {
	a := s.act
	if a == nil || a.specs == "" {
		return
	}
	_ = filepath.WalkDir(a.specs, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(a.specs, path)
		if d.IsDir() {
			if path != a.specs && (strings.HasPrefix(d.Name(), ".") || strings.Count(rel, string(filepath.Separator)) >= 3 || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		visit(path, filepath.ToSlash(rel), d)
		return nil
	})
}

// listDatasets lists the dataset files (.jsonl, .csv) of the specs folder.
func (s *Server) listDatasets() []string {
	out := []string{}
	s.walkSpecs(func(_, rel string) {
		if strings.HasSuffix(rel, ".jsonl") || strings.HasSuffix(rel, ".csv") {
			out = append(out, rel)
		}
	})
	sort.Strings(out)
	return out
}

// listStudyFiles lists the study files of the specs folder.
func (s *Server) listStudyFiles() []StudyFile {
	out := []StudyFile{}
	s.walkSpecs(func(path, rel string) {
		if !strings.HasSuffix(rel, ".yaml") && !strings.HasSuffix(rel, ".yml") {
			return
		}
		if st, err := os.Stat(path); err != nil || st.Size() > 1<<20 {
			return
		}
		source, err := os.ReadFile(path)
		if err != nil || looksLikeSpec.Match(source) || !looksLikeStudy.Match(source) || !hasDataset.Match(source) {
			return
		}
		var head struct {
			Name        string `yaml:"name"`
			Description string `yaml:"description"`
		}
		_ = yaml.Unmarshal(source, &head)
		info := StudyFile{Path: rel, Name: head.Name, Description: strings.TrimSpace(head.Description)}
		if info.Name == "" {
			info.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
		}
		out = append(out, info)
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// sweepFlags are the flags of the sweep the form asks for (none: one
// run), the dataset named by its path in the specs folder.
func (s *Server) sweepFlags(req StartRequest) (sweep.Flags, []FieldError) {
	f := sweep.Flags{Repeat: 1, Parallel: 4}
	var problems []FieldError
	if req.Repeat != 0 {
		f.Repeat = req.Repeat
	}
	if req.Parallel != 0 {
		f.Parallel = req.Parallel
	}
	if f.Repeat < 1 || f.Repeat > 1000 {
		problems = append(problems, FieldError{Field: "repeat", Message: "a count from 1 to 1000"})
	}
	if f.Parallel < 1 || f.Parallel > 64 {
		problems = append(problems, FieldError{Field: "parallel", Message: "a count from 1 to 64"})
	}
	for _, line := range strings.Split(req.Matrix, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			f.Matrix = append(f.Matrix, line)
		}
	}
	if len(f.Matrix) > maxMatrixLines {
		problems = append(problems, FieldError{Field: "matrix", Message: fmt.Sprintf("at most %d lines", maxMatrixLines)})
	}
	switch d := strings.TrimSpace(req.Dataset); {
	case d == "":
	case strings.HasPrefix(d, "gen:"):
		f.Dataset = d
	default:
		// Only a file the folder lists: no other path, and nothing
		// fetched from the network (hf:) on a page's word.
		found := false
		for _, rel := range s.listDatasets() {
			if rel == d {
				f.Dataset, found = filepath.Join(s.act.specs, filepath.FromSlash(rel)), true
			}
		}
		if !found {
			problems = append(problems, FieldError{Field: "dataset", Message: fmt.Sprintf("no dataset %q in %s (a .jsonl or .csv file there, or gen:...)", d, s.act.specs)})
		}
	}
	return f, problems
}

// quiet is where a run the view starts tells what it does: nowhere (the
// page follows its files).
var quiet = executor.Out{Tell: progress.Teller{W: io.Discard}, Stdout: io.Discard, Quiet: true}

// StudyRequest names a study file of the specs folder to start (or to go
// on with, when its directory exists).
type StudyRequest struct {
	Path string `json:"path"`
}

func (s *Server) apiStartStudy(w http.ResponseWriter, r *http.Request) {
	var req StudyRequest
	if !decode(w, r, &req) {
		return
	}
	a := s.act
	var file string
	for _, st := range s.listStudyFiles() {
		if st.Path == req.Path {
			file = filepath.Join(a.specs, filepath.FromSlash(st.Path))
		}
	}
	if file == "" {
		writeProblems(w, http.StatusUnprocessableEntity, FieldError{Field: "study", Message: fmt.Sprintf("no study %q in %s", req.Path, a.specs)})
		return
	}
	x, err := executor.Lookup("study")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	l := &executor.Launch{Registry: s.reg,
		Run:   runtime.Options{Settings: runtime.Settings{Getenv: a.Getenv, Version: a.Version}},
		Study: executor.Study{File: file, RunsDir: s.root, NoCache: a.Cache == nil, Format: "md"},
		Out:   quiet}
	if err := executor.Validate("study", x, l); err != nil {
		writeProblems(w, http.StatusUnprocessableEntity, FieldError{Field: "study", Message: err.Error()})
		return
	}
	ctx, cancel := s.runContext()
	h, err := x.Start(ctx, l)
	if err != nil {
		cancel()
		writeProblems(w, http.StatusUnprocessableEntity, FieldError{Field: "study", Message: err.Error()})
		return
	}
	dir := h.Dir()
	if s.going(dir) {
		cancel()
		http.Error(w, filepath.Base(dir)+" is going on in this view already", http.StatusConflict)
		return
	}
	a.mu.Lock()
	a.going[dir] = cancel
	a.mu.Unlock()
	ended := s.finish(ctx, h, cancel, func() string { return dir })
	// The study's page needs its study.json, written as it starts (or
	// the reason it could not start).
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(filepath.Join(dir, "study.json")); err == nil {
			writeJSON(w, map[string]any{"id": filepath.Base(dir), "kind": "study"})
			return
		}
		select {
		case err := <-ended:
			if _, serr := os.Stat(filepath.Join(dir, "study.json")); serr == nil {
				writeJSON(w, map[string]any{"id": filepath.Base(dir), "kind": "study"})
				return
			}
			if err == nil {
				err = errors.New("the study ended before it started")
			}
			writeProblems(w, http.StatusUnprocessableEntity, FieldError{Field: "study", Message: err.Error()})
			return
		case <-tick.C:
		case <-r.Context().Done():
			return
		}
	}
}

// sweepRunning reports whether the sweep in dir, of summary sum, is being
// made: by this view, or elsewhere (a process holds one of its runs not
// yet ended, or its summary, written as each run ends, is under a second
// old while runs are pending: between two runs).
func (s *Server) sweepRunning(dir string, sum *sweepSummary) bool {
	if s.going(dir) {
		return true
	}
	pending := 0
	ended := map[string]bool{}
	for _, r := range sum.Runs {
		if r.Status == sweep.StatusPending {
			pending++
		} else if r.Dir != "" {
			ended[filepath.Base(r.Dir)] = true
		}
	}
	if pending == 0 {
		return false
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() && !ended[e.Name()] && locked(filepath.Join(dir, e.Name(), ".lock")) {
			return true
		}
	}
	st, err := os.Stat(filepath.Join(dir, "summary.json"))
	return err == nil && time.Since(st.ModTime()) < time.Second
}

// sweepField is the field of the start form a sweep flag's error concerns.
func sweepField(flag string) (string, bool) {
	for _, f := range []string{"matrix", "dataset", "repeat", "parallel"} {
		if strings.HasPrefix(flag, "--"+f) {
			return f, true
		}
	}
	return "", false
}

// runContext is the context of a run the view starts: cancelled by
// Cancel, or when the view stops.
func (s *Server) runContext() (context.Context, context.CancelFunc) {
	return context.WithCancel(s.act.ctx)
}

// startSweep starts the sweep l asks for and answers with its id once its
// folder is made, or with the problem that kept it from starting (a
// dataset line or matrix value the spec refuses is found as the sweep is
// planned, before any folder is made).
func (s *Server) startSweep(ctx context.Context, cancel context.CancelFunc, w http.ResponseWriter, x executor.Executor, l *executor.Launch) {
	a := s.act
	started := make(chan string, 1)
	l.Out.Show = func(page string) {
		// The sweep's folder is made: the view makes it from now on.
		dir := filepath.Join(s.root, strings.TrimPrefix(page, "/?q="))
		a.mu.Lock()
		a.going[dir] = cancel
		a.mu.Unlock()
		select {
		case started <- dir:
		default:
		}
	}
	h, err := x.Start(ctx, l)
	if err != nil {
		cancel()
		writeProblems(w, http.StatusUnprocessableEntity, fieldOf(err))
		return
	}
	ended := s.finish(ctx, h, cancel, h.Dir)
	select {
	case dir := <-started:
		writeJSON(w, map[string]any{"id": filepath.Base(dir), "kind": "sweep"})
	case err := <-ended:
		select {
		case dir := <-started:
			// It started, and ended at once.
			writeJSON(w, map[string]any{"id": filepath.Base(dir), "kind": "sweep"})
		default:
			if err == nil {
				err = errors.New("the sweep ended before it started")
			}
			writeProblems(w, http.StatusUnprocessableEntity, fieldOf(err))
		}
	}
}
