package view

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/debate-runner/runner/runtime/study"
)

// This file serves the studies of a runs folder (runner study): the list's
// entries and a study's page, whose table and chart are drawn from the
// report the study wrote (results.json), the one results.md and
// results.csv were written from, so the page cannot disagree with them.

// StudyInfo is a study as the list shows it.
type StudyInfo struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	Dataset  string    `json:"dataset"`
	Baseline string    `json:"baseline"`
	Created  time.Time `json:"created"`
	Cells    int       `json:"cells"`
	Started  int       `json:"started"`
	Finished bool      `json:"finished"`
}

// listStudies finds the study directories of the root folder.
func (s *Server) listStudies() []StudyInfo {
	entries, err := os.ReadDir(s.root)
	if err != nil {
		return nil
	}
	var out []StudyInfo
	for _, en := range entries {
		if !en.IsDir() || !safeName.MatchString(en.Name()) {
			continue
		}
		st, err := study.ReadState(filepath.Join(s.root, en.Name()))
		if err != nil {
			continue
		}
		si := StudyInfo{ID: en.Name(), Name: st.Name, Dataset: st.Dataset, Baseline: st.Baseline, Created: st.Created, Cells: len(st.Cells), Finished: st.Finished}
		for _, c := range st.Cells {
			if c.Sweep != "" {
				si.Started++
			}
		}
		out = append(out, si)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out
}

// isStudy reports whether a name of the root folder is a study directory.
func (s *Server) isStudy(name string) bool {
	if !safeName.MatchString(name) || strings.Contains(name, "..") {
		return false
	}
	dir, err := s.inside(filepath.Join(s.root, name))
	return err == nil && study.IsStudyDir(dir)
}

// studyTable is the report's table as results.md prints it.
type studyTable struct {
	Header []string   `json:"header"`
	Rows   [][]string `json:"rows"`
}

// studyFiles are the files of a study directory the view serves.
var studyFiles = []string{"results.md", "results.csv", "results.json", "study.json"}

func (s *Server) apiStudy(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if !s.isStudy(id) {
		http.Error(w, id+": no such study", http.StatusNotFound)
		return
	}
	dir := filepath.Join(s.root, id)
	st, err := study.ReadState(dir)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	out := map[string]any{"id": id, "state": st}
	// A cell's sweep is linked by its id in the view: STUDY/SWEEP.
	sweeps := make([]string, len(st.Cells))
	for i, c := range st.Cells {
		if c.Sweep != "" {
			sweeps[i] = id + "/" + c.Sweep
		}
	}
	out["sweep_ids"] = sweeps
	var present []string
	for _, f := range studyFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			present = append(present, f)
		}
	}
	out["files"] = present
	rep, err := study.ReadReport(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		out["report_error"] = err.Error()
	default:
		t := rep.Table()
		out["report"], out["table"], out["chart"] = rep, studyTable{Header: t.Header, Rows: t.Rows}, rep.ChartSVG()
		// Per-round accuracy and flips, and each persona's effect, as
		// results.md prints them.
		if rt := rep.RoundsTable(); len(rt.Rows) > 0 {
			out["rounds_table"] = studyTable{Header: rt.Header, Rows: rt.Rows}
		}
		if pt := rep.PersonasTable(); len(pt.Rows) > 0 {
			out["personas_table"] = studyTable{Header: pt.Header, Rows: pt.Rows}
		}
	}
	writeJSON(w, out)
}

func (s *Server) apiStudyFile(w http.ResponseWriter, r *http.Request) {
	id, name := r.URL.Query().Get("id"), r.URL.Query().Get("name")
	if !s.isStudy(id) || !contains(studyFiles, name) {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	path, err := s.inside(filepath.Join(s.root, id, name))
	if err != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	switch filepath.Ext(name) {
	case ".md", ".csv":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	default:
		w.Header().Set("Content-Type", "application/json")
	}
	http.ServeFile(w, r, path)
}
