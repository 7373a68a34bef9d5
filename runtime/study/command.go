package study

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/debate-runner/runner/internal/exitcode"
	"github.com/debate-runner/runner/internal/yamljson"
	"github.com/debate-runner/runner/runtime/progress"
	"github.com/debate-runner/runner/runtime/sweep"
	"github.com/debate-runner/runner/spec"
)

// This file is what runner study (and runner resume STUDY_DIR) does
// around Run: open the study, tell its progress, print its table and say
// what the command exits with.

// Open reads and prepares the study of path, a study file or a study
// directory to continue, and says its directory: dir when given, else the
// directory path names, else the default one in runsDir.
func Open(path, dir, runsDir string, reg *spec.Registry) (*Study, string, error) {
	if IsStudyDir(path) {
		if dir == "" {
			dir = path
		}
		f, err := FileOf(path)
		if err != nil {
			return nil, "", exitcode.With(exitcode.Failure, err)
		}
		path = f
	}
	f, err := Load(path)
	if err != nil {
		var errs yamljson.Errors
		if errors.As(err, &errs) {
			return nil, "", exitcode.With(exitcode.InvalidSpec, err)
		}
		return nil, "", exitcode.Errorf(exitcode.Usage, "%s: %v", path, err)
	}
	st, err := Prepare(f, reg)
	if err != nil {
		return nil, "", exitcode.With(exitcode.InvalidSpec, err)
	}
	if dir == "" {
		dir = DefaultDir(runsDir, f)
	}
	return st, dir, nil
}

// Tell sets opts to tell the study's progress with t: each sweep as it
// starts and each run as it ends.
func Tell(t progress.Teller, opts *Options) {
	opts.OnSweep = func(cell Cell, d, what string) {
		t.Say("study_sweep", map[string]any{"protocol": cell.Label, "model": cell.Model, "dir": d, "what": what},
			fmt.Sprintf("study: %s with %s: %s, %s", cell.Label, modelLabel(cell.Model), what, d))
	}
	opts.OnRun = func(cell Cell, done, total int, r sweep.Run) {
		t.Say("sweep_run", map[string]any{"done": done, "total": total, "run": r},
			fmt.Sprintf("[%s %s %d/%d] %s%s", cell.Label, modelLabel(cell.Model), done, total, r.Status, r.Describe()))
	}
}

func modelLabel(m string) string {
	if m == "" {
		return "the spec's model"
	}
	return m
}

// Done tells a study that ended with rep and err (what Run returned, under
// ctx): its table on w in format (md, csv or json), its directory with t;
// and returns the error the command exits with: a failure (continue the
// study to retry), or exit 8 when runs were inconclusive.
func Done(ctx context.Context, w io.Writer, t progress.Teller, rep *Report, err error, dir, format string) error {
	if rep == nil {
		if err != nil && ctx.Err() != nil {
			return exitcode.With(exitcode.Failure, fmt.Errorf("study interrupted; continue it with: runner study %s", dir))
		}
		return exitcode.With(exitcode.Failure, err)
	}
	switch format {
	case "csv":
		fmt.Fprint(w, rep.CSV())
	case "json":
		data, jerr := json.MarshalIndent(rep, "", "  ")
		if jerr != nil {
			return exitcode.With(exitcode.Failure, jerr)
		}
		fmt.Fprintln(w, string(data))
	default:
		fmt.Fprint(w, rep.Markdown())
	}
	t.Say("study_dir", map[string]string{"dir": dir}, "study: "+dir)
	if err != nil {
		return exitcode.With(exitcode.Failure, fmt.Errorf("%w; continue the study with: runner study %s", err, dir))
	}
	inconclusive := 0
	for _, r := range rep.Rows {
		inconclusive += r.Inconclusive
	}
	if inconclusive > 0 {
		return exitcode.With(exitcode.Inconclusive, fmt.Errorf("%d run(s) of the study inconclusive (finished without reaching their purpose; counted wrong in the accuracy)", inconclusive))
	}
	return nil
}
