package study

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// State is what a study directory says of its study while it runs and
// after: its settings and which sweep each cell has (read by runner view).
type State struct {
	Name     string      `json:"name"`
	Dataset  string      `json:"dataset"`
	Baseline string      `json:"baseline"`
	Created  time.Time   `json:"created"`
	Cells    []CellState `json:"cells"`
	// Finished is set when the study wrote its report (results.json).
	Finished bool `json:"finished"`
}

// CellState is a cell of a study and its sweep ("" before it started).
type CellState struct {
	Label    string `json:"label"`
	Model    string `json:"model,omitempty"`
	Baseline bool   `json:"baseline,omitempty"`
	Sweep    string `json:"sweep,omitempty"`
}

// ReadState reads study.json of a study directory.
func ReadState(dir string) (*State, error) {
	data, err := os.ReadFile(filepath.Join(dir, "study.json"))
	if err != nil {
		return nil, err
	}
	var rec record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "study.json"), err)
	}
	st := &State{Name: rec.Name, Created: rec.Created}
	if rec.Study != nil {
		st.Dataset, st.Baseline = rec.Study.Dataset, rec.Study.Baseline
	}
	for _, c := range rec.Cells {
		st.Cells = append(st.Cells, CellState{Label: c.Label, Model: c.Model, Baseline: c.Baseline, Sweep: c.Sweep})
	}
	_, err = os.Stat(filepath.Join(dir, "results.json"))
	st.Finished = err == nil
	return st, nil
}
