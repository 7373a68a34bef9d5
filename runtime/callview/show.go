package callview

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/debate-runner/runner/internal/exitcode"
)

// Show is runner show: the calls of the run arg names (a run directory,
// or a run id in runsDir), listed, or the call key names (a key or its
// number in the list), as text or JSON on w.
func Show(w io.Writer, arg, runsDir, key string, asJSON bool) error {
	dir := arg
	if _, err := os.Stat(filepath.Join(dir, "run.json")); err != nil {
		alt := filepath.Join(runsDir, arg)
		if _, err := os.Stat(filepath.Join(alt, "run.json")); err == nil {
			dir = alt
		}
	}
	run, err := Read(dir)
	if err != nil {
		if errors.Is(err, ErrNoRun) || errors.Is(err, os.ErrNotExist) {
			return exitcode.Errorf(exitcode.Usage, "%s: not a run directory (no run.json), nor a run id in %s; 'runner runs %s' lists the runs", arg, runsDir, runsDir)
		}
		return err
	}
	// A --replay run did not ask its replayed calls: their requests are
	// the recording's, when it is still where the run found it.
	if rec := run.RecordingDir("."); rec != "" {
		if recorded, err := Read(rec); err == nil {
			run.FillFromRecording(recorded)
		}
	}
	if key == "" {
		if asJSON {
			return writeJSON(w, map[string]any{"run_id": run.ID, "spec": run.Spec, "dir": run.Dir, "calls": run.Summaries()})
		}
		return WriteList(w, run)
	}
	call, err := run.Find(key)
	if err != nil {
		return exitcode.Errorf(exitcode.Usage, "%v", err)
	}
	if asJSON {
		return writeJSON(w, call)
	}
	return Write(w, call)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
